//! Consumer groups' settings (`SubscriptionGroupManager`): auto-creation on first use,
//! admin updates, subscriptionGroup.json.

use std::path::PathBuf;

use parking_lot::RwLock;
use remoting::config_file::ConfigFileError;
use remoting::protocol::subscription::{SubscriptionGroupConfig, SubscriptionGroupWrapper};
use remoting::protocol::topic::DataVersion;
use tracing::{error, info};

use crate::clock::now_ms;
use crate::persist;

pub use remoting::protocol::constants::system::{SYSTEM_GROUPS, is_system_group};

/// The subscription group table of one broker.
#[derive(Debug)]
pub struct SubscriptionGroupManager {
    table: RwLock<SubscriptionGroupWrapper>,
    path: PathBuf,
    auto_create: bool,
}

impl SubscriptionGroupManager {
    /// System groups, then whatever subscriptionGroup.json (or its `.bak`) holds.
    ///
    /// # Errors
    /// The file exists but neither it nor its `.bak` parses.
    pub fn load(path: PathBuf, auto_create: bool) -> Result<Self, ConfigFileError> {
        let mut wrapper = SubscriptionGroupWrapper {
            data_version: DataVersion::new(now_ms()),
            ..SubscriptionGroupWrapper::default()
        };
        for g in SYSTEM_GROUPS {
            wrapper
                .subscription_group_table
                .insert((*g).to_owned(), SubscriptionGroupConfig::new(*g));
        }
        if let Some(stored) = persist::load::<SubscriptionGroupWrapper>(&path)? {
            info!(file = %path.display(), groups = stored.subscription_group_table.len(), "loaded subscription groups");
            wrapper
                .subscription_group_table
                .extend(stored.subscription_group_table);
            wrapper.forbidden_table = stored.forbidden_table;
            wrapper.data_version = stored.data_version;
        }
        Ok(SubscriptionGroupManager {
            table: RwLock::new(wrapper),
            path,
            auto_create,
        })
    }

    /// The config of `group`, created with defaults when missing and auto-creation is on
    /// (or the group is a system group). `None` when unknown and not creatable.
    pub fn find_or_create(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        if let Some(found) = self.table.read().subscription_group_table.get(group) {
            return Some(found.clone());
        }
        if !self.auto_create && !is_system_group(group) {
            return None;
        }
        let mut table = self.table.write();
        let config = table
            .subscription_group_table
            .entry(group.to_owned())
            .or_insert_with(|| {
                info!(group, "auto-created subscription group");
                SubscriptionGroupConfig::new(group)
            })
            .clone();
        table.data_version.next_version(now_ms());
        self.persist_locked(&table);
        Some(config)
    }

    /// The config of `group`, if it exists.
    #[must_use]
    pub fn find(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.table
            .read()
            .subscription_group_table
            .get(group)
            .cloned()
    }

    /// Whether `group` is in the table (no auto-creation).
    #[must_use]
    pub fn contains(&self, group: &str) -> bool {
        self.table
            .read()
            .subscription_group_table
            .contains_key(group)
    }

    /// Creates or replaces a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
    ///
    /// # Errors
    /// The table could not be persisted (the change is kept in memory).
    pub fn update(&self, config: SubscriptionGroupConfig) -> Result<(), ConfigFileError> {
        let mut table = self.table.write();
        info!(group = %config.group_name, "subscription group updated");
        table
            .subscription_group_table
            .insert(config.group_name.clone(), config);
        table.data_version.next_version(now_ms());
        persist::save(&self.path, &*table)
    }

    /// Deletes a group. Returns whether it existed.
    ///
    /// # Errors
    /// The table could not be persisted (the change is kept in memory).
    pub fn delete(&self, group: &str) -> Result<bool, ConfigFileError> {
        let mut table = self.table.write();
        if table.subscription_group_table.remove(group).is_none() {
            return Ok(false);
        }
        info!(group, "subscription group deleted");
        table.data_version.next_version(now_ms());
        persist::save(&self.path, &*table).map(|()| true)
    }

    /// The names of the groups, sorted.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.table
            .read()
            .subscription_group_table
            .keys()
            .cloned()
            .collect()
    }

    /// A copy of the table (slave sync, admin).
    #[must_use]
    pub fn wrapper(&self) -> SubscriptionGroupWrapper {
        self.table.read().clone()
    }

    /// Replaces the table with the master's (slaves).
    pub fn replace_from_master(&self, master: SubscriptionGroupWrapper) {
        let mut table = self.table.write();
        if table.data_version == master.data_version {
            return;
        }
        *table = master;
        self.persist_locked(&table);
    }

    fn persist_locked(&self, table: &SubscriptionGroupWrapper) {
        if let Err(e) = persist::save(&self.path, table) {
            error!(error = %e, "cannot persist subscriptionGroup.json");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_create_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/subscriptionGroup.json");
        let m = SubscriptionGroupManager::load(path.clone(), true).unwrap();
        assert!(m.find("TOOLS_CONSUMER").is_some());
        assert_eq!(m.find_or_create("cg1").unwrap().retry_max_times, 16);
        let mut custom = SubscriptionGroupConfig::new("cg2");
        custom.retry_max_times = 3;
        custom.consume_enable = false;
        m.update(custom).unwrap();
        let reloaded = SubscriptionGroupManager::load(path.clone(), false).unwrap();
        assert!(reloaded.find("cg1").is_some());
        assert_eq!(reloaded.find("cg2").unwrap().retry_max_times, 3);
        assert!(reloaded.find_or_create("unknown").is_none());
        assert!(reloaded.find_or_create("CID_RMQ_SYS_x").is_some());
        assert!(reloaded.delete("cg2").unwrap());
        assert!(!reloaded.delete("cg2").unwrap());
    }
}
