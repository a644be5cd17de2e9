//! The tokio server and client together, in process: dispatch by code, unknown
//! codes, oneway, malformed input closing only its own connection, idle timeout,
//! server-initiated requests, timeouts, reconnect, graceful shutdown.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use remoting::client::ClientConfig;
use remoting::connection::{Channel, RequestHandler};
use remoting::server::{self, ConnectionListener, Dispatcher, Processor, Reply, ServerConfig};
use remoting::{Body, RemotingClient, RemotingCommand, RemotingError, ResponseCode, SerializeType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const ECHO: i32 = 1000;
const SLOW: i32 = 1001;
const ONEWAY_COUNT: i32 = 1002;
const CALL_BACK: i32 = 1003;

struct Echo {
    oneways: Arc<AtomicUsize>,
}

impl Processor for Echo {
    fn process(&self, channel: &Channel, request: RemotingCommand) -> Reply {
        match request.code() {
            ECHO => {
                let mut resp = RemotingCommand::response(
                    ResponseCode::Success,
                    request.remark().map(str::to_owned),
                );
                resp.header.ext_fields = request.header.ext_fields.clone();
                Reply::Now(resp.with_body(request.body.clone()))
            }
            SLOW => Reply::later(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Some(RemotingCommand::response(
                    ResponseCode::Success,
                    Some("slow".into()),
                ))
            }),
            ONEWAY_COUNT => {
                self.oneways.fetch_add(1, Ordering::SeqCst);
                Reply::Now(RemotingCommand::response(ResponseCode::Success, None))
            }
            CALL_BACK => {
                // Ask the client something over its own connection, answer with its answer.
                let channel = channel.clone();
                Reply::later(async move {
                    let answer = channel
                        .invoke(RemotingCommand::request(2000), Duration::from_secs(2))
                        .await
                        .ok()?;
                    Some(RemotingCommand::response(
                        ResponseCode::Success,
                        answer.header.remark,
                    ))
                })
            }
            _ => Reply::Nothing,
        }
    }
}

#[derive(Default)]
struct Closes(AtomicUsize);

