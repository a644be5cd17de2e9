//! A name server and a master/slave pair of
//! [`HA_BROKER_NAME`](super::broker::HA_BROKER_NAME): master `a` started and
//! registered first (so the slave learns it at its first registration), the topics created on
//! it, then slave `b`, following and caught up. Which broker is the master changes when a test
//! or a drill switches roles ([`HaPair::promoted`]). And what pair tests check at the end:
//! byte-identical store files ([`compare_store_files`]).
//!
//! ```no_run
//! use integration_tests::harness::HaPair;
//!
//! let pair = HaPair::start("SYNC_MASTER", &[], &[("TopicTest", 4)]);
//! assert!(pair.slave().ha_status().unwrap().connected);
//! ```

use std::fs;
use std::path::Path;
use std::time::Duration;

use super::broker::BrokerProcess;
use super::namesrv::NamesrvProcess;

/// How long a fresh slave may take to follow its master.
pub const FOLLOW_TIMEOUT: Duration = Duration::from_secs(20);

/// A name server and a master/slave pair.
#[derive(Debug)]
pub struct HaPair {
    // Dropped in this order: the brokers, then the name server.
    brokers: [BrokerProcess; 2],
    /// The name server.
    pub ns: NamesrvProcess,
    master: usize,
    /// SYNC_MASTER or ASYNC_MASTER (the pair's and every promoted slave's).
    pub role: String,
}

impl HaPair {
    /// Starts the name server, master `a` (`role`) registered with it, `topics` (name, queues)
    /// on it, and slave `b`, following it within [`FOLLOW_TIMEOUT`]; both brokers get
    /// `settings`.
    ///
    /// # Panics
    /// When a process does not start or the slave does not follow.
    #[must_use]
    pub fn start(role: &str, settings: &[(&str, &str)], topics: &[(&str, u32)]) -> Self {
        let ns = NamesrvProcess::start();
        let a = BrokerProcess::start_master("a", &ns.addr(), role, settings);
        for (topic, queues) in topics {
            a.create_topic(topic, *queues);
        }
        let b = BrokerProcess::start_as("b", &ns.addr(), "SLAVE", 1, settings);
        b.wait_following(&a, FOLLOW_TIMEOUT)
            .unwrap_or_else(|e| panic!("the slave does not follow: {e}"));
        HaPair {
            brokers: [a, b],
            ns,
            master: 0,
            role: role.to_owned(),
        }
    }

    /// The name server's address.
    #[must_use]
    pub fn namesrv(&self) -> String {
        self.ns.addr()
    }

    /// The current master.
    #[must_use]
    pub fn master(&self) -> &BrokerProcess {
        &self.brokers[self.master]
    }

    /// The current slave.
    #[must_use]
    pub fn slave(&self) -> &BrokerProcess {
        &self.brokers[1 - self.master]
    }

    /// The current master, to kill or restart.
    pub fn master_mut(&mut self) -> &mut BrokerProcess {
        &mut self.brokers[self.master]
    }

    /// The current slave, to kill or restart.
    pub fn slave_mut(&mut self) -> &mut BrokerProcess {
        &mut self.brokers[1 - self.master]
    }

    /// Both brokers, `a` first.
    pub fn brokers_mut(&mut self) -> &mut [BrokerProcess; 2] {
        &mut self.brokers
    }

    /// Records that the slave was promoted: it is the master now, the old master the broker to
    /// make its slave.
    pub fn promoted(&mut self) {
        self.master = 1 - self.master;
    }
}

/// Compares two directories of store files (`commitlog/`, `consumequeue/T/0/`) byte for byte:
/// the same file names, each with the same bytes. Returns how many files were compared.
///
/// # Errors
/// The first difference: a file on one side only, or the first differing byte offset.
pub fn compare_store_files(a: &Path, b: &Path) -> Result<usize, String> {
    let names = |dir: &Path| -> Result<Vec<String>, String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        Ok(v)
    };
    let (na, nb) = (names(a)?, names(b)?);
    if na != nb {
        return Err(format!(
            "different files: {} has {na:?}, {} has {nb:?}",
            a.display(),
            b.display()
        ));
    }
    for name in &na {
        let (fa, fb) = (a.join(name), b.join(name));
        let ba = fs::read(&fa).map_err(|e| format!("{}: {e}", fa.display()))?;
        let bb = fs::read(&fb).map_err(|e| format!("{}: {e}", fb.display()))?;
        if ba != bb {
            let at = ba.iter().zip(&bb).position(|(x, y)| x != y);
            return Err(format!(
                "{} and {} differ (sizes {} / {}, first difference at byte {at:?})",
                fa.display(),
                fb.display(),
                ba.len(),
                bb.len()
            ));
        }
    }
    Ok(na.len())
}
