//! Cold-read flow control settings (RocketMQ 5's `ColdDataCgCtrService` tables): the
//! per-group thresholds `mqadmin updateColdDataFlowCtrGroupConfig` sets and
//! `getColdDataFlowCtrInfo` shows.
//!
//! RocketMQ throttles a group's reads from disk only with `coldDataFlowControlEnable`
//! (off by default); sluice has no such throttle and refuses that key at start (see
//! [`crate::config`]). So the thresholds are kept and shown exactly as an Apache broker
//! with the control off keeps and shows them — in memory, as there — and never applied.

use std::collections::BTreeMap;

use parking_lot::RwLock;
use remoting::protocol::body::text_to_properties;
use serde::Serialize;
use tracing::{info, warn};

/// Per-group cold-read thresholds (bytes).
#[derive(Debug, Default)]
pub struct ColdReadThresholds {
    config: RwLock<BTreeMap<String, i64>>,
}

/// GET_COLD_DATA_FLOW_CTR_INFO's body (`ColdDataCgCtrService.getColdDataFlowCtrInfo`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Info<'a> {
    /// Groups being throttled now, with their accumulated cold reads: none here.
    runtime_table: BTreeMap<String, i64>,
    config_table: &'a BTreeMap<String, i64>,
    cg_cold_read_threshold: i64,
    global_cold_read_threshold: i64,
    global_acc: i64,
}

impl ColdReadThresholds {
    /// Sets the groups of a properties text (`group=threshold` lines); an entry whose
    /// threshold is not a number is skipped, as RocketMQ skips it. The entries set.
    pub fn update(&self, text: &str) -> usize {
        let mut set = 0;
        let mut config = self.config.write();
        for (group, value) in text_to_properties(text) {
            match value.trim().parse::<i64>() {
                Ok(threshold) => {
                    config.insert(group, threshold);
                    set += 1;
                }
                Err(_) => warn!(%group, %value, "cold read threshold is not a number; skipped"),
            }
        }
        info!(groups = set, "cold read thresholds updated");
        set
    }

    /// Drops `group`'s threshold.
    pub fn remove(&self, group: &str) {
        self.config.write().remove(group);
    }

    /// The info JSON, with the broker's group and global thresholds.
    ///
    /// # Errors
    /// Serialization failure.
    pub fn info_json(
        &self,
        cg_threshold: i64,
        global_threshold: i64,
    ) -> serde_json::Result<String> {
        let config = self.config.read();
        serde_json::to_string(&Info {
            runtime_table: BTreeMap::new(),
            config_table: &config,
            cg_cold_read_threshold: cg_threshold,
            global_cold_read_threshold: global_threshold,
            global_acc: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_set_shown_and_removed() {
        let t = ColdReadThresholds::default();
        assert_eq!(t.update("g1=1000\ng2=oops\ng3=5\n"), 2);
        let info = t.info_json(3, 100).unwrap();
        assert!(
            info.contains(r#""configTable":{"g1":1000,"g3":5}"#),
            "{info}"
        );
        assert!(info.contains(r#""cgColdReadThreshold":3"#), "{info}");
        t.remove("g1");
        assert!(!t.info_json(3, 100).unwrap().contains("g1"));
    }
}
