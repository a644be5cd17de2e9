//! `HaConfig`: the HA keys of RocketMQ's `MessageStoreConfig`, spelled as in
//! broker.conf so an operator's settings carry over. The HA listen port is the
//! broker's (`haListenPort`, default listenPort + 1): the broker binds it and hands
//! the listener to [`HaService::start_master`](crate::HaService::start_master).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::error::ConfigError;
use crate::frame::MAX_TRANSFER_BODY;

/// Default heartbeat period, ms (`haSendHeartbeatInterval`).
pub const DEFAULT_HA_SEND_HEARTBEAT_INTERVAL_MS: u64 = 5_000;
/// Default silence after which a connection is dropped, ms (`haHousekeepingInterval`).
pub const DEFAULT_HA_HOUSEKEEPING_INTERVAL_MS: u64 = 20_000;
/// Default largest transfer frame body, bytes (`haTransferBatchSize`).
pub const DEFAULT_HA_TRANSFER_BATCH_SIZE: usize = 32 * 1024;
/// Default largest lag of the best slave for sync replication, bytes
/// (`haMaxGapNotInSync`, 4.9's `haSlaveFallbehindMax`).
pub const DEFAULT_HA_MAX_GAP_NOT_IN_SYNC: u64 = 256 * 1024 * 1024;
/// Default wait for a slave ack before FLUSH_SLAVE_TIMEOUT, ms (`slaveTimeout`).
pub const DEFAULT_SLAVE_TIMEOUT_MS: u64 = 3_000;
/// RocketMQ ignores a configured `haMasterAddress` shorter than this.
pub const MIN_HA_MASTER_ADDRESS_LEN: usize = 6;

/// HA settings. Keys and defaults are RocketMQ's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HaConfig {
    /// How often an idle side speaks, ms (`haSendHeartbeatInterval`): the master
    /// sends a 12-byte heartbeat frame, the slave re-sends its offset. Default 5000;
    /// must be > 0 and below `haHousekeepingInterval`.
    pub ha_send_heartbeat_interval: u64,
    /// Silence after which either side drops the connection, ms
    /// (`haHousekeepingInterval`). Default 20000.
    pub ha_housekeeping_interval: u64,
    /// Largest body of one transfer frame, bytes (`haTransferBatchSize`). Default
    /// 32768; 1 ..= 4 MiB - 12 (what a Java slave can receive).
    pub ha_transfer_batch_size: usize,
    /// Sync replication answers SLAVE_NOT_AVAILABLE at once when the best slave is at
    /// least this many bytes behind the offset to wait for (`haMaxGapNotInSync`, also
    /// read as 4.9's `haSlaveFallbehindMax`). Default 256 MiB.
    #[serde(alias = "haSlaveFallbehindMax")]
    pub ha_max_gap_not_in_sync: u64,
    /// How long a sync put waits for a slave ack before FLUSH_SLAVE_TIMEOUT, ms
    /// (`slaveTimeout`). Default 3000. RocketMQ 4.9 used `syncFlushTimeout` (5000)
    /// here; a broker wanting that passes it to `wait_for_slave_with_timeout`.
    pub slave_timeout: u64,
    /// The master's HA address `host:port` for a slave (`haMasterAddress`). When set
    /// (at least 6 characters) it wins over the address the name server returns.
    pub ha_master_address: Option<String>,
}

impl Default for HaConfig {
    fn default() -> Self {
        HaConfig {
            ha_send_heartbeat_interval: DEFAULT_HA_SEND_HEARTBEAT_INTERVAL_MS,
            ha_housekeeping_interval: DEFAULT_HA_HOUSEKEEPING_INTERVAL_MS,
            ha_transfer_batch_size: DEFAULT_HA_TRANSFER_BATCH_SIZE,
            ha_max_gap_not_in_sync: DEFAULT_HA_MAX_GAP_NOT_IN_SYNC,
            slave_timeout: DEFAULT_SLAVE_TIMEOUT_MS,
            ha_master_address: None,
        }
    }
}

