//! Test and bench helpers: the in-memory CommitLog ([`mem_log`]), fast HA settings, masters
//! and slaves on loopback. The polling wait and the tiny executor are `test_support`'s.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test
#![allow(dead_code)] // each test binary uses a subset

mod mem_log;

pub use mem_log::MemLog;

use bytes::{Bytes, BytesMut};
use ha::{GrowthWait, HaConfig, HaLog, HaService, LogError};
use parking_lot::Mutex;

/// Deterministic pseudo-random numbers (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn record(&mut self, min: usize, max: usize) -> Vec<u8> {
        let len = min + self.below((max - min + 1) as u64) as usize;
        let seed = self.next();
        (0..len)
            .map(|i| (seed.wrapping_add(i as u64 * 0x9E37)) as u8)
            .collect()
    }
}

/// HA settings with short intervals.
pub fn fast_config() -> HaConfig {
    HaConfig {
        ha_send_heartbeat_interval: 100,
        ha_housekeeping_interval: 3_000,
        slave_timeout: 2_000,
        ..HaConfig::default()
    }
}

/// A master on an ephemeral loopback port.
pub fn start_master(log: &MemLog, config: HaConfig) -> HaService {
    let listener = ha::listen("127.0.0.1:0".parse().unwrap(), 1024).unwrap();
    HaService::start_master(config, log.dyn_log(), listener).unwrap()
}

/// A slave following `master`.
pub fn start_slave(log: &MemLog, config: HaConfig, master: &HaService) -> HaService {
    let addr = master.listen_addr().unwrap().to_string();
    HaService::start_slave(config, log.dyn_log(), Some(addr)).unwrap()
}

/// Logs to the test output when `RUST_LOG` is set.
pub fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}
