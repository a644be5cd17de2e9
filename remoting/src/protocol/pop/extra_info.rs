//! extraInfo (`ExtraInfoUtil`): the text that names a popped message, and the three
//! offset lists of a pop response from which a client builds it.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::str::FromStr;

use super::{POP_ORDER_REVIVE_QUEUE, RetryFlag};

/// A popped message's extraInfo: its `POP_CK` property, the `extraInfo` of ACK_MESSAGE
/// and CHANGE_MESSAGE_INVISIBLETIME, and (with a 9th field, the commit log offset) the
/// proxy's receipt handle. Fields joined by single spaces (`MessageConst.KEY_SEPARATOR`):
///
/// | idx | field | meaning |
/// |---|---|---|
/// | 0 | ckQueueOffset | start offset of the checkpoint (first offset of the pop on that queue) |
/// | 1 | popTime | when the pop started (epoch ms) |
/// | 2 | invisibleTime | ms |
/// | 3 | reviveQid | revive queue of the checkpoint; [`POP_ORDER_REVIVE_QUEUE`] for FIFO |
/// | 4 | retry | [`RetryFlag`] of the topic read |
/// | 5 | brokerName | |
/// | 6 | queueId | queue of the topic read (0 for a retry topic) |
/// | 7 | queueOffset | the message's offset in that queue (absent in the 7-field prefix) |
///
/// Worked example: `100 1700000000000 60000 2 0 broker-a 3 103` is offset 103 of
/// queue 3, popped at 1700000000000 for 60 s in a pop whose read of queue 3 started
/// at offset 100, its checkpoint in revive queue 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraInfo {
    /// Start offset of the checkpoint the message belongs to.
    pub ck_queue_offset: i64,
    /// When the pop started (epoch ms).
    pub pop_time: i64,
    /// How long the message stays invisible after `pop_time` (ms).
    pub invisible_time: i64,
    /// Revive queue of the checkpoint ([`POP_ORDER_REVIVE_QUEUE`] for FIFO pops).
    pub revive_qid: i32,
    /// Which topic the message was read from.
    pub retry: RetryFlag,
    /// Broker that served the pop. Never contains a space (broker names are validated).
    pub broker_name: String,
    /// Queue of the topic read.
    pub queue_id: i32,
    /// The message's queue offset; `None` for the 7-field prefix the client extends.
    pub queue_offset: Option<i64>,
}

/// An extraInfo or offset list that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} '{input}': {reason}")]
pub struct InvalidExtraInfo {
    /// Which text: `extraInfo`, `startOffsetInfo`, `msgOffsetInfo`, `orderCountInfo`.
    pub what: &'static str,
    /// The offending text (its first 128 characters).
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl InvalidExtraInfo {
    fn new(what: &'static str, input: &str, reason: impl Into<String>) -> Self {
        InvalidExtraInfo {
            what,
            input: input.chars().take(128).collect(),
            reason: reason.into(),
        }
    }
}

/// `String.split` of Java for a one-character separator: trailing empty pieces are
/// dropped, and a text without the separator is one piece (even when empty).
fn java_split(s: &str, sep: char) -> Vec<&str> {
    if !s.contains(sep) {
        return vec![s];
    }
    let mut pieces: Vec<&str> = s.split(sep).collect();
    while pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    pieces
}

/// Field `name` of extraInfo `s` as a number.
fn number<T: FromStr>(s: &str, name: &str, text: &str) -> Result<T, InvalidExtraInfo> {
    text.parse().map_err(|_| {
        InvalidExtraInfo::new("extraInfo", s, format!("{name} '{text}' is not a number"))
    })
}

impl ExtraInfo {
    /// Fields of the shortest extraInfo (the prefix without the queue offset).
    pub const MIN_FIELDS: usize = 7;

    /// The wire text: 8 fields, or 7 without a queue offset.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(64);
        // Writing into a String cannot fail.
        let _ = write!(
            s,
            "{} {} {} {} {} {} {}",
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry,
            self.broker_name,
            self.queue_id
        );
        if let Some(offset) = self.queue_offset {
            let _ = write!(s, " {offset}");
        }
        s
    }

