//! mqadmin and mqbench in process against a fake name server + broker (one remoting
//! server answering both, with canned responses and the Apache pull fixture), so the
//! request side of each command is checked without a real broker: which codes are sent
//! with which headers, and what is printed from the answers. Notably the
//! resetOffsetByTime fallback for an offline group (CONSUMER_NOT_ONLINE), which Apache
//! RocketMQ 5.x brokers never trigger any more.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::sync::Arc;

use clap::Parser;
use parking_lot::Mutex;
use remoting::connection::Channel;
use remoting::protocol::admin::{ConsumeStats, OffsetWrapper};
use remoting::protocol::heartbeat::MessageQueue;
use remoting::protocol::route::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
use remoting::server::{self, Dispatcher, Processor, Reply, ServerConfig};
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use tokio::net::TcpListener;

fn fixture() -> Vec<u8> {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/apache-5.3.3-pull.hex",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let hex: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::trim)
        .collect();
    message::id::parse_hex(&hex).unwrap()
}

/// Answers name server and broker codes; remembers every request.
struct Fake {
    addr: String,
    seen: Mutex<Vec<RemotingCommand>>,
}

impl Fake {
    fn route(&self) -> TopicRouteData {
        TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                read_queue_nums: 2,
                write_queue_nums: 2,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "C1".into(),
                broker_name: "broker-a".into(),
                broker_addrs: [(0, self.addr.clone())].into(),
                enable_acting_master: false,
                zone_name: None,
            }],
            filter_server_table: Default::default(),
        }
    }

    fn answer(&self, request: &RemotingCommand) -> RemotingCommand {
        let ok = || RemotingCommand::response(ResponseCode::Success, None);
        let json = |v: &dyn erased::Json| ok().with_body(v.to_json());
        match RequestCode::try_from(request.code()) {
            Ok(RequestCode::GetBrokerClusterInfo) => {
                let route = self.route();
                let info = ClusterInfo {
                    broker_addr_table: [("broker-a".to_owned(), route.broker_datas[0].clone())]
                        .into(),
                    cluster_addr_table: [("C1".to_owned(), ["broker-a".to_owned()].into())].into(),
                };
                json(&info)
            }
            Ok(RequestCode::GetRouteinfoByTopic) => match request.ext("topic") {
                Some("T") => json(&self.route()),
                _ => RemotingCommand::response(
                    ResponseCode::TopicNotExist,
                    Some("No topic route info in name server for the topic: X".to_owned()),
                ),
            },
            Ok(RequestCode::InvokeBrokerToResetOffset) => RemotingCommand::response(
                ResponseCode::ConsumerNotOnline,
                Some("Consumer not online".to_owned()),
            ),
            Ok(RequestCode::GetConsumeStats) => {
                let mut stats = ConsumeStats::default();
                for q in 0..2 {
                    stats.offset_table.insert(
                        MessageQueue {
                            topic: "T".into(),
                            broker_name: "broker-a".into(),
                            queue_id: q,
                        },
                        OffsetWrapper {
                            broker_offset: 10,
                            consumer_offset: 5,
                            pull_offset: 0,
                            last_timestamp: 0,
                        },
                    );
                }
                json(&stats)
            }
            Ok(RequestCode::SearchOffsetByTimestamp) => {
                let mut r = ok();
                r.header.ext_fields.insert("offset", "3");
                r
            }
            Ok(RequestCode::UpdateConsumerOffset) => ok(),
            Ok(RequestCode::SendMessageV2 | RequestCode::SendBatchMessage) => {
                let mut r = ok();
                r.header
                    .ext_fields
                    .insert("msgId", "7F000001000051AF0000000000000000");
                r.header
                    .ext_fields
                    .insert("queueId", request.ext("e").unwrap_or("0"));
                r.header.ext_fields.insert("queueOffset", "0");
                r
            }
            Ok(RequestCode::QueryMessage) => ok().with_body(fixture()),
            Ok(RequestCode::PullMessage) => {
                let mut r = ok().with_body(fixture());
                for (k, v) in [
                    ("suggestWhichBrokerId", "0"),
                    ("nextBeginOffset", "4"),
                    ("minOffset", "0"),
                    ("maxOffset", "4"),
                ] {
                    r.header.ext_fields.insert(k, v);
                }
                r
            }
            _ => RemotingCommand::response(ResponseCode::RequestCodeNotSupported, None),
        }
    }
}

