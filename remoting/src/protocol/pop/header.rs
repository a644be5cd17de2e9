//! The custom headers of the POP family (`header/*.java` of RocketMQ 5.3.3), wire names
//! as Java's field names. Required (`@CFNotNull`) fields are plain types, the rest
//! `Option`s; Java writes every primitive field (a `boolean` as `"false"`), so a
//! response built here should fill its `Option`s the same way.
//!
//! The request headers' `RpcRequestHeader` fields (`bname`, `ns`, `nsd`, `oway`, `lo`)
//! are not read: the broker ignores them.

use crate::ext_header;

ext_header! {
    /// POP_MESSAGE (200050) request.
    pub struct PopMessageRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The original topic (never a retry topic).
        topic: String = "topic",
        /// Queue to pop from; any value below 0 means every read queue.
        queue_id: i32 = "queueId",
        /// At most [`MAX_POP_MSG_NUMS`](super::MAX_POP_MSG_NUMS) messages.
        max_msg_nums: i32 = "maxMsgNums",
        /// How long the popped messages stay invisible (ms).
        invisible_time: i64 = "invisibleTime",
        /// Long-polling budget (ms); 0 answers at once.
        poll_time: i64 = "pollTime",
        /// When the client sent the request (epoch ms). `@CFNotNull` in Java, but the
        /// broker fills it with its own clock when absent or `"0"` before decoding.
        born_time: Option<i64> = "bornTime",
        /// Where a new group starts: [`INIT_MODE_MIN`](super::INIT_MODE_MIN) or
        /// [`INIT_MODE_MAX`](super::INIT_MODE_MAX).
        init_mode: i32 = "initMode",
        /// `TAG` or `SQL92`.
        exp_type: Option<String> = "expType",
        /// Subscription expression; empty means `*`.
        exp: Option<String> = "exp",
        /// FIFO pop (Java's default `false`, always sent by Java clients).
        order: Option<bool> = "order",
        /// FIFO: the id of a retried request, which may re-read its own batch.
        attempt_id: Option<String> = "attemptId",
    }
}

ext_header! {
    /// POP_MESSAGE response (also PEEK_MESSAGE's, with only `restNum` meaningful).
    /// Set on POLLING_FULL and POLLING_TIMEOUT answers too.
    pub struct PopMessageResponseHeader {
        /// When the pop started (broker clock, epoch ms).
        pop_time: i64 = "popTime",
        /// Echo of the request's invisible time.
        invisible_time: i64 = "invisibleTime",
        /// Revive queue of this pop's checkpoints; 999 for FIFO.
        revive_qid: i32 = "reviveQid",
        /// Backlog left in the queues scanned.
        rest_num: i64 = "restNum",
        /// See [`PopOffsetInfo`](super::PopOffsetInfo).
        start_offset_info: Option<String> = "startOffsetInfo",
        /// See [`PopOffsetInfo`](super::PopOffsetInfo).
        msg_offset_info: Option<String> = "msgOffsetInfo",
        /// FIFO pops only. See [`PopOffsetInfo`](super::PopOffsetInfo).
        order_count_info: Option<String> = "orderCountInfo",
    }
}

ext_header! {
    /// ACK_MESSAGE (200051) request.
    pub struct AckMessageRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The real topic: the pop retry topic for a retried message
        /// ([`ExtraInfo::real_topic`](super::ExtraInfo::real_topic)).
        topic: String = "topic",
        /// Queue of the real topic.
        queue_id: i32 = "queueId",
        /// The message's [`ExtraInfo`](super::ExtraInfo) (8 fields; 9 from the proxy).
        extra_info: String = "extraInfo",
        /// The message's queue offset.
        offset: i64 = "offset",
    }
}

ext_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME (200053) request.
    pub struct ChangeInvisibleTimeRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The real topic, as for ACK.
        topic: String = "topic",
        /// Queue of the real topic.
        queue_id: i32 = "queueId",
        /// The message's current [`ExtraInfo`](super::ExtraInfo).
        extra_info: String = "extraInfo",
        /// The message's queue offset.
        offset: i64 = "offset",
        /// New invisible duration from now (ms).
        invisible_time: i64 = "invisibleTime",
    }
}

ext_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME response, from which the client builds the new
    /// extraInfo (start offset = the message's offset).
    pub struct ChangeInvisibleTimeResponseHeader {
        /// The new pop time (FIFO: the original one).
        pop_time: i64 = "popTime",
        /// The new invisible time.
        invisible_time: i64 = "invisibleTime",
        /// Revive queue of the new checkpoint.
        revive_qid: i32 = "reviveQid",
    }
}

ext_header! {
    /// PEEK_MESSAGE (200052) request. The response is a
    /// [`PopMessageResponseHeader`] with only `restNum` set.
    pub struct PeekMessageRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// Queue to peek; below 0 means every read queue.
        queue_id: i32 = "queueId",
        /// At most this many messages.
        max_msg_nums: i32 = "maxMsgNums",
        /// The consumer group.
        consumer_group: String = "consumerGroup",
    }
}

ext_header! {
    /// NOTIFICATION (200054) request: "wake me when there is something to pop".
    pub struct NotificationRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic.
        topic: String = "topic",
        /// Queue to watch; below 0 means every read queue.
        queue_id: i32 = "queueId",
        /// Long-polling budget (ms).
        poll_time: i64 = "pollTime",
        /// When the client sent the request; filled by the broker when absent or `"0"`.
        born_time: Option<i64> = "bornTime",
        /// FIFO: blocked queues count as empty.
        order: Option<bool> = "order",
        /// FIFO attempt id.
        attempt_id: Option<String> = "attemptId",
    }
}