    /// Parses an extraInfo or receipt handle: at least 7 fields; fields after the 8th
    /// (the proxy's commit log offset) are ignored.
    ///
    /// # Errors
    /// Fewer than 7 fields, a number that does not parse, or an unknown retry flag.
    pub fn parse(s: &str) -> Result<Self, InvalidExtraInfo> {
        const WHAT: &str = "extraInfo";
        let fields = java_split(s, ' ');
        if fields.len() < Self::MIN_FIELDS {
            return Err(InvalidExtraInfo::new(
                WHAT,
                s,
                format!(
                    "{} fields, at least {} needed",
                    fields.len(),
                    Self::MIN_FIELDS
                ),
            ));
        }
        // Checked in field order, so the first bad field is named.
        Ok(ExtraInfo {
            ck_queue_offset: number(s, "ckQueueOffset", fields[0])?,
            pop_time: number(s, "popTime", fields[1])?,
            invisible_time: number(s, "invisibleTime", fields[2])?,
            revive_qid: number(s, "reviveQid", fields[3])?,
            retry: RetryFlag::parse(fields[4]).ok_or_else(|| {
                InvalidExtraInfo::new(WHAT, s, format!("retry flag '{}' is unknown", fields[4]))
            })?,
            broker_name: fields[5].to_owned(),
            queue_id: number(s, "queueId", fields[6])?,
            queue_offset: fields
                .get(7)
                .map(|text| number(s, "queueOffset", text))
                .transpose()?,
        })
    }

    /// Whether the message was popped orderly (FIFO): its revive queue is
    /// [`POP_ORDER_REVIVE_QUEUE`].
    #[must_use]
    pub fn is_order(&self) -> bool {
        self.revive_qid == POP_ORDER_REVIVE_QUEUE
    }

    /// The topic to ack on, for original topic `topic` of `group`
    /// (`ExtraInfoUtil.getRealTopic`).
    #[must_use]
    pub fn real_topic(&self, topic: &str, group: &str) -> String {
        self.retry.real_topic(topic, group)
    }

    /// When the message becomes visible again: `pop_time + invisible_time`
    /// (`ReceiptHandle.nextVisibleTime`).
    #[must_use]
    pub fn next_visible_time(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }
}

impl fmt::Display for ExtraInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

impl FromStr for ExtraInfo {
    type Err = InvalidExtraInfo;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExtraInfo::parse(s)
    }
}

/// The key of a queue in the parsed offset lists: `<flag>@<queueId>`
/// (`ExtraInfoUtil.getStartOffsetInfoMapKey`).
#[must_use]
pub fn offset_info_key(flag: RetryFlag, queue_id: i32) -> String {
    format!("{flag}@{queue_id}")
}

/// The key of one message in a parsed orderCountInfo: `<flag>@qo<queueId>%<queueOffset>`
/// (`ExtraInfoUtil.getQueueOffsetMapKey`).
#[must_use]
pub fn order_count_key(flag: RetryFlag, queue_id: i32, queue_offset: i64) -> String {
    format!("{flag}@qo{queue_id}%{queue_offset}")
}

/// The three offset lists of a [`PopMessageResponseHeader`](super::PopMessageResponseHeader),
/// built queue by queue as a pop reads. Entries are joined by `;`, the parts of an
/// entry by a space:
///
/// | header field | entry |
/// |---|---|
/// | startOffsetInfo | `<flag> <queueId> <startOffset>` |
/// | msgOffsetInfo | `<flag> <queueId> <o1>,<o2>,…` |
/// | orderCountInfo | `<flag> qo<queueId>%<queueOffset> <count>` per message, then `<flag> <queueId> <minCount>` per queue |
///
/// A client finds a message's entry by `<flag>@<queueId>`, so one response holds at most
/// one read of each (flag, queue). Apache sends empty strings when nothing was found;
/// clients read an empty and an absent list alike.
#[derive(Debug, Default, Clone)]
pub struct PopOffsetInfo {
    start: String,
    msg: String,
    order: String,
}

fn next_entry(list: &mut String) -> &mut String {
    if !list.is_empty() {
        list.push(';');
    }
    list
}

impl PopOffsetInfo {
    /// Records that the read of `queue_id` (of the topic `flag` names) started at `start_offset`.
    pub fn add_start(&mut self, flag: RetryFlag, queue_id: i32, start_offset: i64) {
        let _ = write!(
            next_entry(&mut self.start),
            "{flag} {queue_id} {start_offset}"
        );
    }

