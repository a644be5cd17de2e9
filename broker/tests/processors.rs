//! The broker in process, over real sockets with our own remoting client: the send and
//! pull paths, the response codes RocketMQ gives for bad input, long polling, offsets,
//! send-back to retry and DLQ, delay delivery, and the admin codes tools use.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::time::{Duration, Instant};

use message::id::OffsetMsgId;
use message::record::{self, Record};
use remoting::protocol::broker::{
    ConsumerSendMsgBackRequestHeader, GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader,
    PullMessageRequestHeader, PullMessageResponseHeader, QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader, SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use remoting::protocol::constants::pull_sys_flag;
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use support::{Running, T};

impl Running {
    fn pull_request(
        topic: &str,
        queue_id: i32,
        offset: i64,
        suspend_ms: Option<i64>,
        sub: &str,
    ) -> RemotingCommand {
        let mut flag = pull_sys_flag::SUBSCRIPTION;
        if suspend_ms.is_some() {
            flag |= pull_sys_flag::SUSPEND;
        }
        let header = PullMessageRequestHeader {
            consumer_group: "cg".into(),
            topic: topic.into(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: flag,
            commit_offset: 0,
            suspend_timeout_millis: suspend_ms.unwrap_or(0),
            subscription: Some(sub.into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            ..PullMessageRequestHeader::default()
        };
        RemotingCommand::request_with(RequestCode::PullMessage, &header)
    }

    /// A pull; the four response header fields must be there on 0/19/20/21.
    async fn pull(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        sub: &str,
    ) -> (RemotingCommand, PullMessageResponseHeader) {
        let resp = self
            .call(Self::pull_request(topic, queue_id, offset, None, sub))
            .await;
        let header = if [0, 19, 20, 21].contains(&resp.code()) {
            resp.decode_header::<PullMessageResponseHeader>().unwrap()
        } else {
            PullMessageResponseHeader::default()
        };
        (resp, header)
    }
}

fn messages(body: &[u8]) -> Vec<(String, Vec<u8>, String, i32)> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let Ok(Some(Record::Message(m))) = record::decode(rest) else {
            panic!("bad pull body")
        };
        out.push((
            m.topic.to_owned(),
            m.body.to_vec(),
            m.properties_str().into_owned(),
            m.reconsume_times,
        ));
        rest = &rest[m.total_size as usize..];
    }
    out
}

#[tokio::test]
async fn send_then_pull_with_tag_filter_and_status_codes() {
    let b = Running::start(|_, _| {}).await;
    for i in 0..4 {
        let tag = if i % 2 == 0 { "A" } else { "B" };
        let r = b
            .send(
                "T1",
                0,
                format!("m{i}").as_bytes(),
                &format!("TAGS\u{1}{tag}\u{2}KEYS\u{1}k{i}"),
            )
            .await;
        assert_eq!(r.code(), 0, "{:?}", r.remark());
        let h: SendMessageResponseHeader = r.decode_header().unwrap();
        assert_eq!(h.queue_offset, i);
        assert_eq!(r.ext("MSG_REGION"), Some("DefaultRegion"));
        assert_eq!(r.ext("TRACE_ON"), Some("true"));
    }
    b.dispatched("T1", 0, 4).await;
    let (resp, h) = b.pull("T1", 0, 0, "*").await;
    assert_eq!(resp.code(), 0);
    assert_eq!((h.next_begin_offset, h.min_offset, h.max_offset), (4, 0, 4));
    let all = messages(&resp.body.to_bytes());
    assert_eq!(all.len(), 4);
    assert!(
        all[0].2.contains("CLUSTER\u{1}DefaultCluster"),
        "{:?}",
        all[0].2
    );
    // Only tag A: the broker filters by tag hash, nextBeginOffset covers every unit scanned.
    let (resp, h) = b.pull("T1", 0, 0, "A").await;
    assert_eq!(
        messages(&resp.body.to_bytes())
            .iter()
            .map(|m| m.1.clone())
            .collect::<Vec<_>>(),
        vec![b"m0".to_vec(), b"m2".to_vec()]
    );
    assert_eq!(h.next_begin_offset, 4);
    // Nothing matched in what was scanned → 20; at the end → 19; past it → 21.
    let (resp, h) = b.pull("T1", 0, 3, "A").await;
    assert_eq!(
        (resp.code(), h.next_begin_offset),
        (ResponseCode::PullRetryImmediately.code(), 4)
    );
    let (resp, h) = b.pull("T1", 0, 4, "*").await;
    assert_eq!(
        (resp.code(), h.next_begin_offset),
        (ResponseCode::PullNotFound.code(), 4)
    );
    let (resp, h) = b.pull("T1", 0, 9, "*").await;
    assert_eq!(
        (resp.code(), h.next_begin_offset),
        (ResponseCode::PullOffsetMoved.code(), 4)
    );
    // An empty queue of a known topic: 19 at offset 0, 21 elsewhere.
    let (resp, _) = b.pull("T1", 1, 0, "*").await;
    assert_eq!(resp.code(), ResponseCode::PullNotFound.code());
    let (resp, _) = b.pull("T1", 1, 5, "*").await;
    assert_eq!(resp.code(), ResponseCode::PullOffsetMoved.code());
    b.stop().await;
}

/// The VIP channel (RocketMQ's fast remoting server) answers as the main port does; a
/// RocketMQ 5 slave's GET_ALL_MESSAGE_REQUEST_MODE gets the (empty) pop-mode table.
#[tokio::test]
async fn vip_channel_serves_the_same_requests() {
    let b = Running::start_with_vip_channel(|_, _| {}).await;
    let vip = b.vip_addr.clone().unwrap();
    let topics = b
        .client
        .invoke(
            &vip,
            RemotingCommand::request(RequestCode::GetAllTopicConfig),
            T,
        )
        .await
        .unwrap();
    assert_eq!(topics.code(), 0, "{:?}", topics.header.remark);
    assert!(String::from_utf8_lossy(&topics.body.to_bytes()).contains("TBW102"));
    let modes = b
        .client
        .invoke(
            &vip,
            RemotingCommand::request(RequestCode::GetAllMessageRequestMode),
            T,
        )
        .await
        .unwrap();
    assert_eq!(modes.code(), 0);
    let body: serde_json::Value = serde_json::from_slice(&modes.body.to_bytes()).unwrap();
    assert_eq!(body, serde_json::json!({"messageRequestModeMap": {}}));
    b.stop().await;
    // Both ports are closed once the broker stops.
    assert!(tokio::net::TcpStream::connect(&vip).await.is_err());
}

#[tokio::test]
async fn bad_input_gets_rocketmq_codes() {
    let b = Running::start(|_, _| {}).await;
    let big = vec![b'x'; 4 * 1024 * 1024 + 1];
    let r = b.send("T1", 0, &big, "").await;
    assert_eq!(
        r.code(),
        ResponseCode::MessageIllegal.code(),
        "{:?}",
        r.remark()
    );
    let r = b.send("bad topic", 0, b"x", "").await;
    assert_eq!(r.code(), ResponseCode::SystemError.code());
    assert!(
        r.remark().unwrap().contains("illegal characters"),
        "{:?}",
        r.remark()
    );
    let r = b.send("SCHEDULE_TOPIC_XXXX", 0, b"x", "").await;
    assert_eq!(r.code(), ResponseCode::NoPermission.code());
    b.send("T1", 0, b"x", "").await;
    let r = b.send("T1", 99, b"x", "").await;
    assert_eq!(r.code(), ResponseCode::SystemError.code());
    assert!(
        r.remark().unwrap().contains("queueId[99] is illegal"),
        "{:?}",
        r.remark()
    );
    // Pulls: unknown topic, queue out of range.
    let (r, _) = b.pull("NoSuchTopic", 0, 0, "*").await;
    assert_eq!(r.code(), ResponseCode::TopicNotExist.code());
    let (r, _) = b.pull("T1", 77, 0, "*").await;
    assert_eq!(r.code(), ResponseCode::SystemError.code());
    // A pull without subscription from a group that never sent a heartbeat.
    let mut req = Running::pull_request("T1", 0, 0, None, "*");
    req.header.ext_fields.insert("sysFlag", "0");
    assert_eq!(
        b.call(req).await.code(),
        ResponseCode::SubscriptionNotExist.code()
    );
    // A header missing a required field: SYSTEM_ERROR, connection kept.
    let r = b
        .call(RemotingCommand::request(RequestCode::PullMessage))
        .await;
    assert_eq!(r.code(), ResponseCode::SystemError.code());
    assert_eq!(b.send("T1", 0, b"still here", "").await.code(), 0);
    b.stop().await;
}

#[tokio::test]
async fn long_poll_is_answered_when_a_message_arrives() {
    let b = Running::start(|_, _| {}).await;
    b.send("T2", 0, b"first", "").await;
    let waiter = {
        let client = b.client.clone();
        let addr = b.addr.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let r = client
                .invoke(
                    &addr,
                    Running::pull_request("T2", 0, 1, Some(10_000), "*"),
                    Duration::from_secs(15),
                )
                .await
                .unwrap();
            (r, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "the pull must be held");
    b.send("T2", 0, b"second", "").await;
    let (r, waited) = waiter.await.unwrap();
    assert_eq!(r.code(), 0);
    assert_eq!(messages(&r.body.to_bytes())[0].1, b"second");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    // A held pull with nothing arriving is answered 19 at its timeout.
    let started = Instant::now();
    let r = b
        .call(Running::pull_request("T2", 0, 2, Some(500), "*"))
        .await;
    assert_eq!(r.code(), ResponseCode::PullNotFound.code());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(450) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    b.stop().await;
}

#[tokio::test]
async fn consumer_offsets_and_max_offset() {
    let b = Running::start(|_, _| {}).await;
    for _ in 0..3 {
        b.send("T3", 0, b"x", "").await;
    }
    let q = QueryConsumerOffsetRequestHeader {
        consumer_group: "g".into(),
        topic: "T3".into(),
        queue_id: 0,
        set_zero_if_not_found: None,
    };
    // No committed offset, first message still hot: 0.
    let r = b
        .call(RemotingCommand::request_with(
            RequestCode::QueryConsumerOffset,
            &q,
        ))
        .await;
    assert_eq!(
        r.decode_header::<QueryConsumerOffsetResponseHeader>()
            .unwrap()
            .offset,
        0
    );
    let u = UpdateConsumerOffsetRequestHeader {
        consumer_group: "g".into(),
        topic: "T3".into(),
        queue_id: 0,
        commit_offset: 2,
    };
    // RocketMQ 5 takes offsets only for a group it knows.
    let refused = b
        .call(RemotingCommand::request_with(
            RequestCode::UpdateConsumerOffset,
            &u,
        ))
        .await;
    assert_eq!(
        refused.code(),
        ResponseCode::SubscriptionGroupNotExist.code()
    );
    assert_eq!(refused.remark(), Some("Group g not exist!"));
    let group = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptiongroup)
        .with_body(br#"{"groupName":"g"}"#.to_vec());
    assert_eq!(b.call(group).await.code(), 0);
    assert_eq!(
        b.call(RemotingCommand::request_with(
            RequestCode::UpdateConsumerOffset,
            &u
        ))
        .await
        .code(),
        0
    );
    let r = b
        .call(RemotingCommand::request_with(
            RequestCode::QueryConsumerOffset,
            &q,
        ))
        .await;
    assert_eq!(
        r.decode_header::<QueryConsumerOffsetResponseHeader>()
            .unwrap()
            .offset,
        2
    );
    b.dispatched("T3", 0, 3).await;
    let m = GetMaxOffsetRequestHeader {
        topic: "T3".into(),
        queue_id: 0,
        committed: None,
    };
    let r = b
        .call(RemotingCommand::request_with(RequestCode::GetMaxOffset, &m))
        .await;
    assert_eq!(
        r.decode_header::<GetMaxOffsetResponseHeader>()
            .unwrap()
            .offset,
        3
    );
    b.stop().await;
}

#[tokio::test]
async fn send_back_goes_to_retry_then_dlq() {
    let b = Running::start(|_, s| s.message_delay_level = "1s 1s 1s 1s 1s".into()).await;
    let r = b
        .send("T4", 0, b"payload", "TAGS\u{1}A\u{2}UNIQ_KEY\u{1}ABC")
        .await;
    let h: SendMessageResponseHeader = r.decode_header().unwrap();
    let offset = OffsetMsgId::decode(&h.msg_id).unwrap().offset;
    let back = |offset: u64, delay: i32, max: i32| ConsumerSendMsgBackRequestHeader {
        offset: i64::try_from(offset).unwrap(),
        group: "cg4".into(),
        delay_level: delay,
        origin_msg_id: None,
        origin_topic: Some("T4".into()),
        unit_mode: Some(false),
        max_reconsume_times: Some(max),
    };
    // First failure: %RETRY%cg4 through the schedule topic (delay level 1 here = 1 s).
    let r = b
        .call(RemotingCommand::request_with(
            RequestCode::ConsumerSendMsgBack,
            &back(offset, 1, 1),
        ))
        .await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    let deadline = Instant::now() + Duration::from_secs(5);
    let retry = loop {
        let (resp, _) = b.pull("%RETRY%cg4", 0, 0, "*").await;
        if resp.code() == 0 {
            break messages(&resp.body.to_bytes());
        }
        assert!(Instant::now() < deadline, "no retry message after 5 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(retry[0].1, b"payload");
    assert_eq!(retry[0].3, 1, "reconsume times");
    assert!(
        retry[0].2.contains("RETRY_TOPIC\u{1}T4"),
        "{:?}",
        retry[0].2
    );
    assert!(retry[0].2.contains("UNIQ_KEY\u{1}ABC"));
    // The retried copy fails again with max 1: it goes to the DLQ.
    let phy = b
        .broker
        .store
        .commit_log_offset_in_queue("%RETRY%cg4", 0, 0)
        .unwrap();
    let r = b
        .call(RemotingCommand::request_with(
            RequestCode::ConsumerSendMsgBack,
            &back(phy, 0, 1),
        ))
        .await;
    assert_eq!(r.code(), 0);
    b.dispatched("%DLQ%cg4", 0, 1).await;
    let (resp, _) = b.pull("%DLQ%cg4", 0, 0, "*").await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    assert_eq!(messages(&resp.body.to_bytes())[0].3, 2);
    b.stop().await;
}

#[tokio::test]
async fn delayed_messages_arrive_on_time() {
    let b = Running::start(|_, s| s.message_delay_level = "1s 2s".into()).await;
    let sent = Instant::now();
    let r = b.send("T5", 0, b"later", "DELAY\u{1}1").await;
    assert_eq!(r.code(), 0);
    // Parked, not visible yet.
    let (resp, _) = b.pull("T5", 0, 0, "*").await;
    assert_eq!(resp.code(), ResponseCode::PullNotFound.code());
    let r = b
        .call(Running::pull_request("T5", 0, 0, Some(5_000), "*"))
        .await;
    let waited = sent.elapsed();
    assert_eq!(r.code(), 0);
    let m = messages(&r.body.to_bytes());
    assert_eq!(m[0].1, b"later");
    // RocketMQ keeps DELAY on the delivered copy.
    assert!(m[0].2.contains("REAL_TOPIC\u{1}T5"), "{:?}", m[0].2);
    assert!(
        m[0].2.contains("MSG_REGION\u{1}DefaultRegion"),
        "{:?}",
        m[0].2
    );
    assert!(
        waited >= Duration::from_millis(950),
        "too early: {waited:?}"
    );
    assert!(waited < Duration::from_millis(1500), "too late: {waited:?}");
    b.stop().await;
}

/// With `timerWheelEnable=false` a 5.x timer message (TIMER_DELIVER_MS / TIMER_DELAY_SEC
/// / TIMER_DELAY_MS) is refused as Apache RocketMQ refuses it: never stored into its
/// topic to be consumed at once. A delay level wins over the timer properties.
#[tokio::test]
async fn timer_messages_are_refused_not_delivered_at_once_without_the_wheel() {
    let b = Running::start(|_, s| {
        s.message_delay_level = "1s 2s".into();
        s.timer_wheel_enable = false;
    })
    .await;
    let due = broker::clock::now_ms() + 10_000;
    for props in [
        format!("TIMER_DELIVER_MS\u{1}{due}\u{2}"),
        "TIMER_DELAY_SEC\u{1}10\u{2}".to_owned(),
        "TIMER_DELAY_MS\u{1}10000\u{2}".to_owned(),
    ] {
        let r = b.send("TT", 0, b"at ten", &props).await;
        assert_eq!(r.code(), ResponseCode::SystemError.code(), "{props:?}");
        assert!(
            r.remark()
                .unwrap_or("")
                .contains("timerWheelEnable is false"),
            "{:?}",
            r.remark()
        );
    }
    let (resp, _) = b.pull("TT", 0, 0, "*").await;
    assert_ne!(resp.code(), 0, "a refused timer message was stored");
    // With a delay level it is a delayed message, parked as before.
    let r = b
        .send(
            "TT",
            0,
            b"level",
            "DELAY\u{1}1\u{2}TIMER_DELAY_SEC\u{1}10\u{2}",
        )
        .await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    b.stop().await;
}

/// UPDATE_AND_CREATE_TOPIC_LIST and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (`mqadmin
/// updateTopicList` / `updateSubGroupList`): every entry is checked before any is stored.
#[tokio::test]
async fn topic_and_group_lists() {
    let b = Running::start(|_, _| {}).await;
    let topics = |names: &[&str]| {
        let list: Vec<String> = names
            .iter()
            .map(|n| {
                format!(r#"{{"topicName":"{n}","readQueueNums":2,"writeQueueNums":2,"perm":6}}"#)
            })
            .collect();
        RemotingCommand::request(RequestCode::UpdateAndCreateTopicList)
            .with_body(format!(r#"{{"topicConfigList":[{}]}}"#, list.join(",")).into_bytes())
    };
    let refused = b.call(topics(&["ListA", "bad topic"])).await;
    assert_eq!(refused.code(), ResponseCode::InvalidParameter.code());
    assert!(b.broker.topics.select("ListA").is_none(), "nothing stored");
    assert_eq!(b.call(topics(&["ListA", "ListB"])).await.code(), 0);
    let a = b.broker.topics.select("ListA").unwrap();
    assert_eq!((a.read_queue_nums, a.write_queue_nums), (2, 2));
    assert!(b.broker.topics.select("ListB").is_some());
    // Unchanged entries are skipped, changed ones still stored.
    assert_eq!(b.call(topics(&["ListA", "ListC"])).await.code(), 0);
    assert!(b.broker.topics.select("ListC").is_some());

    let groups = |names: &[&str]| {
        let list: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"groupName":"{n}"}}"#))
            .collect();
        RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptiongroupList)
            .with_body(format!(r#"{{"groupConfigList":[{}]}}"#, list.join(",")).into_bytes())
    };
    let refused = b.call(groups(&["list_g1", "bad group"])).await;
    assert_eq!(refused.code(), ResponseCode::InvalidParameter.code());
    assert!(
        refused
            .remark()
            .unwrap()
            .contains("contains illegal characters"),
        "{:?}",
        refused.remark()
    );
    assert!(b.broker.groups.find("list_g1").is_none(), "nothing stored");
    assert_eq!(b.call(groups(&["list_g1", "list_g2"])).await.code(), 0);
    assert!(b.broker.groups.find("list_g2").is_some());
    b.stop().await;
}

/// The cold-read thresholds are kept and shown (never applied: sluice has no cold-read
/// throttle and refuses `coldDataFlowControlEnable`); the RocksDB consume-queue check says
/// there is none.
#[tokio::test]
async fn cold_read_thresholds_and_the_rocksdb_check() {
    let b = Running::start(|_, _| {}).await;
    let set = RemotingCommand::request(RequestCode::UpdateColdDataFlowCtrConfig)
        .with_body(b"cold_g=4096\n".to_vec());
    assert_eq!(b.call(set).await.code(), 0);
    let info = b
        .call(RemotingCommand::request(
            RequestCode::GetColdDataFlowCtrInfo,
        ))
        .await;
    let text = String::from_utf8(info.body.to_bytes().to_vec()).unwrap();
    assert!(text.contains(r#""configTable":{"cold_g":4096}"#), "{text}");
    let remove = RemotingCommand::request(RequestCode::RemoveColdDataFlowCtrConfig)
        .with_body(b"cold_g".to_vec());
    assert_eq!(b.call(remove).await.code(), 0);
    let info = b
        .call(RemotingCommand::request(
            RequestCode::GetColdDataFlowCtrInfo,
        ))
        .await;
    assert!(!String::from_utf8_lossy(&info.body.to_bytes()).contains("cold_g"));
    let check = b
        .call(RemotingCommand::request(
            RequestCode::CheckRocksdbCqWriteProgress,
        ))
        .await;
    assert_eq!(check.code(), 0);
    assert!(String::from_utf8_lossy(&check.body.to_bytes()).contains(r#""checkStatus":3"#));
    b.stop().await;

    let mut config = broker::config::BrokerConfig {
        cold_data_flow_control_enable: true,
        ..broker::config::BrokerConfig::default()
    };
    let err = config.sanitize().unwrap_err().to_string();
    assert!(err.contains("coldDataFlowControlEnable"), "{err}");
}

/// Topic attributes (RocketMQ 5): UPDATE_AND_CREATE_TOPIC's `+key=value,-key` changes are
/// checked as Apache checks them, stored without their sign and answered by GET_TOPIC_CONFIG;
/// GET_SUBSCRIPTIONGROUP_CONFIG creates an unknown group (autoCreateSubscriptionGroup).
#[tokio::test]
async fn topic_attributes_and_group_config() {
    use remoting::protocol::broker::{
        CreateTopicRequestHeader, GetSubscriptionGroupConfigRequestHeader,
    };
    use remoting::protocol::namesrv::TopicRequestHeader;
    let b = Running::start(|_, _| {}).await;
    let create = |attributes: &str| {
        let header = CreateTopicRequestHeader {
            topic: "AttrT".into(),
            default_topic: "TBW102".into(),
            read_queue_nums: 2,
            write_queue_nums: 2,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: Some(attributes.into()),
            force: None,
        };
        RemotingCommand::request_with(RequestCode::UpdateAndCreateTopic, &header)
    };
    let stored = |b: &Running| {
        b.broker
            .topics
            .select("AttrT")
            .map(|c| c.attributes.get("message.type").cloned())
    };
    let mixed = b.call(create("+message.type=MIXED")).await;
    assert_eq!(mixed.code(), ResponseCode::InvalidParameter.code());
    assert_eq!(mixed.remark(), Some("MIXED message type is not supported."));
    let unknown = b.call(create("+color=red")).await;
    assert_eq!(unknown.code(), ResponseCode::SystemError.code());
    assert_eq!(unknown.remark(), Some("unsupported key: color"));
    assert_eq!(stored(&b), None, "nothing created");

    assert_eq!(b.call(create("+message.type=FIFO")).await.code(), 0);
    assert_eq!(stored(&b), Some(Some("FIFO".into())));
    let get = RemotingCommand::request_with(
        RequestCode::GetTopicConfig,
        &TopicRequestHeader {
            topic: "AttrT".into(),
        },
    );
    let config = b.call(get).await;
    let body = String::from_utf8(config.body.to_bytes().to_vec()).unwrap();
    assert!(
        body.contains(r#""attributes":{"message.type":"FIFO"}"#),
        "{body}"
    );
    assert_eq!(b.call(create("+message.type=TRANSACTION")).await.code(), 0);
    assert_eq!(stored(&b), Some(Some("TRANSACTION".into())));
    assert_eq!(b.call(create("-message.type")).await.code(), 0);
    assert_eq!(stored(&b), Some(None));

    let group = RemotingCommand::request_with(
        RequestCode::GetSubscriptiongroupConfig,
        &GetSubscriptionGroupConfigRequestHeader {
            group: "proxy_asks_for_me".into(),
        },
    );
    let answer = b.call(group).await;
    assert_eq!(answer.code(), 0, "{:?}", answer.remark());
    assert!(b.broker.groups.find("proxy_asks_for_me").is_some());
    b.stop().await;
}