ext_header! {
    /// NOTIFICATION response (always code 0).
    pub struct NotificationResponseHeader {
        /// Whether some queue has messages to pop.
        has_msg: bool = "hasMsg",
        /// The request could not be held. A Java `boolean`: Apache always sends it.
        polling_full: Option<bool> = "pollingFull",
    }
}

ext_header! {
    /// POLLING_INFO (200055) request.
    pub struct PollingInfoRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic.
        topic: String = "topic",
        /// The queue (the polling key's queue id; -1 for all-queue pops).
        queue_id: i32 = "queueId",
    }
}

ext_header! {
    /// POLLING_INFO response.
    pub struct PollingInfoResponseHeader {
        /// Pops held for `topic@group@queueId`.
        polling_num: i32 = "pollingNum",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::{CommandHeader, ExtFields};

    fn keys(header: &impl CommandHeader) -> BTreeSet<String> {
        let mut ext = ExtFields::new();
        header.write_to(&mut ext);
        ext.iter().map(|(k, _)| k.to_owned()).collect()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|&n| n.to_owned()).collect()
    }

    /// Every field set: the keys written are exactly the Java field names.
    #[test]
    fn request_wire_names_are_the_java_field_names() {
        let pop = PopMessageRequestHeader {
            consumer_group: "GID".into(),
            topic: "TopicA".into(),
            queue_id: -1,
            max_msg_nums: 32,
            invisible_time: 60_000,
            poll_time: 15_000,
            born_time: Some(1),
            init_mode: 1,
            exp_type: Some("TAG".into()),
            exp: Some("*".into()),
            order: Some(false),
            attempt_id: Some("a".into()),
        };
        assert_eq!(
            keys(&pop),
            set(&[
                "consumerGroup",
                "topic",
                "queueId",
                "maxMsgNums",
                "invisibleTime",
                "pollTime",
                "bornTime",
                "initMode",
                "expType",
                "exp",
                "order",
                "attemptId"
            ])
        );
    }

    #[test]
    fn response_wire_names_are_the_java_field_names() {
        let resp = PopMessageResponseHeader {
            start_offset_info: Some(String::new()),
            msg_offset_info: Some(String::new()),
            order_count_info: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(
            keys(&resp),
            set(&[
                "popTime",
                "invisibleTime",
                "reviveQid",
                "restNum",
                "startOffsetInfo",
                "msgOffsetInfo",
                "orderCountInfo"
            ])
        );
        assert_eq!(
            keys(&AckMessageRequestHeader::default()),
            set(&["consumerGroup", "topic", "queueId", "extraInfo", "offset"])
        );
        assert_eq!(
            keys(&ChangeInvisibleTimeRequestHeader::default()),
            set(&[
                "consumerGroup",
                "topic",
                "queueId",
                "extraInfo",
                "offset",
                "invisibleTime"
            ])
        );
        assert_eq!(
            keys(&ChangeInvisibleTimeResponseHeader::default()),
            set(&["popTime", "invisibleTime", "reviveQid"])
        );
        assert_eq!(
            keys(&PeekMessageRequestHeader::default()),
            set(&["topic", "queueId", "maxMsgNums", "consumerGroup"])
        );
        let notification = NotificationRequestHeader {
            born_time: Some(1),
            order: Some(true),
            attempt_id: Some("a".into()),
            ..Default::default()
        };
        assert_eq!(
            keys(&notification),
            set(&[
                "consumerGroup",
                "topic",
                "queueId",
                "pollTime",
                "bornTime",
                "order",
                "attemptId"
            ])
        );
        let notified = NotificationResponseHeader {
            has_msg: true,
            polling_full: Some(false),
        };
        assert_eq!(keys(&notified), set(&["hasMsg", "pollingFull"]));
        assert_eq!(
            keys(&PollingInfoRequestHeader::default()),
            set(&["consumerGroup", "topic", "queueId"])
        );
        assert_eq!(
            keys(&PollingInfoResponseHeader::default()),
            set(&["pollingNum"])
        );
    }

    /// What a 5.3.3 push consumer sends (`MQClientAPIImpl.popMessageAsync`): `bname`
    /// and `lo` from the base class are ignored, `order` is always there.
    #[test]
    fn reads_a_java_pop_request() {
        let ext: ExtFields = [
            ("consumerGroup", "GID"),
            ("topic", "TopicA"),
            ("queueId", "-1"),
            ("maxMsgNums", "32"),
            ("invisibleTime", "60000"),
            ("pollTime", "15000"),
            ("bornTime", "1700000000000"),
            ("initMode", "1"),
            ("expType", "TAG"),
            ("exp", "*"),
            ("order", "false"),
            ("bname", "broker-a"),
        ]
        .into_iter()
        .collect();
        let h = PopMessageRequestHeader::read_from(&ext).unwrap();
        assert_eq!(h.queue_id, -1);
        assert_eq!(h.born_time, Some(1_700_000_000_000));
        assert_eq!(h.order, Some(false));
        assert_eq!(h.attempt_id, None);
        let mut no_born = ext.clone();
        no_born.remove("bornTime");
        assert_eq!(
            PopMessageRequestHeader::read_from(&no_born)
                .unwrap()
                .born_time,
            None
        );
        let mut no_group = ext;
        no_group.remove("consumerGroup");
        assert!(PopMessageRequestHeader::read_from(&no_group).is_err());
    }
}