    /// Records the queue offsets of the messages that read returned.
    pub fn add_msg(&mut self, flag: RetryFlag, queue_id: i32, offsets: &[i64]) {
        let list = next_entry(&mut self.msg);
        let _ = write!(list, "{flag} {queue_id} ");
        for (i, offset) in offsets.iter().enumerate() {
            if i > 0 {
                list.push(',');
            }
            let _ = write!(list, "{offset}");
        }
    }

    /// FIFO: how often the message at `queue_offset` was delivered before.
    pub fn add_order_count(
        &mut self,
        flag: RetryFlag,
        queue_id: i32,
        queue_offset: i64,
        count: i32,
    ) {
        let _ = write!(
            next_entry(&mut self.order),
            "{flag} qo{queue_id}%{queue_offset} {count}"
        );
    }

    /// FIFO: the least delivery count of the queue's batch, for clients that look a
    /// count up by queue only (`buildQueueIdOrderCountInfo`).
    pub fn add_queue_order_count(&mut self, flag: RetryFlag, queue_id: i32, min_count: i32) {
        let _ = write!(next_entry(&mut self.order), "{flag} {queue_id} {min_count}");
    }

    /// `startOffsetInfo`, `None` while empty.
    #[must_use]
    pub fn start_offset_info(&self) -> Option<String> {
        non_empty(&self.start)
    }

    /// `msgOffsetInfo`, `None` while empty.
    #[must_use]
    pub fn msg_offset_info(&self) -> Option<String> {
        non_empty(&self.msg)
    }

    /// `orderCountInfo`, `None` while empty (and for every non-FIFO pop).
    #[must_use]
    pub fn order_count_info(&self) -> Option<String> {
        non_empty(&self.order)
    }

