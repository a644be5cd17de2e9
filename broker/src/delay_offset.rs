//! The delay offsets (delayOffset.json): per delay level, the next queue offset of
//! SCHEDULE_TOPIC_XXXX the schedule service delivers. A table of the broker's state like
//! the consumer offsets: the schedule service advances it on a master, admin reads it
//! (GET_ALL_DELAY_OFFSET) and a slave replaces it with its master's.

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::Mutex;
use remoting::config_file::ConfigFileError;
use remoting::protocol::subscription::DelayOffsetSerializeWrapper;
use tracing::error;

use crate::persist;

/// Delay level → next queue offset to deliver.
#[derive(Debug)]
pub struct DelayOffsets {
    table: Mutex<BTreeMap<i32, i64>>,
    path: PathBuf,
}

impl DelayOffsets {
    /// Loads delayOffset.json (or its `.bak`) from `path`; empty when there is none.
    ///
    /// # Errors
    /// The file exists but neither it nor its `.bak` parses.
    pub fn load(path: PathBuf) -> Result<Self, ConfigFileError> {
        let table = persist::load::<DelayOffsetSerializeWrapper>(&path)?
            .map(|w| w.offset_table)
            .unwrap_or_default();
        Ok(DelayOffsets {
            table: Mutex::new(table),
            path,
        })
    }

    /// The table now.
    #[must_use]
    pub fn table(&self) -> BTreeMap<i32, i64> {
        self.table.lock().clone()
    }

    /// Moves the levels to `table` (the schedule service, once delivered copies are
    /// durable).
    pub fn set(&self, table: BTreeMap<i32, i64>) {
        *self.table.lock() = table;
    }

    /// The wire/file form.
    #[must_use]
    pub fn wrapper(&self) -> DelayOffsetSerializeWrapper {
        DelayOffsetSerializeWrapper {
            offset_table: self.table(),
            data_version: None,
        }
    }

    /// Writes delayOffset.json.
    pub fn persist(&self) {
        if let Err(e) = persist::save(&self.path, &self.wrapper()) {
            error!(error = %e, "cannot persist delayOffset.json");
        }
    }

    /// Replaces the table with the master's (slaves) and persists it.
    pub fn replace_from_master(&self, master: &DelayOffsetSerializeWrapper) {
        self.set(master.offset_table.clone());
        self.persist();
    }
}
