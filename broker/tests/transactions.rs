//! Transactional messages in process, over real sockets with our own remoting client:
//! half messages stay invisible, a commit stores the real message once, a rollback never
//! does, an unknown state is checked back with CHECK_TRANSACTION_STATE on a connected
//! producer's channel, op records and progress survive a restart, half messages checked
//! too often move to TRANS_CHECK_MAX_TIME_TOPIC (and RESUME_CHECK_HALF_MESSAGE brings them
//! back), and the refusals RocketMQ gives.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use broker::transaction::CID_SYS_RMQ_TRANS;
use broker::transaction::check::CheckReport;
use message::id::OffsetMsgId;
use message::record::{self, Record, sys_flag};
use remoting::client::ClientConfig;
use remoting::connection::RequestHandler;
use remoting::protocol::broker::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader, PullMessageRequestHeader,
    ResumeCheckHalfMessageRequestHeader, SendMessageResponseHeader,
};
use remoting::protocol::constants::{pull_sys_flag, system};
use remoting::protocol::heartbeat::{HeartbeatData, ProducerData};
use remoting::{Channel, RemotingClient, RemotingCommand, RequestCode, ResponseCode};
use support::{Running, T};
use tokio::sync::mpsc;

const HALF: &str = system::TRANS_HALF_TOPIC;
const OP: &str = system::TRANS_OP_HALF_TOPIC;

/// What a send of a half message returned.
#[derive(Debug, Clone)]
struct Half {
    queue_id: i32,
    queue_offset: i64,
    commit_log_offset: i64,
    uniq: String,
}

fn half_request(
    topic: &str,
    queue_id: i32,
    body: &[u8],
    uniq: &str,
    group: &str,
) -> RemotingCommand {
    half_request_with(topic, queue_id, body, uniq, group, "")
}

/// A half message with `extra` properties appended (`\u{2}`-led).
fn half_request_with(
    topic: &str,
    queue_id: i32,
    body: &[u8],
    uniq: &str,
    group: &str,
    extra: &str,
) -> RemotingCommand {
    let props = format!(
        "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}{group}\u{2}UNIQ_KEY\u{1}{uniq}\u{2}WAIT\u{1}true{extra}"
    );
    support::send_request_as(
        group,
        sys_flag::TRANSACTION_PREPARED_TYPE,
        topic,
        queue_id,
        body,
        &props,
    )
}

fn end_request(group: &str, half: &Half, state: i32, from_check: bool) -> RemotingCommand {
    let header = EndTransactionRequestHeader {
        topic: None,
        producer_group: group.into(),
        tran_state_table_offset: half.queue_offset,
        commit_log_offset: half.commit_log_offset,
        commit_or_rollback: state,
        from_transaction_check: Some(from_check),
        msg_id: half.uniq.clone(),
        transaction_id: Some(half.uniq.clone()),
    };
    RemotingCommand::request_with(RequestCode::EndTransaction, &header)
}

impl Running {
    async fn send_half(&self, topic: &str, queue_id: i32, body: &[u8], uniq: &str) -> Half {
        self.send_half_with(topic, queue_id, body, uniq, "").await
    }

    async fn send_half_with(
        &self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        uniq: &str,
        extra: &str,
    ) -> Half {
        let resp = self
            .call(half_request_with(topic, queue_id, body, uniq, "pg", extra))
            .await;
        assert_eq!(resp.code(), 0, "{:?}", resp.remark());
        let h: SendMessageResponseHeader = resp.decode_header().unwrap();
        let phy = OffsetMsgId::decode(&h.msg_id).unwrap().offset;
        assert_eq!(h.transaction_id.as_deref(), Some(uniq));
        Half {
            queue_id: h.queue_id,
            queue_offset: h.queue_offset,
            commit_log_offset: i64::try_from(phy).unwrap(),
            uniq: uniq.into(),
        }
    }

