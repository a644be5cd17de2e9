//! Output shapes of RocketMQ's tools: Java `toString`s, `UtilAll.frontStringAtLeast`,
//! fastjson's pretty-printed route, and the message view of `queryMsgById`.

use std::fmt::Write as _;
use std::io::Write;

use remoting::protocol::constants::perm;
use remoting::protocol::route::TopicRouteData;
use remoting::protocol::subscription::SubscriptionGroupConfig;
use remoting::protocol::topic::TopicConfig;

use crate::stored::StoredMessage;
use crate::time::human_millis;

/// `UtilAll.frontStringAtLeast`: the first `size` chars (Java pads with the format).
#[must_use]
pub fn front(s: &str, size: usize) -> &str {
    match s.char_indices().nth(size) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Java's `TopicConfig.toString` (4.9.8 shape).
#[must_use]
pub fn topic_config(c: &TopicConfig) -> String {
    format!(
        "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}, topicFilterType={}, topicSysFlag={}, order={}]",
        c.topic_name,
        c.read_queue_nums,
        c.write_queue_nums,
        perm::to_text(c.perm),
        c.topic_filter_type.name(),
        c.topic_sys_flag,
        c.order
    )
}

/// Java's `SubscriptionGroupConfig.toString` (4.9.8 shape).
#[must_use]
pub fn subscription_group(c: &SubscriptionGroupConfig) -> String {
    format!(
        "SubscriptionGroupConfig [groupName={}, consumeEnable={}, consumeFromMinEnable={}, consumeBroadcastEnable={}, retryQueueNums={}, retryMaxTimes={}, brokerId={}, whichBrokerWhenConsumeSlowly={}, notifyConsumerIdsChangedEnable={}]",
        c.group_name,
        c.consume_enable,
        c.consume_from_min_enable,
        c.consume_broadcast_enable,
        c.retry_queue_nums,
        c.retry_max_times,
        c.broker_id,
        c.which_broker_when_consume_slowly,
        c.notify_consumer_ids_changed_enable
    )
}

/// The route as `TopicRouteData.toJson(true)` prints it: fastjson's pretty format, tabs,
/// bare broker-id keys (what `mqadmin topicRoute` shows).
#[must_use]
pub fn route_pretty(route: &TopicRouteData) -> String {
    let mut s = String::new();
    s.push_str("{\n\t\"brokerDatas\":[");
    for (i, b) in route.broker_datas.iter().enumerate() {
        s.push_str(if i == 0 { "\n" } else { ",\n" });
        s.push_str("\t\t{\n\t\t\t\"brokerAddrs\":{");
        for (j, (id, addr)) in b.broker_addrs.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let _ = write!(s, "{id}:{}", json_str(addr));
        }
        s.push_str("\n\t\t\t},\n");
        let _ = writeln!(s, "\t\t\t\"brokerName\":{},", json_str(&b.broker_name));
        let _ = write!(s, "\t\t\t\"cluster\":{}", json_str(&b.cluster));
        let _ = write!(
            s,
            ",\n\t\t\t\"enableActingMaster\":{}",
            b.enable_acting_master
        );
        if let Some(zone) = &b.zone_name {
            let _ = write!(s, ",\n\t\t\t\"zoneName\":{}", json_str(zone));
        }
        s.push_str("\n\t\t}");
    }
    s.push_str(if route.broker_datas.is_empty() {
        "],\n"
    } else {
        "\n\t],\n"
    });
    s.push_str("\t\"filterServerTable\":{");
    for (j, (addr, servers)) in route.filter_server_table.iter().enumerate() {
        if j > 0 {
            s.push(',');
        }
        let list: Vec<String> = servers.iter().map(|v| json_str(v)).collect();
        let _ = write!(s, "{}:[{}]", json_str(addr), list.join(","));
    }
    s.push_str("},\n");
    if let Some(conf) = &route.order_topic_conf {
        let _ = writeln!(s, "\t\"orderTopicConf\":{},", json_str(conf));
    }
    s.push_str("\t\"queueDatas\":[");
    for (i, q) in route.queue_datas.iter().enumerate() {
        s.push_str(if i == 0 { "\n" } else { ",\n" });
        let _ = write!(
            s,
            "\t\t{{\n\t\t\t\"brokerName\":{},\n\t\t\t\"perm\":{},\n\t\t\t\"readQueueNums\":{},\n\t\t\t\"topicSysFlag\":{},\n\t\t\t\"writeQueueNums\":{}\n\t\t}}",
            json_str(&q.broker_name),
            q.perm,
            q.read_queue_nums,
            q.topic_sys_flag,
            q.write_queue_nums
        );
    }
    s.push_str(if route.queue_datas.is_empty() {
        "]\n}"
    } else {
        "\n\t]\n}"
    });
    s
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// `ip:port` as `RemotingHelper.parseSocketAddressAddr` prints it.
#[must_use]
pub fn host(addr: std::net::SocketAddr) -> String {
    addr.to_string()
}

/// The message view of `queryMsgById` / `queryMsgByOffset` (`printMsg`), with the body
/// written to `body_path` (when given) as Java does, and printed when `print_body`.
///
/// # Errors
/// Writing to `out` failed.
pub fn print_message(
    out: &mut dyn Write,
    msg: &StoredMessage,
    body_path: &str,
    print_body: bool,
) -> std::io::Result<()> {
    let line =
        |out: &mut dyn Write, k: &str, v: &dyn std::fmt::Display| writeln!(out, "{k:<20} {v}");
    line(out, "OffsetID:", &msg.offset_msg_id())?;
    line(out, "Topic:", &msg.topic)?;
    line(out, "Tags:", &format!("[{}]", msg.tags().unwrap_or("null")))?;
    line(out, "Keys:", &format!("[{}]", msg.keys().unwrap_or("null")))?;
    line(out, "Queue ID:", &msg.queue_id)?;
    line(out, "Queue Offset:", &msg.queue_offset)?;
    line(out, "CommitLog Offset:", &msg.commit_log_offset)?;
    line(out, "Reconsume Times:", &msg.reconsume_times)?;
    line(out, "Born Timestamp:", &human_millis(msg.born_timestamp))?;
    line(out, "Store Timestamp:", &human_millis(msg.store_timestamp))?;
    line(out, "Born Host:", &host(msg.born_host))?;
    line(out, "Store Host:", &host(msg.store_host))?;
    line(out, "System Flag:", &msg.sys_flag)?;
    line(out, "Properties:", &msg.properties)?;
    line(out, "Message Body Path:", &body_path)?;
    if print_body {
        line(out, "Message Body:", &String::from_utf8_lossy(&msg.body))?;
    }
    Ok(())
}

/// `MessageExt.toString` (4.9.8 shape; the body as its length, not every byte).
#[must_use]
pub fn message_ext(msg: &StoredMessage, broker_name: &str) -> String {
    format!(
        "MessageExt [brokerName={broker_name}, queueId={}, storeSize={}, queueOffset={}, sysFlag={}, bornTimestamp={}, bornHost=/{}, storeTimestamp={}, storeHost=/{}, msgId={}, commitLogOffset={}, bodyCRC={}, reconsumeTimes={}, preparedTransactionOffset={}, toString()=Message{{topic='{}', flag={}, properties={}, body=[{} bytes], transactionId='null'}}]",
        msg.queue_id,
        msg.store_size,
        msg.queue_offset,
        msg.sys_flag,
        msg.born_timestamp,
        msg.born_host,
        msg.store_timestamp,
        msg.store_host,
        msg.msg_id(),
        msg.commit_log_offset,
        msg.body_crc,
        msg.reconsume_times,
        msg.prepared_transaction_offset,
        msg.topic,
        msg.flag,
        msg.properties,
        msg.body.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::protocol::route::{BrokerData, QueueData};

    #[test]
    fn front_cuts_on_chars() {
        assert_eq!(front("abcdef", 3), "abc");
        assert_eq!(front("ab", 3), "ab");
        assert_eq!(front("éé", 1), "é");
    }

    #[test]
    fn topic_config_string() {
        let mut c = TopicConfig::new("T", 4);
        c.perm = 6;
        assert_eq!(
            topic_config(&c),
            "TopicConfig [topicName=T, readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]"
        );
    }

    #[test]
    fn route_like_fastjson_pretty() {
        // The 4.9.8 tool against Apache 4.9.7 printed this (integration-tests/java/README.md),
        // plus 5.x's enableActingMaster line.
        let route = TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                read_queue_nums: 8,
                write_queue_nums: 8,
                perm: 7,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "SluiceCluster".into(),
                broker_name: "broker-a".into(),
                broker_addrs: [(0, "127.0.0.1:20911".into())].into(),
                enable_acting_master: false,
                zone_name: None,
            }],
            filter_server_table: Default::default(),
        };
        assert_eq!(
            route_pretty(&route),
            "{\n\t\"brokerDatas\":[\n\t\t{\n\t\t\t\"brokerAddrs\":{0:\"127.0.0.1:20911\"\n\t\t\t},\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"cluster\":\"SluiceCluster\",\n\t\t\t\"enableActingMaster\":false\n\t\t}\n\t],\n\t\"filterServerTable\":{},\n\t\"queueDatas\":[\n\t\t{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"perm\":7,\n\t\t\t\"readQueueNums\":8,\n\t\t\t\"topicSysFlag\":0,\n\t\t\t\"writeQueueNums\":8\n\t\t}\n\t]\n}"
        );
        let empty = route_pretty(&TopicRouteData::default());
        assert_eq!(
            empty,
            "{\n\t\"brokerDatas\":[],\n\t\"filterServerTable\":{},\n\t\"queueDatas\":[]\n}"
        );
    }

    #[test]
    fn message_view() {
        let msg = crate::stored::test_util::sample();
        let mut out = Vec::new();
        print_message(&mut out, &msg, "/tmp/x", true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("OffsetID:            7F000001000051AF0000000000001000\nTopic:               TopicTest\nTags:                [TagA]\nKeys:                [k1 k2]\n"), "{text}");
        assert!(text.contains("Born Timestamp:      2026-11-29 "), "{text}");
        assert!(text.contains("Message Body:        Hello RocketMQ\n"));
        assert!(message_ext(&msg, "b").contains("msgId=0A000009D0C318B4AAC2740E4F120000"));
    }
}
