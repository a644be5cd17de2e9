//! Topic attributes as RocketMQ 5 keeps them (`TopicAttributes`, `AttributeParser`,
//! `AttributeUtil`): UPDATE_AND_CREATE_TOPIC carries changes as `+key=value,-key`, the
//! stored map (topics.json, GET_TOPIC_CONFIG) holds plain `key → value`.
//!
//! The keys RocketMQ 5 knows: `message.type` (NORMAL, FIFO, DELAY, TRANSACTION, MIXED,
//! UNSPECIFIED, and PRIORITY since 5.4; changeable) — the type Apache's proxy checks
//! sends against, and PRIORITY the one POP reads highest queues first on —,
//! `queue.type`, `cleanup.policy` (fixed once created) and `reserve.time` (changeable).
//! sluice has neither batch consume queues, compacted topics nor per-topic retention, so
//! those three are accepted at their defaults only and any other value is refused
//! rather than stored and ignored.

use std::collections::BTreeMap;

/// `message.type`.
pub const MESSAGE_TYPE: &str = "message.type";

/// `_SYS_MSG_PRIORITY_` (RocketMQ 5.4 `MessageConst.PROPERTY_PRIORITY`): a priority
/// message's priority, ≥ 0.
pub use message::properties::keys::PRIORITY as PRIORITY_PROPERTY;
/// RocketMQ's `TopicMessageType.parseFromMessageProperty` (owned by the message crate).
pub use message::properties::message_type as message_type_of;

/// What the send path does with a message's priority (RocketMQ 5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriorityRoute {
    /// No priority: the queue stays the client's.
    None,
    /// A priority message: this queue (its priority, clamped to the last write queue).
    Queue(i32),
    /// A priority on another kind of message (FIFO, delay, transaction): dropped.
    Drop,
}

/// Where a message's priority sends it.
#[must_use]
pub fn priority_route(props: &str, write_queue_nums: i32) -> PriorityRoute {
    let Some(priority) = message::properties::get(props, PRIORITY_PROPERTY)
        .and_then(|p| p.parse::<i32>().ok())
        .filter(|p| *p >= 0)
    else {
        return PriorityRoute::None;
    };
    if message_type_of(props) != "PRIORITY" {
        return PriorityRoute::Drop;
    }
    PriorityRoute::Queue(priority.min(write_queue_nums.max(1) - 1))
}

/// One attribute RocketMQ defines.
struct Definition {
    name: &'static str,
    changeable: bool,
    /// The values RocketMQ allows (`None`: a long in `range`).
    values: Option<&'static [&'static str]>,
    /// The range of a long attribute.
    range: (i64, i64),
    /// The values sluice can honour (a subset of `values`; `None`: all of them).
    supported: Option<&'static [&'static str]>,
}

const DEFINITIONS: &[Definition] = &[
    Definition {
        name: "queue.type",
        changeable: false,
        values: Some(&["BatchCQ", "SimpleCQ"]),
        range: (0, 0),
        supported: Some(&["SimpleCQ"]),
    },
    Definition {
        name: "cleanup.policy",
        changeable: false,
        values: Some(&["DELETE", "COMPACTION"]),
        range: (0, 0),
        supported: Some(&["DELETE"]),
    },
    Definition {
        name: MESSAGE_TYPE,
        changeable: true,
        values: Some(&[
            "UNSPECIFIED",
            "NORMAL",
            "FIFO",
            "DELAY",
            "TRANSACTION",
            "PRIORITY",
            "MIXED",
        ]),
        range: (0, 0),
        supported: None,
    },
    Definition {
        name: "reserve.time",
        changeable: true,
        values: None,
        range: (-1, i64::MAX),
        supported: Some(&["-1"]),
    },
];

/// The attributes of a subscription group (RocketMQ 5.4 `SubscriptionGroupAttributes`):
/// `priority.factor`, the percent of a group's pops of a priority topic that read it
/// highest priority first.
const GROUP_DEFINITIONS: &[Definition] = &[Definition {
    name: "priority.factor",
    changeable: true,
    values: None,
    range: (0, 100),
    supported: None,
}];

/// Why an attribute change is refused (RocketMQ's texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttributeError {
    /// `message.type=MIXED` without `enableMixedMessageType` (INVALID_PARAMETER on the wire).
    #[error("MIXED message type is not supported.")]
    Mixed,
    /// Any other (SYSTEM_ERROR on the wire).
    #[error("{0}")]
    Invalid(String),
}

fn err(text: impl Into<String>) -> AttributeError {
    AttributeError::Invalid(text.into())
}

/// One change of an UPDATE_AND_CREATE_TOPIC `attributes` string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    Set(String, String),
    Delete(String),
}

