//! Nothing is acknowledged before it is as durable as the role requires: a SYNC_MASTER
//! answers for a put only once a slave holds it, on every path that answers for one (a
//! send, a batch, a consumer's send-back, a two-way END_TRANSACTION), and the schedule
//! service moves a delay offset past a delivered copy only then. Without a running HA
//! service a SYNC_MASTER has no slave: SLAVE_NOT_AVAILABLE, not SEND_OK.
//!
//! The slave in the positive cases is a second broker in this process following the
//! master's HA port over loopback.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

mod support;

use std::time::{Duration, Instant};

use broker::config::BrokerRole;
use message::id::OffsetMsgId;
use message::record::sys_flag;
use remoting::protocol::broker::{
    ConsumerSendMsgBackRequestHeader, EndTransactionRequestHeader, SendMessageResponseHeader,
};
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use support::Running;

const SLAVE_NOT_AVAILABLE: i32 = ResponseCode::SlaveNotAvailable as i32;

async fn sync_master() -> Running {
    Running::start(|c, s| {
        c.broker_role = BrokerRole::SYNC_MASTER;
        s.message_delay_level = "1s 1s".into();
    })
    .await
}

/// A slave broker following `master`'s HA port, caught up with it.
async fn slave_of(master: &Running) -> Running {
    let slave = Running::start(|c, _| {
        c.broker_role = BrokerRole::SLAVE;
        c.broker_id = 1;
    })
    .await;
    let ha = master.broker.replication.listen_addr().to_string();
    slave.broker.replication.start_slave(Some(ha)).unwrap();
    wait_caught_up(master, &slave).await;
    slave
}

async fn wait_caught_up(master: &Running, slave: &Running) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let end = master.broker.store.commit_log().max_offset().0;
        if slave.broker.store.commit_log().max_offset().0 == end
            && master.broker.replication.is_slave_ok(end)
        {
            return;
        }
        assert!(Instant::now() < deadline, "slave did not catch up");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn offset_of(response: &RemotingCommand) -> u64 {
    let h: SendMessageResponseHeader = response.decode_header().unwrap();
    OffsetMsgId::decode(&h.msg_id).unwrap().offset
}

#[tokio::test]
async fn a_sync_master_without_its_ha_service_answers_slave_not_available() {
    let b = sync_master().await;
    // A running HA service without a slave: the answer RocketMQ gives.
    let r = b.send("T", 0, b"one", "").await;
    assert_eq!(r.code(), SLAVE_NOT_AVAILABLE, "{:?}", r.remark());
    // No HA service at all is no slave either, not "nothing to wait for".
    b.broker.replication.stop();
    let r = b.send("T", 0, b"two", "").await;
    assert_eq!(r.code(), SLAVE_NOT_AVAILABLE, "{:?}", r.remark());
    let mut batch = support::send_request("T", 0, b"", "");
    batch.header.code = RequestCode::SendBatchMessage.code();
    let mut body = bytes::BytesMut::new();
    let entry = message::batch::BatchEntry {
        flag: 0,
        body: b"x",
        properties: "",
    };
    message::batch::encode(&[entry], &mut body).unwrap();
    batch = batch.with_body(body.freeze());
    let r = b.call(batch).await;
    assert_eq!(r.code(), SLAVE_NOT_AVAILABLE, "{:?}", r.remark());
    // Once a slave follows, the same sends are acknowledged.
    b.broker.replication.start_master().unwrap();
    let _slave = slave_of(&b).await;
    let r = b.send("T", 0, b"three", "").await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
}

#[tokio::test]
async fn a_send_back_is_acknowledged_only_once_a_slave_holds_the_copy() {
    let b = sync_master().await;
    let original = b.send("T", 0, b"payload", "").await;
    assert_eq!(original.code(), SLAVE_NOT_AVAILABLE);
    let back = || {
        RemotingCommand::request_with(
            RequestCode::ConsumerSendMsgBack,
            &ConsumerSendMsgBackRequestHeader {
                offset: i64::try_from(offset_of(&original)).unwrap(),
                group: "cg".into(),
                delay_level: 1,
                origin_msg_id: None,
                origin_topic: Some("T".into()),
                unit_mode: Some(false),
                max_reconsume_times: Some(16),
            },
        )
    };
    let r = b.call(back()).await;
    assert_eq!(r.code(), ResponseCode::SystemError as i32);
    assert_eq!(r.remark(), Some("SLAVE_NOT_AVAILABLE"));
    let _slave = slave_of(&b).await;
    let r = b.call(back()).await;
    assert_eq!(r.code(), 0, "{:?}", r.remark());
}

#[tokio::test]
async fn a_two_way_end_transaction_names_the_missing_guarantee() {
    let b = sync_master().await;
    let half = b
        .call(support::send_request_as(
            "pg",
            sys_flag::TRANSACTION_PREPARED_TYPE,
            "T",
            0,
            b"tx",
            "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}pg\u{2}UNIQ_KEY\u{1}U1",
        ))
        .await;
    assert_eq!(half.code(), SLAVE_NOT_AVAILABLE);
    let h: SendMessageResponseHeader = half.decode_header().unwrap();
    let halves = b
        .broker
        .store
        .max_offset_in_queue(remoting::protocol::constants::system::TRANS_HALF_TOPIC, 0);
    assert_eq!(halves, 1);
    let end = RemotingCommand::request_with(
        RequestCode::EndTransaction,
        &EndTransactionRequestHeader {
            topic: None,
            producer_group: "pg".into(),
            tran_state_table_offset: 0,
            commit_log_offset: i64::try_from(offset_of(&half)).unwrap(),
            commit_or_rollback: sys_flag::TRANSACTION_COMMIT_TYPE,
            from_transaction_check: Some(false),
            msg_id: "U1".into(),
            transaction_id: h.transaction_id,
        },
    );
    let r = b.call(end).await;
    assert_eq!(r.code(), SLAVE_NOT_AVAILABLE, "{:?}", r.remark());
    // Stored all the same, with its op record: a check-back would commit it twice.
    b.dispatched("T", 0, 1).await;
}

#[tokio::test]
async fn delay_offsets_move_only_once_a_slave_holds_the_delivered_copy() {
    let b = sync_master().await;
    let r = b.send("D", 0, b"later", "DELAY\u{1}1").await;
    assert_eq!(r.code(), SLAVE_NOT_AVAILABLE);
    // Due after 1 s: delivered into D, but the offset waits for a slave.
    b.dispatched("D", 0, 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let offsets = b.broker.delay_offsets.table();
    assert_eq!(offsets.get(&1).copied().unwrap_or(0), 0, "{offsets:?}");
    // Waited on, never put again.
    assert_eq!(b.broker.store.max_offset_in_queue("D", 0), 1);
    let _slave = slave_of(&b).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.broker.delay_offsets.table().get(&1) != Some(&1) {
        assert!(Instant::now() < deadline, "delay offset did not move");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(b.broker.store.max_offset_in_queue("D", 0), 1);
}
