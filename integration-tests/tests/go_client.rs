//! Apache's Go client (`rocketmq-client-go` v2, see `integration-tests/go`) against the real
//! `mqnamesrv` + `mqbroker`: sync, async, batch and oneway sends to an auto-created topic, and a
//! push consumer that receives every message exactly once (the scenarios of
//! [`integration_tests::client_suite`]).

use integration_tests::client_suite::{ClientUnderTest, ReceivedId};
use integration_tests::go::{GoTools, PRODUCER, PUSH_CONSUMER};

fn go_client() -> ClientUnderTest {
    let go = GoTools::get();
    ClientUnderTest {
        name: "Go",
        producer: go.program(PRODUCER),
        consumer: go.program(PUSH_CONSUMER),
        // The Go client sets no UNIQ_KEY on batched messages, so it reports no msgId for them.
        batch_has_msg_ids: false,
        // The Go client sends "oneway" requests without the oneway flag, so brokers answer
        // them, and an answer that reaches the connection after the producer closed it makes
        // the producer's kernel reset the connection and drop the unsent tail of the burst (a
        // client bug, seen against Apache RocketMQ too; see go/README.md). Lingering keeps the
        // connection open for the answers.
        oneway_extra: &["--linger-ms", "500"],
        received_id: ReceivedId::UniqKey,
    }
}

#[test]
fn go_producer_sends_sync_async_and_batch_to_an_auto_created_topic() {
    integration_tests::require_tools!(Go);
    go_client().sends_sync_async_and_batch();
}

#[test]
fn go_producer_oneway_sends_land() {
    integration_tests::require_tools!(Go);
    go_client().oneway_sends_land();
}

#[test]
fn go_push_consumer_receives_every_message_exactly_once() {
    integration_tests::require_tools!(Go);
    go_client().push_consumer_receives_every_message_exactly_once();
}