impl ConnectionListener for Closes {
    fn on_close(&self, _channel: &Channel) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct TestServer {
    addr: String,
    oneways: Arc<AtomicUsize>,
    closes: Arc<Closes>,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

async fn start(config: ServerConfig) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let oneways = Arc::new(AtomicUsize::new(0));
    let closes = Arc::new(Closes::default());
    let mut dispatcher = Dispatcher::new();
    let echo: Arc<dyn Processor> = Arc::new(Echo {
        oneways: oneways.clone(),
    });
    dispatcher.register([ECHO, SLOW, ONEWAY_COUNT, CALL_BACK], &echo);
    dispatcher.add_listener(closes.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(server::run(listener, dispatcher, config, async {
        let _ = stopped.await;
    }));
    TestServer {
        addr,
        oneways,
        closes,
        stop: Some(stop),
        done,
    }
}

fn echo(body: &'static [u8]) -> RemotingCommand {
    let mut r = RemotingCommand::request(ECHO).with_body(Bytes::from_static(body));
    r.header.ext_fields.insert("k", "v");
    r
}

const T: Duration = Duration::from_secs(3);

#[tokio::test]
async fn dispatches_and_answers_unknown_codes() {
    let s = start(ServerConfig::default()).await;
    let client = RemotingClient::default();
    for ser in [SerializeType::Json, SerializeType::RocketMq] {
        let mut req = echo(b"hello");
        req.serialize_type = ser;
        let resp = client.invoke(&s.addr, req, T).await.unwrap();
        assert_eq!(resp.code(), 0);
        assert_eq!(
            resp.serialize_type, ser,
            "answered in the request's encoding"
        );
        assert_eq!(resp.ext("k"), Some("v"));
        assert_eq!(resp.body.to_bytes(), Bytes::from_static(b"hello"));
    }
    let resp = client
        .invoke(&s.addr, RemotingCommand::request(4242), T)
        .await
        .unwrap();
    assert_eq!(resp.code(), ResponseCode::RequestCodeNotSupported.code());
    assert_eq!(resp.remark(), Some(" request type 4242 not supported"));
    // Same connection still serves.
    assert_eq!(
        client.invoke(&s.addr, echo(b"x"), T).await.unwrap().code(),
        0
    );
}

#[tokio::test]
async fn oneway_gets_no_response_and_later_replies_interleave() {
    let s = start(ServerConfig::default()).await;
    let client = RemotingClient::default();
    for _ in 0..5 {
        client
            .invoke_oneway(&s.addr, RemotingCommand::request(ONEWAY_COUNT))
            .await
            .unwrap();
    }
    let slow = {
        let client = client.clone();
        let addr = s.addr.clone();
        tokio::spawn(async move {
            client
                .invoke(&addr, RemotingCommand::request(SLOW), T)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A fast request overtakes the slow one on the same connection.
    let fast = client.invoke(&s.addr, echo(b"fast"), T).await.unwrap();
    assert_eq!(fast.body.to_bytes(), Bytes::from_static(b"fast"));
    assert!(!slow.is_finished());
    assert_eq!(slow.await.unwrap().unwrap().remark(), Some("slow"));
    assert_eq!(s.oneways.load(Ordering::SeqCst), 5);
}

async fn read_until_eof(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(T, stream.read(&mut buf)).await {
            Ok(Ok(0)) => return true,
            Ok(Ok(_)) => {}
            Ok(Err(_)) => return true,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn malformed_input_closes_only_that_connection() {
    let s = start(ServerConfig {
        max_frame_len: 1024,
        ..ServerConfig::default()
    })
    .await;
    let client = RemotingClient::default();
    assert_eq!(
        client
            .invoke(&s.addr, echo(b"before"), T)
            .await
            .unwrap()
            .code(),
        0
    );

    let json_garbage = {
        let mut v = 12i32.to_be_bytes().to_vec();
        v.extend_from_slice(&8u32.to_be_bytes());
        v.extend_from_slice(b"{\"co\":1}");
        v
    };
    let no_code = {
        let mut v = 15i32.to_be_bytes().to_vec();
        v.extend_from_slice(&11u32.to_be_bytes());
        v.extend_from_slice(b"{\"flag\":0}\n");
        v
    };
    let truncated_binary = {
        let mut v = 9i32.to_be_bytes().to_vec();
        v.extend_from_slice(&((1u32 << 24) | 5).to_be_bytes());
        v.extend_from_slice(&[0, 1, 2, 3, 4]);
        v
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("over the maximum", 2048i32.to_be_bytes().to_vec()),
        ("negative length", (-5i32).to_be_bytes().to_vec()),
        ("shorter than the header word", 2i32.to_be_bytes().to_vec()),
        (
            "header longer than frame",
            [&8i32.to_be_bytes()[..], &100u32.to_be_bytes()[..]].concat(),
        ),
        (
            "unknown serialize type",
            [&8i32.to_be_bytes()[..], &(9u32 << 24).to_be_bytes()[..]].concat(),
        ),
        ("JSON that is not a header", json_garbage),
        ("header without code", no_code),
        ("truncated binary header", truncated_binary),
    ];
    for (what, bytes) in cases {
        let mut bad = TcpStream::connect(&s.addr).await.unwrap();
        bad.write_all(&bytes).await.unwrap();
        assert!(
            read_until_eof(&mut bad).await,
            "{what}: connection not closed"
        );
        // The good connection opened before is unaffected.
        assert_eq!(
            client
                .invoke(&s.addr, echo(b"after"), T)
                .await
                .unwrap()
                .code(),
            0,
            "{what}"
        );
    }
    assert!(s.closes.0.load(Ordering::SeqCst) >= 8);
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let s = start(ServerConfig {
        idle_timeout: Some(Duration::from_millis(300)),
        ..ServerConfig::default()
    })
    .await;
    let mut idle = TcpStream::connect(&s.addr).await.unwrap();
    let started = std::time::Instant::now();
    assert!(read_until_eof(&mut idle).await);
    assert!(started.elapsed() >= Duration::from_millis(250));
}

struct AnswerCallbacks;

impl RequestHandler for AnswerCallbacks {
    fn on_request(&self, channel: &Channel, request: RemotingCommand) {
        let _ = channel.send(request.reply(0, Some("from client".to_owned())));
    }
}

#[tokio::test]
async fn server_calls_the_client_back_over_its_connection() {
    let s = start(ServerConfig::default()).await;
    let client = RemotingClient::with_handler(ClientConfig::default(), Arc::new(AnswerCallbacks));
    let resp = client
        .invoke(&s.addr, RemotingCommand::request(CALL_BACK), T)
        .await
        .unwrap();
    assert_eq!(resp.remark(), Some("from client"));
}

#[tokio::test]
async fn client_times_out_and_reconnects() {
    let s = start(ServerConfig::default()).await;
    let client = RemotingClient::default();
    let err = client
        .invoke(
            &s.addr,
            RemotingCommand::request(SLOW),
            Duration::from_millis(50),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RemotingError::Timeout { .. }), "{err}");
    // A late response for a timed-out request is dropped; the connection keeps working.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        client.invoke(&s.addr, echo(b"x"), T).await.unwrap().code(),
        0
    );

    // Kill the connection from the server side: the next call reconnects.
    let addr = s.addr.clone();
    let ch = client.channel(&addr).await.unwrap();
    let mut s = s;
    s.stop.take().unwrap().send(()).unwrap();
    s.done.await.unwrap();
    ch.closed().await;
    assert!(client.invoke(&addr, echo(b"x"), T).await.is_err());
    let listener = TcpListener::bind(&addr).await.unwrap();
    let mut dispatcher = Dispatcher::new();
    let processor: Arc<dyn Processor> = Arc::new(Echo {
        oneways: Arc::default(),
    });
    dispatcher.register([ECHO], &processor);
    tokio::spawn(server::run(
        listener,
        dispatcher,
        ServerConfig::default(),
        std::future::pending(),
    ));
    assert_eq!(
        client
            .invoke(&addr, echo(b"again"), T)
            .await
            .unwrap()
            .code(),
        0
    );
}

#[tokio::test]
async fn connect_failures_are_errors() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let client = RemotingClient::default();
    let err = client.invoke(&addr, echo(b"x"), T).await.unwrap_err();
    assert!(matches!(err, RemotingError::Connect { .. }), "{err}");
    assert!(matches!(
        client
            .invoke("not-an-address", echo(b"x"), T)
            .await
            .unwrap_err(),
        RemotingError::InvalidAddress(_)
    ));
}

#[tokio::test]
async fn large_multi_part_bodies_arrive_whole() {
    let s = start(ServerConfig::default()).await;
    let client = RemotingClient::default();
    let parts: Vec<Bytes> = (0..40u8).map(|i| Bytes::from(vec![i; 100_000])).collect();
    let expected: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    let req = RemotingCommand::request(ECHO).with_body(Body::Parts(parts));
    let resp = client.invoke(&s.addr, req, T).await.unwrap();
    assert_eq!(resp.body.to_bytes().as_ref(), &expected[..]);
}

#[tokio::test]
async fn shutdown_stops_accepting_and_closes_connections() {
    let mut s = start(ServerConfig::default()).await;
    let client = RemotingClient::default();
    let ch = client.channel(&s.addr).await.unwrap();
    s.stop.take().unwrap().send(()).unwrap();
    tokio::time::timeout(T, s.done).await.unwrap().unwrap();
    tokio::time::timeout(T, ch.closed()).await.unwrap();
    assert!(TcpStream::connect(&s.addr).await.is_err());
}
