//! A POP_MESSAGE response as the proxy reads it (Apache's `MQClientAPIImpl
//! .processPopResponse` + `ConsumerProcessor.popMessage`), and a popped message as the SDKs
//! receive it (`GrpcConverter.buildMessage`).
//!
//! Each popped message gets its receipt handle: its extraInfo (the `POP_CK` property when
//! the broker set one, else built from the response's offset lists) followed by its commit
//! log offset, the 9 fields of Apache's `ReceiptHandle`. The SDK hands the handle back with
//! every ack, change of invisible time and forward to the DLQ; nothing of it is kept here.
//!
//! A message redelivered from a pop retry topic is presented under the topic the consumer
//! asked for (its handle's retry flag says where to ack it), and a FIFO pop's delivery
//! counts come from `orderCountInfo`.

use std::collections::HashMap;

use message::id::OffsetMsgId;
use message::properties::{self, keys};
use message::record::{self, Record};
use remoting::RemotingCommand;
use remoting::protocol::pop::{
    ExtraInfo, POP_CK, PopMessageResponseHeader, RetryFlag, offset_info_key, order_count_key,
    parse_msg_offset_info, parse_order_count_info, parse_start_offset_info,
};

use crate::convert::{self, Shown};
use crate::pb::{self, Code};
use crate::status::Refusal;

/// A receipt handle: the message's extraInfo and its commit log offset
/// (`ReceiptHandle.decode`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    /// The extraInfo (8 fields: the queue offset is required).
    pub extra: ExtraInfo,
    /// The message's queue offset.
    pub offset: i64,
    /// Its commit log offset; -1 when the handle has none (as Apache's).
    pub commit_log_offset: i64,
    /// The handle as the client sent it (the extraInfo of ACK and CHANGE_INVISIBLE).
    pub text: String,
}

impl Handle {
    /// Parses a receipt handle.
    ///
    /// # Errors
    /// INVALID_RECEIPT_HANDLE when it has fewer than 8 fields or one does not parse.
    pub fn parse(text: &str) -> Result<Self, Refusal> {
        let invalid = |why: String| Refusal::new(Code::InvalidReceiptHandle, why);
        let extra = ExtraInfo::parse(text).map_err(|e| invalid(e.to_string()))?;
        let Some(offset) = extra.queue_offset else {
            return Err(invalid(format!(
                "receipt handle '{text}' has no queue offset"
            )));
        };
        let commit_log_offset = match text.split(' ').nth(8) {
            Some(f) => f
                .parse()
                .map_err(|_| invalid(format!("commit log offset '{f}' is not a number")))?,
            None => -1,
        };
        Ok(Handle {
            extra,
            offset,
            commit_log_offset,
            text: text.to_owned(),
        })
    }

    /// The handle of a message of extraInfo `extra` stored at `commit_log_offset`
    /// (`ConsumerProcessor.createHandle`).
    #[must_use]
    pub fn text_of(extra: &ExtraInfo, commit_log_offset: i64) -> String {
        format!("{} {commit_log_offset}", extra.encode())
    }

    /// Whether its invisible time is over (`ReceiptHandle.isExpired`) at `now_ms`.
    #[must_use]
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.extra.next_visible_time() <= now_ms
    }
}

/// One message of a pop response.
#[derive(Debug, Clone)]
pub struct Popped {
    /// Its receipt handle.
    pub handle: String,
    /// The extraInfo in it.
    pub extra: ExtraInfo,
    /// Deliveries before this one (FIFO: from `orderCountInfo`).
    pub reconsume_times: i32,
    /// `UNIQ_KEY`, else the offset message id.
    pub message_id: String,
    /// `TAGS`.
    pub tag: Option<String>,
    /// The message as the SDK receives it.
    pub message: pb::Message,
}