/// Parses `+k1=v1,+k2=v2,-k3` (`AttributeParser.parseToMap`).
fn parse(text: &str) -> Result<Vec<Change>, AttributeError> {
    let mut changes = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for entry in text.split(',') {
        let (key, value) = match entry.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (entry, None),
        };
        if keys.contains(&key) {
            return Err(err(format!("key duplication: {key}")));
        }
        keys.push(key);
        changes.push(match value {
            Some(value) => {
                let name = key
                    .strip_prefix('+')
                    .ok_or_else(|| err(format!("add/alter attribute format is wrong: {key}")))?;
                Change::Set(name.to_owned(), value.to_owned())
            }
            None => {
                let name = key
                    .strip_prefix('-')
                    .ok_or_else(|| err(format!("delete attribute format is wrong: {key}")))?;
                Change::Delete(name.to_owned())
            }
        });
    }
    Ok(changes)
}

/// Applies the header's `attributes` to `current` (`None`: the topic is being created), as
/// `AttributeUtil.alterCurrentAttributes` does; the new map. `mixed_allowed` is
/// `enableMixedMessageType`.
///
/// # Errors
/// RocketMQ's reason, or sluice's for a value it cannot honour.
pub fn alter(
    current: Option<&BTreeMap<String, String>>,
    text: Option<&str>,
    mixed_allowed: bool,
) -> Result<BTreeMap<String, String>, AttributeError> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(current.cloned().unwrap_or_default());
    };
    apply(DEFINITIONS, current, parse(text)?, mixed_allowed)
}

/// A subscription group's attributes after the `+k`/`-k` keyed map an update carries
/// (`SubscriptionGroupManager.updateSubscriptionGroupConfig`), `current` being the
/// stored group's (`None`: it is being created).
///
/// # Errors
/// RocketMQ's reason.
pub fn alter_group(
    current: Option<&BTreeMap<String, String>>,
    requested: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, AttributeError> {
    let mut changes = Vec::with_capacity(requested.len());
    for (key, value) in requested {
        changes.push(if let Some(name) = key.strip_prefix('+') {
            Change::Set(name.to_owned(), value.clone())
        } else if let Some(name) = key.strip_prefix('-') {
            Change::Delete(name.to_owned())
        } else if current.is_some_and(|c| c.get(key) == Some(value)) {
            // A stored attribute sent back as it is (a config copied whole).
            continue;
        } else {
            return Err(err(format!("add/alter attribute format is wrong: {key}")));
        });
    }
    apply(GROUP_DEFINITIONS, current, changes, true)
}

fn apply(
    defs: &'static [Definition],
    current: Option<&BTreeMap<String, String>>,
    changes: Vec<Change>,
    mixed_allowed: bool,
) -> Result<BTreeMap<String, String>, AttributeError> {
    let mut attributes = current.cloned().unwrap_or_default();
    for change in changes {
        match change {
            Change::Set(name, value) => {
                let def = definition(defs, &name)?;
                if current.is_some() && !def.changeable && attributes.get(&name) != Some(&value) {
                    return Err(err(format!(
                        "attempt to update an unchangeable attribute. key: {name}"
                    )));
                }
                check_value(def, &value)?;
                if name == MESSAGE_TYPE && value == "MIXED" && !mixed_allowed {
                    return Err(AttributeError::Mixed);
                }
                attributes.insert(name, value);
            }
            Change::Delete(name) => {
                if current.is_none() {
                    return Err(err(format!(
                        "only add attribute is supported while creating topic. key: {name}"
                    )));
                }
                let def = definition(defs, &name)?;
                if !def.changeable {
                    return Err(err(format!(
                        "attempt to update an unchangeable attribute. key: {name}"
                    )));
                }
                if attributes.remove(&name).is_none() {
                    return Err(err(format!("attempt to delete a nonexistent key: {name}")));
                }
            }
        }
    }
    Ok(attributes)
}

fn definition(
    defs: &'static [Definition],
    name: &str,
) -> Result<&'static Definition, AttributeError> {
    if name.contains(['+', '-']) {
        return Err(err(format!("unsupported key: {name}")));
    }
    defs.iter()
        .find(|d| d.name == name)
        .ok_or_else(|| err(format!("unsupported key: {name}")))
}