    /// Every message of the queue through PULL_MESSAGE: (body, properties, sysFlag,
    /// preparedTransactionOffset).
    async fn pull_all(&self, topic: &str, queue_id: i32) -> Vec<(Vec<u8>, String, i32, i64)> {
        let header = PullMessageRequestHeader {
            consumer_group: "cg".into(),
            topic: topic.into(),
            queue_id,
            queue_offset: 0,
            max_msg_nums: 32,
            sys_flag: pull_sys_flag::SUBSCRIPTION,
            commit_offset: 0,
            suspend_timeout_millis: 0,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            ..PullMessageRequestHeader::default()
        };
        let resp = self
            .call(RemotingCommand::request_with(
                RequestCode::PullMessage,
                &header,
            ))
            .await;
        if resp.code() != 0 {
            return Vec::new();
        }
        let body = resp.body.to_bytes();
        let mut out = Vec::new();
        let mut rest = &body[..];
        while !rest.is_empty() {
            let Ok(Some(Record::Message(m))) = record::decode(rest) else {
                panic!("bad pull body")
            };
            out.push((
                m.body.to_vec(),
                m.properties_str().into_owned(),
                m.sys_flag,
                m.prepared_transaction_offset,
            ));
            rest = &rest[m.total_size as usize..];
        }
        out
    }

    async fn check_round(&self) -> CheckReport {
        let broker = Arc::clone(&self.broker);
        let service = Arc::clone(self.role.transactions());
        tokio::task::spawn_blocking(move || service.check_once(&broker))
            .await
            .unwrap()
    }

    fn progress(&self, topic: &str) -> Option<i64> {
        self.broker.offsets.query(CID_SYS_RMQ_TRANS, topic, 0)
    }
}

/// Hands every server→client request to the test.
struct Forward(mpsc::UnboundedSender<RemotingCommand>);

impl RequestHandler for Forward {
    fn on_request(&self, _channel: &Channel, request: RemotingCommand) {
        let _ = self.0.send(request);
    }
}

/// A producer of group `pg` that has sent its heartbeat: the broker can check back on it.
struct FakeProducer {
    client: RemotingClient,
    requests: mpsc::UnboundedReceiver<RemotingCommand>,
}

impl FakeProducer {
    async fn connect(b: &Running) -> Self {
        let (tx, requests) = mpsc::unbounded_channel();
        let client = RemotingClient::with_handler(ClientConfig::default(), Arc::new(Forward(tx)));
        let data = HeartbeatData {
            client_id: "127.0.0.1@fake".into(),
            producer_data_set: vec![ProducerData {
                group_name: "pg".into(),
            }],
            ..HeartbeatData::default()
        };
        let hb = RemotingCommand::request(RequestCode::HeartBeat)
            .with_body(serde_json::to_vec(&data).unwrap());
        let resp = client.invoke(&b.addr, hb, T).await.unwrap();
        assert_eq!(resp.code(), 0);
        FakeProducer { client, requests }
    }

    /// The next CHECK_TRANSACTION_STATE, as the half it names and the message in its body.
    async fn next_check(&mut self) -> (Half, (String, i32, Vec<u8>, String)) {
        let req = tokio::time::timeout(Duration::from_secs(20), self.requests.recv())
            .await
            .expect("no check-back within 20 s")
            .unwrap();
        assert_eq!(req.code(), RequestCode::CheckTransactionState.code());
        assert!(req.is_oneway());
        let h: CheckTransactionStateRequestHeader = req.decode_header().unwrap();
        let body = req.body.to_bytes();
        let Ok(Some(Record::Message(m))) = record::decode(&body) else {
            panic!("check body is not a message record")
        };
        assert_eq!(h.msg_id, h.transaction_id);
        let phy = OffsetMsgId::decode(h.offset_msg_id.as_deref().unwrap())
            .unwrap()
            .offset;
        assert_eq!(i64::try_from(phy).unwrap(), h.commit_log_offset);
        assert_eq!(
            i64::try_from(m.queue_offset).unwrap(),
            h.tran_state_table_offset
        );
        assert_eq!(h.topic.as_deref(), Some(m.topic));
        (
            Half {
                queue_id: m.queue_id,
                queue_offset: h.tran_state_table_offset,
                commit_log_offset: h.commit_log_offset,
                uniq: h.msg_id.unwrap(),
            },
            (
                m.topic.to_owned(),
                m.queue_id,
                m.body.to_vec(),
                m.properties_str().into_owned(),
            ),
        )
    }
}