/// The messages of the SUCCESS pop `response` from broker `broker_name`, asked for on
/// `topic` (the topic they are presented under); `order` when it was a FIFO pop; `now_ms`
/// the proxy's clock.
///
/// # Errors
/// INTERNAL_SERVER_ERROR when the header or body does not parse.
pub fn decode(
    response: &RemotingCommand,
    topic: &str,
    broker_name: &str,
    order: bool,
    now_ms: i64,
) -> Result<Vec<Popped>, Refusal> {
    let broken = |why: String| {
        Refusal::new(
            Code::InternalServerError,
            format!("unreadable pop response of {broker_name}: {why}"),
        )
    };
    let h: PopMessageResponseHeader = response
        .decode_header()
        .map_err(|e| broken(e.to_string()))?;
    let starts = parse_start_offset_info(h.start_offset_info.as_deref().unwrap_or(""))
        .map_err(|e| broken(e.to_string()))?;
    let msgs = parse_msg_offset_info(h.msg_offset_info.as_deref().unwrap_or(""))
        .map_err(|e| broken(e.to_string()))?;
    let counts = match h.order_count_info.as_deref() {
        Some(info) if order => parse_order_count_info(info).map_err(|e| broken(e.to_string()))?,
        _ => HashMap::new(),
    };
    let body = response.body.to_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let Ok(Some(Record::Message(m))) = record::decode(&body[at..]) else {
            return Err(broken(format!("body does not decode at {at}")));
        };
        let size = m.total_size as usize;
        let props = m.properties_str();
        let offset = i64::try_from(m.queue_offset).map_err(|e| broken(e.to_string()))?;
        let commit_log_offset =
            i64::try_from(m.physical_offset).map_err(|e| broken(e.to_string()))?;
        let flag = RetryFlag::of_topic(m.topic);
        let extra = match properties::get(&props, POP_CK) {
            Some(ck) => ExtraInfo::parse(ck).map_err(|e| broken(e.to_string()))?,
            None => {
                let key = offset_info_key(flag, m.queue_id);
                if !msgs.get(&key).is_some_and(|o| o.contains(&offset)) {
                    return Err(broken(format!(
                        "offset {offset} not in msgOffsetInfo {key}"
                    )));
                }
                ExtraInfo {
                    ck_queue_offset: *starts
                        .get(&key)
                        .ok_or_else(|| broken(format!("no startOffsetInfo of {key}")))?,
                    pop_time: h.pop_time,
                    invisible_time: h.invisible_time,
                    revive_qid: h.revive_qid,
                    retry: flag,
                    broker_name: broker_name.to_owned(),
                    queue_id: m.queue_id,
                    queue_offset: Some(offset),
                }
            }
        };
        let mut reconsume_times = m.reconsume_times;
        if order {
            let count = counts
                .get(&order_count_key(flag, m.queue_id, offset))
                .or_else(|| counts.get(&offset_info_key(flag, m.queue_id)));
            if let Some(&n) = count.filter(|n| **n > 0) {
                reconsume_times = n;
            }
        }
        let handle = Handle::text_of(&extra, commit_log_offset);
        let message_id = properties::get(&props, keys::UNIQ_KEY)
            .filter(|id| !id.trim().is_empty())
            .map_or_else(
                || {
                    OffsetMsgId {
                        addr: m.store_host,
                        offset: m.physical_offset,
                    }
                    .encode()
                },
                str::to_owned,
            );
        let message = convert::stored_message(
            &m,
            &props,
            convert::body_in(&body, m.body),
            &Shown {
                topic,
                message_id: &message_id,
                receipt: Some((&handle, extra.invisible_time)),
                reconsume_times,
            },
            now_ms,
        );
        out.push(Popped {
            handle,
            extra,
            reconsume_times,
            tag: properties::get(&props, keys::TAGS).map(str::to_owned),
            message_id,
            message,
        });
        at += size;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {

    use bytes::BytesMut;
    use remoting::ResponseCode;

    use super::*;
    use crate::pb::{Encoding, MessageType};

    const NOW: i64 = 1_700_000_100_000;

    fn record(topic: &str, queue_id: i32, offset: u64, props: &str, reconsume: i32) -> Vec<u8> {
        let mut f = crate::test_util::fields(topic, b"hello", props);
        f.queue_id = queue_id;
        f.queue_offset = offset;
        f.physical_offset = 1000 + offset;
        f.reconsume_times = reconsume;
        f.born_host = "10.0.0.7:5555".parse().unwrap();
        crate::test_util::encode(&f)
    }

    fn response(header: &PopMessageResponseHeader, records: &[Vec<u8>]) -> RemotingCommand {
        let mut body = BytesMut::new();
        for r in records {
            body.extend_from_slice(r);
        }
        RemotingCommand::response(ResponseCode::Success.code(), None)
            .with_header(header)
            .with_body(body.freeze())
    }

    fn header(order_count_info: Option<&str>) -> PopMessageResponseHeader {
        PopMessageResponseHeader {
            pop_time: 1_700_000_050_000,
            invisible_time: 30_000,
            revive_qid: 2,
            rest_num: 0,
            start_offset_info: Some("0 3 7;2 0 0".into()),
            msg_offset_info: Some("0 3 7,8;2 0 2".into()),
            order_count_info: order_count_info.map(str::to_owned),
        }
    }

    #[test]
    fn popped_messages_as_the_sdks_receive_them() {
        let props = "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}UNIQ_KEY\u{1}01AB\u{2}idx\u{1}3\u{2}\
                     __BORNHOST\u{1}10.0.0.9:4444\u{2}CLUSTER\u{1}C\u{2}";
        let retry = "%RETRY%G+T";
        let r = response(
            &header(None),
            &[
                record("T", 3, 7, props, 0),
                record("T", 3, 8, "TIMER_DELIVER_MS\u{1}1700000009000\u{2}", 0),
                record(
                    retry,
                    0,
                    2,
                    "UNIQ_KEY\u{1}02\u{2}__SHARDINGKEY\u{1}g\u{2}",
                    1,
                ),
            ],
        );
        let got = decode(&r, "T", "broker-a", false, NOW).unwrap();
        assert_eq!(got.len(), 3);

        let first = &got[0];
        assert_eq!(
            first.handle, "7 1700000050000 30000 2 0 broker-a 3 7 1007",
            "extraInfo from the offset lists, then the commit log offset"
        );
        assert_eq!(
            Handle::parse(&first.handle).unwrap().commit_log_offset,
            1007
        );
        let m = &first.message;
        let s = m.system_properties.as_ref().unwrap();
        assert_eq!(m.topic.as_ref().unwrap().name, "T");
        assert_eq!(m.body.as_ref(), b"hello");
        assert_eq!(
            m.user_properties.get("idx").map(String::as_str),
            Some("3"),
            "user properties kept"
        );
        assert_eq!(
            m.user_properties.len(),
            1,
            "RocketMQ's own are not user properties"
        );
        assert_eq!(s.tag.as_deref(), Some("TagA"));
        assert_eq!(s.keys, ["k1", "k2"]);
        assert_eq!(s.message_id, "01AB");
        assert_eq!(s.born_host, "10.0.0.9:4444");
        assert_eq!(s.born_timestamp.as_ref().unwrap().seconds, 1_700_000_000);
        assert_eq!(s.born_timestamp.as_ref().unwrap().nanos, 123_000_000);
        assert_eq!(s.delivery_attempt, Some(1));
        assert_eq!(s.queue_id, 3);
        assert_eq!(s.queue_offset, Some(7));
        assert_eq!(s.message_type(), MessageType::Normal);
        assert_eq!(s.body_encoding(), Encoding::Identity);
        assert_eq!(s.receipt_handle.as_deref(), Some(first.handle.as_str()));
        assert_eq!(s.invisible_duration.as_ref().unwrap().seconds, 30);
        let digest = s.body_digest.as_ref().unwrap();
        assert_eq!(
            digest.checksum, "AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D",
            "SHA-1 of hello"
        );

        let delay = got[1].message.system_properties.as_ref().unwrap();
        assert_eq!(delay.message_type(), MessageType::Delay);
        assert_eq!(
            delay.delivery_timestamp.as_ref().unwrap().seconds,
            1_700_000_009
        );
        assert_eq!(got[1].handle, "7 1700000050000 30000 2 0 broker-a 3 8 1008");
        // No UNIQ_KEY: the offset message id of the store host and commit log offset.
        assert_eq!(delay.message_id, "7F00000100002A9F00000000000003F0");

        // A retried message: under the topic asked for, its handle naming the retry topic.
        let retried = &got[2];
        assert_eq!(retried.message.topic.as_ref().unwrap().name, "T");
        assert_eq!(retried.extra.retry, RetryFlag::V2);
        assert_eq!(
            retried.handle,
            "0 1700000050000 30000 2 2 broker-a 0 2 1002"
        );
        let s = retried.message.system_properties.as_ref().unwrap();
        assert_eq!(s.delivery_attempt, Some(2));
        assert_eq!(s.message_group.as_deref(), Some("g"));
        assert_eq!(s.message_type(), MessageType::Fifo);
    }

    #[test]
    fn broker_pop_ck_and_fifo_counts() {
        let ck = "5 1700000040000 60000 999 0 broker-b 1 6";
        let props =
            format!("POP_CK\u{1}{ck}\u{2}UNIQ_KEY\u{1}03\u{2}_SYS_MSG_PRIORITY_\u{1}2\u{2}");
        let mut h = header(Some("0 qo1%6 2;0 1 1"));
        h.start_offset_info = Some("0 1 5".into());
        h.msg_offset_info = Some("0 1 6".into());
        let r = response(&h, &[record("T", 1, 6, &props, 0)]);
        let got = decode(&r, "T", "broker-b", true, NOW).unwrap();
        assert_eq!(got[0].handle, format!("{ck} 1006"));
        assert_eq!(
            got[0].reconsume_times, 2,
            "orderCountInfo wins in a FIFO pop"
        );
        assert_eq!(
            got[0]
                .message
                .system_properties
                .as_ref()
                .unwrap()
                .delivery_attempt,
            Some(3)
        );
        let s = got[0].message.system_properties.as_ref().unwrap();
        assert_eq!(
            (s.priority, s.message_type()),
            (Some(2), MessageType::Priority)
        );
        // Not a FIFO pop: the record's count.
        let got = decode(&r, "T", "broker-b", false, NOW).unwrap();
        assert_eq!(got[0].reconsume_times, 0);
    }

    #[test]
    fn unreadable_responses_are_errors() {
        let mut h = header(None);
        h.msg_offset_info = Some("0 3 9".into());
        let r = response(&h, &[record("T", 3, 7, "", 0)]);
        assert_eq!(
            decode(&r, "T", "b", false, NOW).unwrap_err().code,
            Code::InternalServerError
        );
        let mut torn = record("T", 3, 7, "", 0);
        torn.truncate(20);
        let r = response(&header(None), &[torn]);
        assert!(decode(&r, "T", "b", false, NOW).is_err());
    }

    #[test]
    fn handles_parse_as_apaches() {
        let h = Handle::parse("7 1700000050000 30000 2 1 broker-a 0 9 123").unwrap();
        assert_eq!((h.offset, h.commit_log_offset), (9, 123));
        assert_eq!(h.extra.retry, RetryFlag::V1);
        assert!(!h.is_expired(1_700_000_079_999));
        assert!(h.is_expired(1_700_000_080_000));
        let h = Handle::parse("7 1700000050000 30000 2 0 broker-a 0 9").unwrap();
        assert_eq!(h.commit_log_offset, -1);
        for bad in ["", "7 1 2 3 0 b 0", "x 1 2 3 0 b 0 9", "7 1 2 3 0 b 0 9 z"] {
            assert_eq!(
                Handle::parse(bad).unwrap_err().code,
                Code::InvalidReceiptHandle,
                "{bad}"
            );
        }
    }
}
