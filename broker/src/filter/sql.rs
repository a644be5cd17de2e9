//! A SQL92 subscription applied to messages (`ExpressionMessageFilter.isMatchedByCommitLog`
//! for SQL92): the selector is evaluated on the properties of the stored record, read
//! in place — the record's PROPERTIES bytes are found from its length fields and
//! scanned once for the names the expression uses, with no map and no copy. `TAGS` is a
//! property like any other. A message whose evaluation RocketMQ would abort with an
//! exception does not match, as in RocketMQ.

use std::borrow::Cow;
use std::sync::Arc;

use filter::Selector;
use message::{properties, record};
use store::MessageFilter;

use super::index::QueueBits;

/// A compiled SQL92 subscription, with the match bits of its queue when its filter is
/// registered.
#[derive(Debug, Clone)]
pub struct SqlFilter {
    selector: Arc<Selector>,
    index: Option<Arc<QueueBits>>,
}

impl SqlFilter {
    /// The filter of a compiled selector.
    #[must_use]
    pub fn new(selector: Arc<Selector>) -> Self {
        SqlFilter {
            selector,
            index: None,
        }
    }

    /// The filter with the match bits dispatch keeps for its queue.
    #[must_use]
    pub fn with_index(selector: Arc<Selector>, index: Option<Arc<QueueBits>>) -> Self {
        SqlFilter { selector, index }
    }

    /// The selector.
    #[must_use]
    pub fn selector(&self) -> &Selector {
        &self.selector
    }

    /// Whether a message with this properties string (`name\x01value\x02...`) matches.
    #[must_use]
    pub fn matches_properties(&self, props: &str) -> bool {
        self.selector.matches_properties(properties::iter(props))
    }

    /// Whether the stored record (a whole CommitLog record) matches. Its properties
    /// are read as RocketMQ reads them: UTF-8, invalid bytes replaced.
    #[must_use]
    pub fn matches_record(&self, rec: &[u8]) -> bool {
        let raw = record::peek_properties(rec).unwrap_or_default();
        let props = match std::str::from_utf8(raw) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(raw),
        };
        self.matches_properties(&props)
    }
}

impl MessageFilter for SqlFilter {
    /// Every unit may match: the properties are in the CommitLog.
    fn matches_consume_queue(&self, _tags_code: Option<i64>) -> bool {
        true
    }

    fn matches_commit_log(&self, rec: &[u8]) -> bool {
        self.matches_record(rec)
    }

    fn indexed(&self, queue_offset: u64) -> Option<bool> {
        self.index.as_ref()?.get(queue_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use message::record::{RecordFields, encode};

    fn record(props: &[u8]) -> Vec<u8> {
        let host = "127.0.0.1:10911".parse().unwrap();
        let f = RecordFields {
            body_crc: 0,
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: host,
            store_timestamp: 0,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: b"body",
            topic: b"T",
            properties: [props, &[], &[]],
        };
        let mut buf = vec![0; f.encoded_len().unwrap()];
        encode(&mut buf, &f);
        buf
    }

    #[test]
    fn evaluates_the_records_properties() {
        let f = SqlFilter::new(Arc::new(
            Selector::parse("a > 5 AND TAGS IN ('TagA', 'TagB')").unwrap(),
        ));
        let props = properties::build([("TAGS", "TagA"), ("a", "7")]);
        assert!(f.matches_record(&record(props.as_bytes())));
        assert!(f.matches_properties(&props));
        let props = properties::build([("TAGS", "TagC"), ("a", "7")]);
        assert!(!f.matches_record(&record(props.as_bytes())));
        // Not a number: RocketMQ's evaluation throws, the message does not match.
        let props = properties::build([("TAGS", "TagA"), ("a", "x")]);
        assert!(!f.matches_record(&record(props.as_bytes())));
        assert!(!f.matches_record(&record(b"")));
        assert!(!f.matches_record(b"not a record"));
        // Invalid UTF-8 is replaced, the rest still reads.
        let mut raw = properties::build([("TAGS", "TagA"), ("a", "9")]).into_bytes();
        raw.extend_from_slice(b"\x02b\x01\xff");
        assert!(f.matches_record(&record(&raw)));
        assert!(f.matches_consume_queue(Some(1)));
    }
}