#[tokio::test]
async fn commit_rollback_and_check_back_survive_a_restart() {
    let tweak = |c: &mut broker::config::BrokerConfig, _: &mut store::StoreConfig| {
        c.transaction_time_out = 1_000;
        // Rounds are run by the test.
        c.transaction_check_interval = 3_600_000;
    };
    let b = Running::start(tweak).await;
    let mut producer = FakeProducer::connect(&b).await;

    let commit = b.send_half("TX", 1, b"commit-me", "u0").await;
    let rollback = b.send_half("TX", 1, b"rollback-me", "u1").await;
    let unknown = b.send_half("TX", 1, b"ask-me", "u2").await;
    let sent = Instant::now();
    // The response names the real queue and the half queue offset.
    assert_eq!(commit.queue_id, 1);
    assert_eq!(
        [
            commit.queue_offset,
            rollback.queue_offset,
            unknown.queue_offset
        ],
        [0, 1, 2]
    );
    b.dispatched(HALF, 0, 3).await;
    assert_eq!(b.broker.store.max_offset_in_queue("TX", 1), 0);
    assert!(
        b.pull_all("TX", 1).await.is_empty(),
        "half messages are invisible"
    );

    // A half message is checked against the request.
    let mut wrong = commit.clone();
    wrong.queue_offset = 7;
    let resp = b
        .call(end_request(
            "pg",
            &wrong,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());
    assert_eq!(
        resp.remark(),
        Some("The transaction state table offset wrong")
    );
    let resp = b
        .call(end_request(
            "other",
            &commit,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.remark(), Some("The producer group wrong"));
    wrong = commit.clone();
    wrong.commit_log_offset += 1;
    let resp = b
        .call(end_request(
            "pg",
            &wrong,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());

    let resp = b
        .call(end_request(
            "pg",
            &commit,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    let resp = b
        .call(end_request(
            "pg",
            &rollback,
            sys_flag::TRANSACTION_ROLLBACK_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    // Unknown: oneway as producers send it (RocketMQ does not answer it at all).
    b.client
        .invoke_oneway(
            &b.addr,
            end_request("pg", &unknown, sys_flag::TRANSACTION_NOT_TYPE, false),
        )
        .await
        .unwrap();
    b.dispatched(OP, 0, 2).await;
    b.dispatched("TX", 1, 1).await;
    let got = b.pull_all("TX", 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let (body, props, sys, prepared) = &got[0];
    assert_eq!(body, b"commit-me");
    assert_eq!(
        sys & sys_flag::TRANSACTION_MASK,
        sys_flag::TRANSACTION_COMMIT_TYPE
    );
    assert_eq!(*prepared, commit.commit_log_offset);
    // As RocketMQ 4.9 stores it: TRAN_MSG and REAL_* stay on the committed message.
    assert!(props.contains("TRAN_MSG\u{1}true"), "{props:?}");
    assert!(props.contains("REAL_TOPIC\u{1}TX"), "{props:?}");
    assert!(props.contains("UNIQ_KEY\u{1}u0"), "{props:?}");

    // Too young for a check-back (unless this machine was very slow); the two resolved
    // ones are passed over already.
    let mut early = CheckReport::default();
    if sent.elapsed() < Duration::from_millis(700) {
        early = b.check_round().await;
        assert_eq!(early.checked, 0, "{early:?}");
    }
    tokio::time::sleep(Duration::from_millis(1_100).saturating_sub(sent.elapsed())).await;
    let r = b.check_round().await;
    assert_eq!((r.checked, r.discarded), (1, 0), "{r:?}");
    assert_eq!(early.resolved + r.resolved, 2, "{early:?} {r:?}");
    let (copy, (topic, queue_id, body, props)) = producer.next_check().await;
    assert_eq!(
        (topic.as_str(), queue_id, body.as_slice()),
        ("TX", 1, &b"ask-me"[..])
    );
    assert_eq!(copy.uniq, "u2");
    assert_eq!(
        copy.queue_offset, 3,
        "the copy put back at the end of the half queue"
    );
    assert!(props.contains("TRANSACTION_CHECK_TIMES\u{1}1"), "{props:?}");
    assert!(props.contains("PGROUP\u{1}pg"), "{props:?}");
    // Progress passed everything resolved or asked about; the op queue is consumed.
    assert_eq!(b.progress(HALF), Some(3));
    assert_eq!(b.progress(OP), Some(2));

    // The producer answers the check: commit.
    let resp = producer
        .client
        .invoke(
            &b.addr,
            end_request("pg", &copy, sys_flag::TRANSACTION_COMMIT_TYPE, true),
            T,
        )
        .await
        .unwrap();
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    b.dispatched("TX", 1, 2).await;
    b.dispatched(OP, 0, 3).await;
    let r = b.check_round().await;
    assert_eq!((r.checked, r.resolved), (0, 1), "{r:?}");
    assert_eq!(b.progress(HALF), Some(4));
    assert_eq!(b.progress(OP), Some(3));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(producer.requests.try_recv().is_err(), "asked twice");

    // A restart keeps the messages and the progress: nothing is asked again.
    let b = b.restart(tweak).await;
    assert_eq!(b.progress(HALF), Some(4));
    assert_eq!(b.progress(OP), Some(3));
    assert_eq!(b.check_round().await, CheckReport::default());
    let bodies: Vec<Vec<u8>> = b.pull_all("TX", 1).await.into_iter().map(|m| m.0).collect();
    assert_eq!(bodies, vec![b"commit-me".to_vec(), b"ask-me".to_vec()]);
    b.stop().await;
}

#[tokio::test]
async fn the_service_checks_back_on_its_own() {
    let b = Running::start(|c, _| {
        c.transaction_time_out = 200;
        c.transaction_check_interval = 200;
    })
    .await;
    let deadline = Instant::now() + T;
    while !b.role.transactions().is_running() {
        assert!(Instant::now() < deadline, "check service not started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut producer = FakeProducer::connect(&b).await;
    b.send_half("TS", 0, b"late", "u9").await;
    let (copy, (topic, _, body, _)) = producer.next_check().await;
    assert_eq!((topic.as_str(), body.as_slice()), ("TS", &b"late"[..]));
    producer
        .client
        .invoke_oneway(
            &b.addr,
            end_request("pg", &copy, sys_flag::TRANSACTION_COMMIT_TYPE, true),
        )
        .await
        .unwrap();
    b.dispatched("TS", 0, 1).await;
    // Stopping (a switch to slave) is idempotent.
    assert!(b.role.transactions().stop());
    assert!(!b.role.transactions().stop());
    b.stop().await;
}

#[tokio::test]
async fn checked_too_often_moves_to_trans_check_max_time_topic() {
    let b = Running::start(|c, _| {
        c.transaction_time_out = 1;
        c.transaction_check_max = 2;
        c.transaction_check_interval = 3_600_000;
    })
    .await;
    b.send_half("TM", 0, b"orphan", "u5").await;
    b.dispatched(HALF, 0, 1).await;
    let mut reports = Vec::new();
    for _ in 0..4 {
        // Copies put back in a round are only looked at in a later millisecond.
        tokio::time::sleep(Duration::from_millis(5)).await;
        reports.push(b.check_round().await);
    }
    // No producer is connected: the checks go nowhere but still count. As in RocketMQ,
    // the copy put back with the last allowed count is moved in the same round, right
    // after its check went out (the count is judged before the freshness).
    let no_channel: Vec<usize> = reports.iter().map(|r| r.no_channel).collect();
    let discarded: Vec<usize> = reports.iter().map(|r| r.discarded).collect();
    assert_eq!(no_channel, vec![1, 1, 0, 0], "{reports:?}");
    assert_eq!(discarded, vec![0, 1, 0, 0], "{reports:?}");
    let tcmt = system::TRANS_CHECK_MAX_TIME_TOPIC;
    b.dispatched(tcmt, 0, 1).await;
    assert!(b.broker.topics.contains(tcmt));
    let moved = b.pull_all(tcmt, 0).await;
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].0, b"orphan");
    assert!(
        moved[0].1.contains("TRANSACTION_CHECK_TIMES\u{1}2"),
        "{:?}",
        moved[0].1
    );
    assert!(moved[0].1.contains("REAL_TOPIC\u{1}TM"), "{:?}", moved[0].1);
    assert_eq!(b.broker.store.max_offset_in_queue("TM", 0), 0);

    // mqadmin resumeCheckHalfMessage: back into the half queue, checked from scratch.
    let phy = b
        .broker
        .store
        .consume_queues()
        .get(tcmt, 0)
        .unwrap()
        .unit_at(0)
        .unwrap()
        .commit_log_offset;
    let header = ResumeCheckHalfMessageRequestHeader {
        topic: None,
        msg_id: Some(
            OffsetMsgId {
                addr: b.broker.store_host(),
                offset: phy,
            }
            .encode(),
        ),
    };
    let resp = b
        .call(RemotingCommand::request_with(
            RequestCode::ResumeCheckHalfMessage,
            &header,
        ))
        .await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    b.dispatched(HALF, 0, 4).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let r = b.check_round().await;
    assert_eq!((r.no_channel, r.discarded), (1, 0), "{r:?}");
    let header = ResumeCheckHalfMessageRequestHeader {
        topic: None,
        msg_id: Some("nonsense".into()),
    };
    let resp = b
        .call(RemotingCommand::request_with(
            RequestCode::ResumeCheckHalfMessage,
            &header,
        ))
        .await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());
    b.stop().await;
}

#[tokio::test]
async fn refusals_as_rocketmq_gives_them() {
    let b = Running::start(|c, _| c.reject_transaction_message = true).await;
    let resp = b.call(half_request("TR", 0, b"x", "u1", "pg")).await;
    assert_eq!(resp.code(), ResponseCode::NoPermission.code());
    assert!(
        resp.remark()
            .unwrap()
            .contains("sending transaction message is forbidden"),
        "{:?}",
        resp.remark()
    );
    b.broker
        .update_config(|c| c.reject_transaction_message = false);
    let half = b.send_half("TR", 0, b"x", "u1").await;

    let mut nowhere = half.clone();
    nowhere.commit_log_offset = 1 << 40;
    let resp = b
        .call(end_request(
            "pg",
            &nowhere,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.code(), ResponseCode::SystemError.code());
    assert_eq!(
        resp.remark(),
        Some("Find prepared transaction message failed")
    );

    b.broker
        .update_config(|c| c.broker_role = broker::config::BrokerRole::SLAVE);
    let resp = b
        .call(end_request(
            "pg",
            &half,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.code(), ResponseCode::SlaveNotAvailable.code());
    b.broker
        .update_config(|c| c.broker_role = broker::config::BrokerRole::ASYNC_MASTER);
    assert_eq!(b.broker.store.max_offset_in_queue("TR", 0), 0);
    b.stop().await;
}

#[tokio::test]
async fn a_delay_level_applies_at_commit() {
    let b = Running::start(|_, s| s.message_delay_level = "1s 2s".into()).await;
    // The Java producer drops DELAY from transactional messages; a raw one may send it.
    let half = b
        .send_half_with("TD", 0, b"later", "u7", "\u{2}DELAY\u{1}1")
        .await;
    b.dispatched(HALF, 0, 1).await;
    assert_eq!(
        b.broker
            .store
            .max_offset_in_queue(system::SCHEDULE_TOPIC, 0),
        0,
        "the half message itself is not parked"
    );
    let resp = b
        .call(end_request(
            "pg",
            &half,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(resp.code(), 0, "{:?}", resp.remark());
    b.dispatched(system::SCHEDULE_TOPIC, 0, 1).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while b.broker.store.max_offset_in_queue("TD", 0) < 1 {
        assert!(
            Instant::now() < deadline,
            "committed message never delivered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = b.pull_all("TD", 0).await;
    assert_eq!(got.len(), 1);
    let (body, props, sys, prepared) = &got[0];
    assert_eq!(body, b"later");
    assert_eq!(
        sys & sys_flag::TRANSACTION_MASK,
        sys_flag::TRANSACTION_COMMIT_TYPE
    );
    assert_eq!(*prepared, half.commit_log_offset);
    // RocketMQ re-encodes the properties when it parks: TRAN_MSG is gone by then.
    assert!(!props.contains("TRAN_MSG"), "{props:?}");
    assert!(props.contains("REAL_TOPIC\u{1}TD"), "{props:?}");
    b.stop().await;
}

#[tokio::test]
async fn own_immunity_time_defers_the_check() {
    let b = Running::start(|c, _| {
        c.transaction_time_out = 1;
        c.transaction_check_interval = 3_600_000;
    })
    .await;
    b.send_half_with(
        "TI",
        0,
        b"patience",
        "u8",
        "\u{2}CHECK_IMMUNITY_TIME_IN_SECONDS\u{1}1",
    )
    .await;
    let sent = Instant::now();
    b.dispatched(HALF, 0, 1).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let r = b.check_round().await;
    if sent.elapsed() < Duration::from_millis(800) {
        // Within its immunity: copied back to wait, nobody asked.
        assert_eq!((r.deferred, r.no_channel, r.checked), (1, 0, 0), "{r:?}");
        let unit = b
            .broker
            .store
            .consume_queues()
            .get(HALF, 0)
            .unwrap()
            .unit_at(1)
            .unwrap();
        let bytes = b
            .broker
            .store
            .look_message_by_offset_and_size(unit.commit_log_offset, unit.size as usize)
            .unwrap();
        let Ok(Some(Record::Message(copy))) = record::decode(&bytes) else {
            panic!("copy does not decode")
        };
        let props = copy.properties_str();
        assert!(
            props.contains("TRAN_PREPARED_QUEUE_OFFSET\u{1}0"),
            "{props:?}"
        );
    }
    tokio::time::sleep(Duration::from_millis(1_100).saturating_sub(sent.elapsed())).await;
    // Its immunity is over: asked (no producer is connected, so the check goes nowhere).
    let r = b.check_round().await;
    assert_eq!((r.no_channel, r.deferred), (1, 0), "{r:?}");
    b.stop().await;
}

/// A committed half message with a timer property is parked for the wheel at its
/// commit and delivered at its time, not at the commit (RocketMQ parks COMMIT messages
/// like any other).
#[tokio::test]
async fn a_committed_timer_message_is_delivered_at_its_time_not_at_the_commit() {
    let b = Running::start(|_, _| {}).await;
    let sent_at = broker::clock::now_ms();
    let half = b
        .send_half_with(
            "TxTimer",
            0,
            b"later",
            "tt1",
            "\u{2}TIMER_DELAY_MS\u{1}1500",
        )
        .await;
    let r = b
        .call(end_request(
            "pg",
            &half,
            sys_flag::TRANSACTION_COMMIT_TYPE,
            false,
        ))
        .await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
    b.dispatched("rmq_sys_wheel_timer", 0, 1).await;
    assert!(
        b.pull_all("TxTimer", 0).await.is_empty(),
        "delivered at the commit"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let got = loop {
        let got = b.pull_all("TxTimer", 0).await;
        if !got.is_empty() {
            break got;
        }
        assert!(Instant::now() < deadline, "never delivered");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let at = broker::clock::now_ms();
    assert!(
        at >= sent_at + 1500,
        "delivered {} ms early",
        sent_at + 1500 - at
    );
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, b"later");
    let props = &got[0].1;
    assert!(props.contains("TIMER_OUT_MS"), "{props:?}");
    assert!(!props.contains("TRAN_MSG\u{1}true"), "{props:?}");
    b.stop().await;
}