impl HaConfig {
    /// Checks the settings: rejects impossible values, drops a too-short
    /// `haMasterAddress` with a warning (as RocketMQ ignores it).
    ///
    /// # Errors
    /// A zero interval, a heartbeat not below the housekeeping interval, or a batch
    /// size outside 1 ..= [`MAX_TRANSFER_BODY`].
    pub fn sanitize(&mut self) -> Result<(), ConfigError> {
        if self.ha_send_heartbeat_interval == 0 {
            return Err(invalid("haSendHeartbeatInterval", "must be > 0".into()));
        }
        if self.ha_housekeeping_interval <= self.ha_send_heartbeat_interval {
            return Err(invalid(
                "haHousekeepingInterval",
                format!(
                    "{} ms must exceed haSendHeartbeatInterval ({} ms), or idle connections drop",
                    self.ha_housekeeping_interval, self.ha_send_heartbeat_interval
                ),
            ));
        }
        if self.ha_transfer_batch_size == 0 || self.ha_transfer_batch_size > MAX_TRANSFER_BODY {
            return Err(invalid(
                "haTransferBatchSize",
                format!(
                    "{} is outside 1..={MAX_TRANSFER_BODY}",
                    self.ha_transfer_batch_size
                ),
            ));
        }
        if self.slave_timeout == 0 {
            return Err(invalid("slaveTimeout", "must be > 0".into()));
        }
        if let Some(addr) = &self.ha_master_address {
            if addr.trim().len() < MIN_HA_MASTER_ADDRESS_LEN {
                warn!(
                    ha_master_address = %addr,
                    "ignoring haMasterAddress shorter than 6 characters"
                );
                self.ha_master_address = None;
            }
        }
        Ok(())
    }

    /// `haSendHeartbeatInterval` as a duration.
    #[must_use]
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_millis(self.ha_send_heartbeat_interval)
    }

    /// `haHousekeepingInterval` as a duration.
    #[must_use]
    pub fn housekeeping_interval(&self) -> Duration {
        Duration::from_millis(self.ha_housekeeping_interval)
    }

    /// `slaveTimeout` as a duration.
    #[must_use]
    pub fn slave_timeout(&self) -> Duration {
        Duration::from_millis(self.slave_timeout)
    }
}

fn invalid(key: &'static str, reason: String) -> ConfigError {
    ConfigError::Invalid { key, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn edge() -> impl Strategy<Value = u64> {
        prop_oneof![
            prop::sample::select(vec![
                0,
                1,
                5_000,
                20_000,
                MAX_TRANSFER_BODY as u64,
                u64::MAX
            ]),
            any::<u64>(),
        ]
    }

    proptest! {
        #[test]
        fn sanitize_never_panics_and_leaves_sane_values(
            (heartbeat, housekeeping, batch, gap, timeout) in (edge(), edge(), edge(), edge(), edge()),
            addr in proptest::option::of("\\PC{0,12}"),
        ) {
            let mut c = HaConfig {
                ha_send_heartbeat_interval: heartbeat,
                ha_housekeeping_interval: housekeeping,
                ha_transfer_batch_size: usize::try_from(batch).unwrap_or(usize::MAX),
                ha_max_gap_not_in_sync: gap,
                slave_timeout: timeout,
                ha_master_address: addr,
            };
            if c.sanitize().is_ok() {
                prop_assert!(c.heartbeat_interval() < c.housekeeping_interval());
                prop_assert!((1..=MAX_TRANSFER_BODY).contains(&c.ha_transfer_batch_size));
                prop_assert!(!c.slave_timeout().is_zero());
                prop_assert!(c.ha_master_address.is_none_or(|a| a.trim().len() >= MIN_HA_MASTER_ADDRESS_LEN));
            }
        }
    }

    #[test]
    fn defaults_are_rocketmqs() {
        let mut c = HaConfig::default();
        c.sanitize().unwrap();
        assert_eq!(c.heartbeat_interval(), Duration::from_secs(5));
        assert_eq!(c.housekeeping_interval(), Duration::from_secs(20));
        assert_eq!(c.ha_transfer_batch_size, 32 * 1024);
        assert_eq!(c.ha_max_gap_not_in_sync, 256 * 1024 * 1024);
        assert_eq!(c.slave_timeout(), Duration::from_secs(3));
    }

    #[test]
    fn sanitize_rules() {
        let bad = [
            HaConfig {
                ha_send_heartbeat_interval: 0,
                ..HaConfig::default()
            },
            HaConfig {
                ha_housekeeping_interval: 5_000,
                ..HaConfig::default()
            },
            HaConfig {
                ha_transfer_batch_size: 0,
                ..HaConfig::default()
            },
            HaConfig {
                ha_transfer_batch_size: MAX_TRANSFER_BODY + 1,
                ..HaConfig::default()
            },
            HaConfig {
                slave_timeout: 0,
                ..HaConfig::default()
            },
        ];
        for mut c in bad {
            assert!(c.sanitize().is_err(), "{c:?}");
        }
        let mut short = HaConfig {
            ha_master_address: Some("a:1".into()),
            ..HaConfig::default()
        };
        short.sanitize().unwrap();
        assert_eq!(short.ha_master_address, None);
        let mut ok = HaConfig {
            ha_master_address: Some("10.0.0.1:10912".into()),
            ..HaConfig::default()
        };
        ok.sanitize().unwrap();
        assert_eq!(ok.ha_master_address.as_deref(), Some("10.0.0.1:10912"));
    }
}