/// `dyn`-friendly JSON bodies.
mod erased {
    pub trait Json {
        fn to_json(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> Vec<u8> {
            remoting::fastjson::to_vec(self, remoting::fastjson::KeyStyle::Fastjson).unwrap()
        }
    }
}

impl Processor for Fake {
    fn process(&self, _channel: &Channel, request: RemotingCommand) -> Reply {
        let response = self.answer(&request);
        self.seen.lock().push(request);
        Reply::Now(response)
    }
}

async fn start() -> Arc<Fake> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let fake = Arc::new(Fake {
        addr,
        seen: Mutex::new(Vec::new()),
    });
    let mut dispatcher = Dispatcher::new();
    dispatcher.set_default(fake.clone());
    tokio::spawn(server::run(
        listener,
        dispatcher,
        ServerConfig::default(),
        std::future::pending(),
    ));
    fake
}

async fn mqadmin(fake: &Fake, args: &[&str]) -> (tools::Result<()>, String, String) {
    let mut all = vec!["mqadmin"];
    all.extend_from_slice(args);
    all.extend(["-n", &fake.addr]);
    let cli = tools::mqadmin::Cli::try_parse_from(all).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = tools::mqadmin::run(&cli, &mut out, &mut err).await;
    (
        result,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn codes(fake: &Fake) -> Vec<i32> {
    fake.seen.lock().iter().map(RemotingCommand::code).collect()
}

#[tokio::test]
async fn reset_offset_falls_back_when_the_group_is_offline() {
    let fake = start().await;
    let (result, out, err) = mqadmin(
        &fake,
        &[
            "resetOffsetByTime",
            "-g",
            "G",
            "-t",
            "T",
            "-s",
            "1700000000000",
            "-f",
            "false",
        ],
    )
    .await;
    result.unwrap_or_else(|e| panic!("{e}\n{err}"));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "reset consumer offset by specified consumerGroup[G], topic[T], force[false], timestamp(string)[1700000000000], timestamp(long)[1700000000000]"
    );
    assert!(
        lines[1].starts_with("#brokerName           #queueId"),
        "{out}"
    );
    // Not forced: the search found 3 < consumer offset 5, so the offset is rolled back to 3.
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(row, ["broker-a", "0", "10", "5", "3", "3"]);
    let updates: Vec<(String, String)> = fake
        .seen
        .lock()
        .iter()
        .filter(|c| c.code() == RequestCode::UpdateConsumerOffset.code())
        .map(|c| {
            (
                c.ext("queueId").unwrap().to_owned(),
                c.ext("commitOffset").unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        updates,
        [
            ("0".to_owned(), "3".to_owned()),
            ("1".to_owned(), "3".to_owned())
        ]
    );
    let seen = codes(&fake);
    assert!(seen.contains(&RequestCode::InvokeBrokerToResetOffset.code()));
    assert!(seen.contains(&RequestCode::GetConsumeStats.code()));
}

#[tokio::test]
async fn send_query_and_pull_commands() {
    let fake = start().await;
    let (result, out, err) = mqadmin(
        &fake,
        &[
            "sendMessage",
            "-t",
            "T",
            "-p",
            "body",
            "-k",
            "k1",
            "-c",
            "TagA",
            "-b",
            "broker-a",
            "-i",
            "1",
        ],
    )
    .await;
    result.unwrap_or_else(|e| panic!("{e}\n{err}"));
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .starts_with("broker-a                          1     SEND_OK"),
        "{out}"
    );
    let send = fake
        .seen
        .lock()
        .iter()
        .find(|c| c.code() == RequestCode::SendMessageV2.code())
        .cloned()
        .unwrap();
    assert_eq!(
        (send.ext("b"), send.ext("c"), send.ext("e")),
        (Some("T"), Some("TBW102"), Some("1"))
    );
    assert_eq!(send.body.to_bytes().as_ref(), b"body");
    let props = message::properties::Properties::decode(send.ext("i").unwrap());
    assert_eq!(
        (props.tags(), props.keys(), props.get("WAIT")),
        (Some("TagA"), Some("k1"), Some("true"))
    );
    assert_eq!(props.uniq_key().map(str::len), Some(32));

    // queryMsgByKey keeps only messages whose KEYS contain the key.
    let (result, out, _) =
        mqadmin(&fake, &["queryMsgByKey", "-t", "FixtureTopic", "-k", "fk2"]).await;
    assert!(
        matches!(result, Err(tools::ToolsError::NoRoute { .. })),
        "{out}"
    );
    let (result, out, _) = mqadmin(&fake, &["queryMsgByKey", "-t", "T", "-k", "fk2"]).await;
    // The fixture's topic is FixtureTopic, not T: filtered out, as Java does.
    assert!(
        matches!(result, Err(tools::ToolsError::NotFound(_))),
        "{out}"
    );

    // queryMsgByOffset prints the first pulled record.
    let (result, out, err) = mqadmin(
        &fake,
        &[
            "queryMsgByOffset",
            "-t",
            "T",
            "-b",
            "broker-a",
            "-i",
            "0",
            "-o",
            "0",
            "-f",
            "UTF-8",
        ],
    )
    .await;
    result.unwrap_or_else(|e| panic!("{e}\n{err}"));
    assert!(out.contains("Message Body:        fixture-1"), "{out}");
    let pull = fake
        .seen
        .lock()
        .iter()
        .find(|c| c.code() == RequestCode::PullMessage.code())
        .cloned()
        .unwrap();
    assert_eq!(pull.ext("consumerGroup"), Some("TOOLS_CONSUMER"));
    assert_eq!(pull.ext("maxMsgNums"), Some("1"));
    assert_eq!(pull.ext("sysFlag"), Some("4"));
}

#[tokio::test]
async fn mqbench_producer_counts_and_batches() {
    let fake = start().await;
    let args = tools::mqbench::Cli::try_parse_from([
        "mqbench",
        "producer",
        "-n",
        &fake.addr,
        "-t",
        "T",
        "--size",
        "16",
        "--threads",
        "2",
        "--duration",
        "300ms",
        "--mode",
        "async",
        "--batch",
        "3",
        "--rate",
        "300",
    ])
    .unwrap();
    let tools::mqbench::BenchCommand::Producer(p) = args.command else {
        panic!("producer")
    };
    let err: Arc<Mutex<Box<dyn std::io::Write + Send>>> =
        Arc::new(Mutex::new(Box::new(std::io::sink())));
    let summary = tools::mqbench::producer::run(&p, err).await.unwrap();
    assert!(
        summary.messages > 0 && summary.messages % 3 == 0,
        "{summary:?}"
    );
    assert_eq!(summary.errors, 0);
    let batches: Vec<RemotingCommand> = fake
        .seen
        .lock()
        .iter()
        .filter(|c| c.code() == RequestCode::SendBatchMessage.code())
        .cloned()
        .collect();
    assert_eq!(u64::try_from(batches.len()).unwrap() * 3, summary.messages);
    let body = batches[0].body.to_bytes();
    let entries = message::batch::decode(&body, 0).unwrap();
    assert_eq!(entries.len(), 3);
    assert!(entries.iter().all(|e| {
        let props = std::str::from_utf8(&body[e.properties.clone()]).unwrap();
        e.body.len() == 16 && message::properties::get(props, "UNIQ_KEY").is_some()
    }));
    // Rate limit: 300 msg/s for 0.3 s is about 90 messages, far below unlimited.
    assert!(summary.messages < 300, "{summary:?}");
}