fn check_value(def: &Definition, value: &str) -> Result<(), AttributeError> {
    match def.values {
        Some(values) if !values.contains(&value) => {
            return Err(err(format!("value is not in set: [{}]", values.join(", "))));
        }
        Some(_) => {}
        None => {
            let (min, max) = def.range;
            let in_range = value.parse::<i64>().is_ok_and(|v| v >= min && v <= max);
            if !in_range {
                return Err(err(format!("value is not in range({min}, {max})")));
            }
        }
    }
    if let Some(supported) = def.supported {
        if !supported.contains(&value) {
            return Err(err(format!(
                "{}={value} is not supported by sluice (only {})",
                def.name,
                supported.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_types_and_priority_routes_as_rocketmq_5_4() {
        let p = |pairs: &[(&str, &str)]| message::properties::build(pairs.iter().copied());
        assert_eq!(
            message_type_of(&p(&[("TRAN_MSG", "true"), ("DELAY", "3")])),
            "TRANSACTION"
        );
        assert_eq!(
            message_type_of(&p(&[("TIMER_DELAY_SEC", "3"), ("__SHARDINGKEY", "k")])),
            "DELAY"
        );
        assert_eq!(
            message_type_of(&p(&[("__SHARDINGKEY", "k"), (PRIORITY_PROPERTY, "1")])),
            "FIFO"
        );
        assert_eq!(message_type_of(&p(&[(PRIORITY_PROPERTY, "1")])), "PRIORITY");
        assert_eq!(message_type_of(""), "NORMAL");
        assert_eq!(
            priority_route(&p(&[(PRIORITY_PROPERTY, "3")]), 8),
            PriorityRoute::Queue(3)
        );
        assert_eq!(
            priority_route(&p(&[(PRIORITY_PROPERTY, "30")]), 8),
            PriorityRoute::Queue(7)
        );
        assert_eq!(
            priority_route(&p(&[(PRIORITY_PROPERTY, "-1")]), 8),
            PriorityRoute::None
        );
        assert_eq!(
            priority_route(&p(&[(PRIORITY_PROPERTY, "x")]), 8),
            PriorityRoute::None
        );
        assert_eq!(
            priority_route(&p(&[(PRIORITY_PROPERTY, "2"), ("DELAY", "1")]), 8),
            PriorityRoute::Drop
        );
    }

    #[test]
    fn group_attributes_as_rocketmq_5_4() {
        let m = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        let created = alter_group(None, &m(&[("+priority.factor", "50")])).unwrap();
        assert_eq!(created, m(&[("priority.factor", "50")]));
        assert_eq!(
            alter_group(Some(&created), &m(&[("+priority.factor", "101")]))
                .unwrap_err()
                .to_string(),
            "value is not in range(0, 100)"
        );
        assert_eq!(
            alter_group(None, &m(&[("+other", "1")]))
                .unwrap_err()
                .to_string(),
            "unsupported key: other"
        );
        // A stored config sent back whole keeps its attributes; a delete removes one.
        assert_eq!(alter_group(Some(&created), &created).unwrap(), created);
        assert!(
            alter_group(Some(&created), &m(&[("-priority.factor", "")]))
                .unwrap()
                .is_empty()
        );
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn create_update_delete() {
        let created = alter(None, Some("+message.type=FIFO"), false).unwrap();
        assert_eq!(created, map(&[("message.type", "FIFO")]));
        let updated = alter(Some(&created), Some("+message.type=DELAY"), false).unwrap();
        assert_eq!(updated, map(&[("message.type", "DELAY")]));
        let deleted = alter(Some(&updated), Some("-message.type"), false).unwrap();
        assert!(deleted.is_empty());
        // No string: unchanged.
        assert_eq!(alter(Some(&updated), None, false).unwrap(), updated);
    }

    #[test]
    fn refusals_carry_rocketmqs_texts() {
        let cases = [
            (
                None,
                "message.type=FIFO",
                "add/alter attribute format is wrong: message.type",
            ),
            (
                None,
                "message.type",
                "delete attribute format is wrong: message.type",
            ),
            (
                None,
                "-message.type",
                "only add attribute is supported while creating topic. key: message.type",
            ),
            (None, "+color=red", "unsupported key: color"),
            (
                None,
                "+message.type=FIFO,+message.type=NORMAL",
                "key duplication: +message.type",
            ),
            (
                None,
                "+message.type=LOUD",
                "value is not in set: [UNSPECIFIED, NORMAL, FIFO, DELAY, TRANSACTION, PRIORITY, MIXED]",
            ),
            (
                None,
                "+message.type=MIXED",
                "MIXED message type is not supported.",
            ),
            (
                None,
                "+reserve.time=x",
                "value is not in range(-1, 9223372036854775807)",
            ),
            (
                Some(map(&[])),
                "-message.type",
                "attempt to delete a nonexistent key: message.type",
            ),
            (
                Some(map(&[("queue.type", "SimpleCQ")])),
                "+queue.type=BatchCQ",
                "attempt to update an unchangeable attribute. key: queue.type",
            ),
        ];
        for (current, text, want) in cases {
            let got = alter(current.as_ref(), Some(text), false).unwrap_err();
            assert_eq!(got.to_string(), want, "{text}");
        }
        assert!(alter(None, Some("+message.type=MIXED"), true).is_ok());
    }

    #[test]
    fn values_sluice_cannot_honour_are_refused() {
        for text in [
            "+queue.type=BatchCQ",
            "+cleanup.policy=COMPACTION",
            "+reserve.time=24",
        ] {
            let e = alter(None, Some(text), false).unwrap_err();
            assert!(
                e.to_string().contains("is not supported by sluice"),
                "{text}: {e}"
            );
        }
        assert!(alter(None, Some("+queue.type=SimpleCQ,+reserve.time=-1"), false).is_ok());
    }
}