    /// Whether nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.msg.is_empty() && self.order.is_empty()
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// Parses one of the lists into `<first>@<second>` → value, as `ExtraInfoUtil` does:
/// every entry has exactly three parts, no key twice. Empty text is an empty map.
fn parse_list<V>(
    what: &'static str,
    s: &str,
    value: impl Fn(&str) -> Option<V>,
) -> Result<HashMap<String, V>, InvalidExtraInfo> {
    let mut map = HashMap::new();
    if s.is_empty() {
        return Ok(map);
    }
    for entry in java_split(s, ';') {
        let parts = java_split(entry, ' ');
        let [first, second, third] = parts.as_slice() else {
            return Err(InvalidExtraInfo::new(
                what,
                s,
                format!("entry '{entry}' has {} parts, 3 expected", parts.len()),
            ));
        };
        let v = value(third).ok_or_else(|| {
            InvalidExtraInfo::new(
                what,
                s,
                format!("'{third}' of entry '{entry}' is not a number"),
            )
        })?;
        let key = format!("{first}@{second}");
        if map.contains_key(&key) {
            return Err(InvalidExtraInfo::new(
                what,
                s,
                format!("duplicate key {key}"),
            ));
        }
        map.insert(key, v);
    }
    Ok(map)
}

/// Parses `startOffsetInfo` into `<flag>@<queueId>` → start offset.
///
/// # Errors
/// An entry without three parts, a bad number, or a key twice.
pub fn parse_start_offset_info(s: &str) -> Result<HashMap<String, i64>, InvalidExtraInfo> {
    parse_list("startOffsetInfo", s, |v| v.parse().ok())
}

/// Parses `msgOffsetInfo` into `<flag>@<queueId>` → the messages' queue offsets.
///
/// # Errors
/// An entry without three parts, a bad number, or a key twice.
pub fn parse_msg_offset_info(s: &str) -> Result<HashMap<String, Vec<i64>>, InvalidExtraInfo> {
    parse_list("msgOffsetInfo", s, |v| {
        java_split(v, ',')
            .into_iter()
            .map(|o| o.parse().ok())
            .collect()
    })
}

/// Parses `orderCountInfo` into `<flag>@qo<queueId>%<queueOffset>` and `<flag>@<queueId>`
/// → delivery count.
///
/// # Errors
/// An entry without three parts, a bad number, or a key twice.
pub fn parse_order_count_info(s: &str) -> Result<HashMap<String, i32>, InvalidExtraInfo> {
    parse_list("orderCountInfo", s, |v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn example() -> ExtraInfo {
        ExtraInfo {
            ck_queue_offset: 100,
            pop_time: 1_700_000_000_000,
            invisible_time: 60_000,
            revive_qid: 2,
            retry: RetryFlag::Normal,
            broker_name: "broker-a".into(),
            queue_id: 3,
            queue_offset: Some(103),
        }
    }

    #[test]
    fn worked_example_of_the_spec() {
        // Group GID, topic TopicA, queue 3: a pop reads 100, 101, 103 (102 filtered).
        let mut info = PopOffsetInfo::default();
        info.add_start(RetryFlag::Normal, 3, 100);
        info.add_msg(RetryFlag::Normal, 3, &[100, 101, 103]);
        assert_eq!(info.start_offset_info().as_deref(), Some("0 3 100"));
        assert_eq!(info.msg_offset_info().as_deref(), Some("0 3 100,101,103"));
        assert_eq!(info.order_count_info(), None);

        let ck = example();
        assert_eq!(ck.encode(), "100 1700000000000 60000 2 0 broker-a 3 103");
        assert_eq!(ck.real_topic("TopicA", "GID"), "TopicA");
        assert!(!ck.is_order());
        assert_eq!(ck.next_visible_time(), 1_700_000_060_000);

        // The proxy's receipt handle adds the commit log offset; it is ignored.
        let handle = "100 1700000000000 60000 2 0 broker-a 3 103 987654";
        assert_eq!(ExtraInfo::parse(handle), Ok(ck.clone()));
        assert_eq!(handle.parse::<ExtraInfo>(), Ok(ck));

        // Redelivered from the v1 retry topic at retry offset 7: ack on the retry queue.
        let retry = ExtraInfo::parse("7 1700000060000 60000 5 1 broker-a 0 7").unwrap();
        assert_eq!(retry.retry, RetryFlag::V1);
        assert_eq!(retry.real_topic("TopicA", "GID"), "%RETRY%GID_TopicA");
        assert_eq!((retry.queue_id, retry.queue_offset), (0, Some(7)));
    }

    #[test]
    fn seven_field_prefix() {
        let mut e = example();
        e.queue_offset = None;
        assert_eq!(e.encode(), "100 1700000000000 60000 2 0 broker-a 3");
        assert_eq!(ExtraInfo::parse(&e.encode()), Ok(e.clone()));
        // What the client builds after CHANGE_INVISIBLE: prefix + " " + offset.
        let extended = format!("{} 103", e.encode());
        assert_eq!(ExtraInfo::parse(&extended).unwrap().queue_offset, Some(103));
        let order = ExtraInfo::parse("5 1 2 999 0 b 1").unwrap();
        assert!(order.is_order());
    }

    #[test]
    fn bad_extra_info_names_the_problem() {
        let cases = [
            ("", "1 fields"),
            ("100 1 2 3 0 b", "6 fields"),
            ("x 1 2 3 0 b 3", "ckQueueOffset 'x'"),
            ("100 1 2 q 0 b 3", "reviveQid 'q'"),
            ("100 1 2 3 4 b 3", "retry flag '4'"),
            ("100 1 2 3 0 b 3 z", "queueOffset 'z'"),
            ("100  1 2 3 0 b 3", "popTime ''"),
            ("100 1 2 3 0 b 99999999999", "queueId '99999999999'"),
        ];
        for (text, needle) in cases {
            let e = ExtraInfo::parse(text).unwrap_err();
            assert_eq!(e.what, "extraInfo");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
        // Java's split drops trailing empty fields.
        assert!(ExtraInfo::parse("100 1 2 3 0 b 3 ").is_ok());
    }

    #[test]
    fn offset_lists_parse_as_the_client_reads_them() {
        let mut info = PopOffsetInfo::default();
        info.add_start(RetryFlag::V1, 0, 7);
        info.add_msg(RetryFlag::V1, 0, &[7, 8]);
        info.add_start(RetryFlag::Normal, 3, 100);
        info.add_msg(RetryFlag::Normal, 3, &[100]);
        info.add_order_count(RetryFlag::Normal, 3, 100, 2);
        info.add_order_count(RetryFlag::Normal, 3, 101, 1);
        info.add_queue_order_count(RetryFlag::Normal, 3, 0);
        assert_eq!(info.start_offset_info().as_deref(), Some("1 0 7;0 3 100"));
        assert_eq!(info.msg_offset_info().as_deref(), Some("1 0 7,8;0 3 100"));
        assert_eq!(
            info.order_count_info().as_deref(),
            Some("0 qo3%100 2;0 qo3%101 1;0 3 0")
        );

        let start = parse_start_offset_info(&info.start_offset_info().unwrap()).unwrap();
        assert_eq!(start[&offset_info_key(RetryFlag::V1, 0)], 7);
        assert_eq!(start["0@3"], 100);
        let msg = parse_msg_offset_info(&info.msg_offset_info().unwrap()).unwrap();
        assert_eq!(msg["1@0"], vec![7, 8]);
        let order = parse_order_count_info(&info.order_count_info().unwrap()).unwrap();
        assert_eq!(order[&order_count_key(RetryFlag::Normal, 3, 100)], 2);
        assert_eq!(order["0@qo3%101"], 1);
        assert_eq!(order["0@3"], 0);

        assert!(parse_start_offset_info("").unwrap().is_empty());
        assert!(PopOffsetInfo::default().is_empty());
    }

    #[test]
    fn bad_offset_lists_are_refused() {
        for bad in [
            "0 3",
            "0 3 100 1",
            "0 3 x",
            "0 3 100;0 3 101",
            ";0 3 100",
            "0 3 100;;0 4 1",
        ] {
            let e = parse_start_offset_info(bad).unwrap_err();
            assert_eq!(e.what, "startOffsetInfo", "{bad}");
        }
        assert!(parse_start_offset_info("0 3 100;0 4 1;").is_ok());
        for bad in ["0 3 1,,2", "0 3 1,x", "0 3 1 2"] {
            assert!(parse_msg_offset_info(bad).is_err(), "{bad}");
        }
        assert!(parse_order_count_info("0 3 2147483648").is_err());
        let dup = parse_msg_offset_info("0 3 1;0 3 2").unwrap_err();
        assert!(dup.to_string().contains("duplicate key 0@3"), "{dup}");
    }

    const FLAGS: [RetryFlag; 3] = [RetryFlag::Normal, RetryFlag::V1, RetryFlag::V2];

    fn any_flag() -> impl Strategy<Value = RetryFlag> {
        proptest::sample::select(FLAGS.to_vec())
    }

    fn count(offsets: &[i64]) -> i32 {
        i32::try_from(offsets.len()).expect("a few offsets")
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in ".{0,80}", near in "[0-9 ;,qo%@+-]{0,40}") {
            for t in [&text, &near] {
                let _ = ExtraInfo::parse(t);
                let _ = parse_start_offset_info(t);
                let _ = parse_msg_offset_info(t);
                let _ = parse_order_count_info(t);
            }
        }

        #[test]
        fn extra_info_round_trips(
            ck_queue_offset: i64, pop_time: i64, invisible_time: i64, revive_qid: i32,
            retry in any_flag(), broker_name in "[A-Za-z0-9_-]{1,16}", queue_id: i32,
            queue_offset: Option<i64>, commit_log_offset: Option<i64>,
        ) {
            let e = ExtraInfo {
                ck_queue_offset, pop_time, invisible_time, revive_qid, retry, broker_name,
                queue_id, queue_offset,
            };
            let text = e.encode();
            prop_assert_eq!(ExtraInfo::parse(&text), Ok(e.clone()));
            if let (Some(_), Some(clo)) = (queue_offset, commit_log_offset) {
                prop_assert_eq!(ExtraInfo::parse(&format!("{text} {clo}")), Ok(e));
            }
        }

        #[test]
        fn offset_lists_round_trip(
            reads in proptest::collection::btree_map(
                (0usize..3, 0i32..64),
                (any::<i64>(), proptest::collection::vec(any::<i64>(), 1..5)),
                0..6,
            ),
        ) {
            let flag = |f: usize| FLAGS[f];
            let mut info = PopOffsetInfo::default();
            for (&(f, q), (start, offsets)) in &reads {
                info.add_start(flag(f), q, *start);
                info.add_msg(flag(f), q, offsets);
                info.add_queue_order_count(flag(f), q, count(offsets));
            }
            let start = parse_start_offset_info(&info.start_offset_info().unwrap_or_default()).unwrap();
            let msg = parse_msg_offset_info(&info.msg_offset_info().unwrap_or_default()).unwrap();
            let order = parse_order_count_info(&info.order_count_info().unwrap_or_default()).unwrap();
            prop_assert_eq!(start.len(), reads.len());
            for (&(f, q), (s, offsets)) in &reads {
                let key = offset_info_key(flag(f), q);
                prop_assert_eq!(start[&key], *s);
                prop_assert_eq!(&msg[&key], offsets);
                prop_assert_eq!(order[&key], count(offsets));
            }
        }
    }
}
