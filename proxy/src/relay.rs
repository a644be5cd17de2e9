//! The broker's questions to one gRPC client, relayed over the client's telemetry stream and
//! answered with what the client says (local mode, where each client has a connection of its
//! own to the broker: [`crate::presence`]). What an operator's `mqadmin consumerStatus -s` and
//! `queryMsgById -d` (the console's "resend to a consumer") ask a consumer:
//!
//! - GET_CONSUMER_RUNNING_INFO: with `jstackEnable` a `PrintThreadStackTraceCommand` goes to
//!   the client, and its `ThreadStackTrace` comes back as the running info's `jstack`; the
//!   info also carries what the proxy knows of the client (consume type, FIFO, SDK version,
//!   subscriptions). Without `jstackEnable` that info is the answer at once (Apache's proxy
//!   does not answer at all, and the broker times out).
//! - CONSUME_MESSAGE_DIRECTLY: the message the broker attached goes to the client in a
//!   `VerifyMessageCommand` (a push consumer runs its listener on it); its
//!   `VerifyMessageResult` status becomes the `ConsumeMessageDirectlyResult` as Apache's
//!   `ClientActivity` maps it: OK → `CR_SUCCESS`, FAILED_TO_CONSUME_MESSAGE → `CR_LATER`,
//!   MESSAGE_CORRUPTED → `CR_RETURN_NULL`; another status (an SDK that does not verify:
//!   NOT_IMPLEMENTED) → `CR_THROW_EXCEPTION` naming it, where Apache leaves the result empty.
//!
//! Each question waits under a nonce until the client answers; a client with no open stream
//! is answered SYSTEM_ERROR at once. Questions never answered are forgotten after
//! [`FORGET_AFTER`] (the broker stopped waiting long before).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use message::properties::{self, keys};
use message::record::{self, Record};
use parking_lot::Mutex;
use remoting::protocol::admin::{
    ConsumeMessageDirectlyResult, ConsumeMessageResult, ConsumerRunningInfo,
};
use remoting::protocol::broker::GetConsumerRunningInfoRequestHeader;
use remoting::protocol::constants::{version_name, version_ordinal};
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use tracing::debug;

use crate::backend::ClientAnswer;
use crate::convert::{self, Shown};
use crate::pb::{self, ClientType, Code, settings::PubSub, telemetry_command::Command};

/// How long an unanswered question is kept.
pub const FORGET_AFTER: Duration = Duration::from_secs(60);

/// A client's telemetry stream (where commands to it are written).
pub type Stream = pb::CommandSender;

/// What the proxy knows of a client besides its stream.
#[derive(Debug, Clone, Copy)]
pub struct Client<'a> {
    /// Its settings, when it reported them.
    pub settings: Option<&'a pb::Settings>,
    /// `x-mq-client-version`.
    pub version: &'a str,
}

/// What the broker asks a client.
enum Question {
    /// Its thread stacks, to complete this running info.
    Stacks(ConsumerRunningInfo),
    /// To consume this message.
    Verify(Box<pb::Message>),
}

/// The message CONSUME_MESSAGE_DIRECTLY carries (its body, the record the broker found), as
/// the client receives messages; `None` when there is none.
fn message_to_verify(request: &RemotingCommand) -> Option<pb::Message> {
    let body = request.body.to_bytes();
    let Ok(Some(Record::Message(m))) = record::decode(&body) else {
        return None;
    };
    let props = m.properties_str();
    let header_id = request.header.ext_fields.get("msgId").unwrap_or_default();
    let message_id = properties::get(&props, keys::UNIQ_KEY).unwrap_or(header_id);
    Some(convert::stored_message(
        &m,
        &props,
        convert::body_in(&body, m.body),
        &Shown {
            topic: m.topic,
            message_id,
            receipt: None,
            reconsume_times: m.reconsume_times,
        },
        crate::clock::now_ms(),
    ))
}

/// A question waiting for the client's answer.
struct Waiting {
    answer: ClientAnswer,
    asked: Instant,
    /// The running info the client's thread stacks complete (a GET_CONSUMER_RUNNING_INFO).
    info: Option<ConsumerRunningInfo>,
}

/// The questions waiting for their clients' answers.
#[derive(Default)]
pub struct Relay {
    waiting: Mutex<HashMap<String, Waiting>>,
    next_nonce: AtomicU64,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("waiting", &self.waiting.lock().len())
            .finish()
    }
}

fn response(code: ResponseCode, remark: &str) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.to_owned()))
}

fn json_answer(body: &impl serde::Serialize) -> RemotingCommand {
    match serde_json::to_vec(body) {
        Ok(json) => {
            RemotingCommand::response(ResponseCode::Success, None::<String>).with_body(json)
        }
        Err(e) => response(ResponseCode::SystemError, &e.to_string()),
    }
}

/// The running info the proxy can tell of `client` without asking it.
fn running_info(client: &Client<'_>) -> ConsumerRunningInfo {
    let mut info = ConsumerRunningInfo::default();
    if let Some(settings) = client.settings {
        let consume_type = match settings.client_type() {
            ClientType::PushConsumer => "CONSUME_PASSIVELY",
            _ => "CONSUME_ACTIVELY",
        };
        info.properties
            .insert("PROP_CONSUME_TYPE".to_owned(), consume_type.to_owned());
        if let Some(PubSub::Subscription(s)) = &settings.pub_sub {
            info.properties.insert(
                "PROP_CONSUME_ORDERLY".to_owned(),
                s.fifo.unwrap_or(false).to_string(),
            );
            info.subscription_set = s
                .subscriptions
                .iter()
                .filter_map(|e| {
                    let topic = e.topic.as_ref()?.name.as_str();
                    let expression = e.expression.as_ref().map_or("*", |x| x.expression.as_str());
                    Some(remoting::protocol::heartbeat::SubscriptionData::build_tag(
                        topic, expression, 0,
                    ))
                })
                .collect();
        }
    }
    if let Some(v) = version_ordinal(client.version) {
        info.properties
            .insert("PROP_CLIENT_VERSION".to_owned(), version_name(v).to_owned());
    }
    info
}

impl Relay {
    /// A relay with nothing waiting.
    #[must_use]
    pub fn new() -> Self {
        Relay::default()
    }

    /// Whether the relay handles requests of `code`.
    #[must_use]
    pub fn handles(code: i32) -> bool {
        code == RequestCode::GetConsumerRunningInfo.code()
            || code == RequestCode::ConsumeMessageDirectly.code()
    }

    fn wait(&self, answer: ClientAnswer, info: Option<ConsumerRunningInfo>) -> String {
        let nonce = format!("{:x}", self.next_nonce.fetch_add(1, Ordering::Relaxed));
        let mut waiting = self.waiting.lock();
        waiting.retain(|_, w| w.asked.elapsed() < FORGET_AFTER);
        waiting.insert(
            nonce.clone(),
            Waiting {
                answer,
                asked: Instant::now(),
                info,
            },
        );
        nonce
    }

    /// Asks `client` (its stream `stream`) what the broker's `request` asks (one the relay
    /// [`handles`](Self::handles)), or answers it at once.
    pub fn ask(
        &self,
        client_id: &str,
        client: &Client<'_>,
        stream: Option<Stream>,
        request: &RemotingCommand,
        answer: ClientAnswer,
    ) {
        let question = if request.code() == RequestCode::GetConsumerRunningInfo.code() {
            let jstack = request
                .decode_header::<GetConsumerRunningInfoRequestHeader>()
                .ok()
                .and_then(|h| h.jstack_enable)
                .unwrap_or(false);
            let info = running_info(client);
            if !jstack {
                answer.send(json_answer(&info));
                return;
            }
            Question::Stacks(info)
        } else {
            match message_to_verify(request) {
                Some(message) => Question::Verify(Box::new(message)),
                None => {
                    answer.send(response(
                        ResponseCode::SystemError,
                        "no message to give the consumer (not found by its id)",
                    ));
                    return;
                }
            }
        };
        let Some(stream) = stream else {
            answer.send(response(
                ResponseCode::SystemError,
                &format!("the gRPC client {client_id} has no open telemetry stream"),
            ));
            return;
        };
        let (info, message) = match question {
            Question::Stacks(info) => (Some(info), None),
            Question::Verify(message) => (None, Some(message)),
        };
        let nonce = self.wait(answer, info);
        let command = match message {
            None => Command::PrintThreadStackTraceCommand(pb::PrintThreadStackTraceCommand {
                nonce: nonce.clone(),
            }),
            Some(message) => Command::VerifyMessageCommand(pb::VerifyMessageCommand {
                nonce: nonce.clone(),
                message: Some(*message),
            }),
        };
        let item = pb::TelemetryCommand {
            status: None,
            command: Some(command),
        };
        if stream.try_send(Ok(item)).is_err() {
            if let Some(w) = self.waiting.lock().remove(&nonce) {
                w.answer.send(response(
                    ResponseCode::SystemError,
                    &format!(
                        "the telemetry stream of the gRPC client {client_id} is full or closed"
                    ),
                ));
            }
        }
    }

    /// A client's answer to a question (its `ThreadStackTrace` or `VerifyMessageResult`,
    /// with the command's status); other commands are not answers (`false`).
    pub fn on_answer(&self, status: Option<&pb::Status>, command: &Command) -> bool {
        let (nonce, stack) = match command {
            Command::ThreadStackTrace(t) => (t.nonce.as_str(), Some(t.thread_stack_trace.clone())),
            Command::VerifyMessageResult(v) => (v.nonce.as_str(), None),
            _ => return false,
        };
        let Some(waiting) = self.waiting.lock().remove(nonce) else {
            debug!(nonce, "telemetry answer with no question waiting");
            return true;
        };
        let code = status.map_or(Code::Ok, pb::Status::code);
        let message = status.map_or("", |s| s.message.as_str());
        let reply = match (stack, waiting.info) {
            (Some(stack), Some(mut info)) => {
                if code == Code::Ok {
                    info.jstack = Some(stack.unwrap_or_default());
                    json_answer(&info)
                } else {
                    response(
                        ResponseCode::SystemError,
                        &format!(
                            "the gRPC client did not print its thread stacks: {} {message}",
                            code.as_str_name()
                        ),
                    )
                }
            }
            _ => {
                let consume_result = match code {
                    Code::Ok => ConsumeMessageResult::Success,
                    Code::FailedToConsumeMessage => ConsumeMessageResult::Later,
                    Code::MessageCorrupted => ConsumeMessageResult::ReturnNull,
                    _ => ConsumeMessageResult::ThrowException,
                };
                let remark = if consume_result == ConsumeMessageResult::ThrowException {
                    format!("from gRPC client: {} {message}", code.as_str_name())
                } else {
                    "from gRPC client".to_owned()
                };
                json_answer(&ConsumeMessageDirectlyResult {
                    consume_result: Some(consume_result),
                    remark,
                    ..ConsumeMessageDirectlyResult::default()
                })
            }
        };
        waiting.answer.send(reply);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::mpsc;

    use super::*;

    fn capture() -> (ClientAnswer, Arc<Mutex<Option<RemotingCommand>>>) {
        let got = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&got);
        (ClientAnswer::new(move |r| *slot.lock() = Some(r)), got)
    }

    fn info_request(jstack: bool) -> RemotingCommand {
        RemotingCommand::request_with(
            RequestCode::GetConsumerRunningInfo,
            &GetConsumerRunningInfoRequestHeader {
                consumer_group: "G".into(),
                client_id: "c1".into(),
                jstack_enable: Some(jstack),
            },
        )
    }

    const CLIENT: Client<'static> = Client {
        settings: None,
        version: "5.0.7",
    };

    #[tokio::test]
    async fn thread_stacks_come_back_as_the_running_info() {
        let relay = Relay::new();
        let (tx, mut rx) = mpsc::channel(4);
        // Without jstack: what the proxy knows, at once.
        let (answer, got) = capture();
        relay.ask(
            "c1",
            &CLIENT,
            Some(tx.clone()),
            &info_request(false),
            answer,
        );
        let now = got.lock().take().unwrap();
        let info: ConsumerRunningInfo = serde_json::from_slice(&now.body.to_bytes()).unwrap();
        assert_eq!(info.properties["PROP_CLIENT_VERSION"], "V5_0_7");
        assert!(info.jstack.is_none());
        // With it: a command to the client, its answer to the broker.
        let (answer, got) = capture();
        relay.ask("c1", &CLIENT, Some(tx), &info_request(true), answer);
        let sent = rx.recv().await.unwrap().unwrap();
        let Some(Command::PrintThreadStackTraceCommand(c)) = sent.command else {
            panic!("{sent:?}");
        };
        assert!(got.lock().is_none(), "waits for the client");
        let stack = Command::ThreadStackTrace(pb::ThreadStackTrace {
            nonce: c.nonce,
            thread_stack_trace: Some("\"main\" RUNNABLE".into()),
        });
        assert!(relay.on_answer(None, &stack));
        let answered = got.lock().take().unwrap();
        assert_eq!(answered.code(), 0);
        let info: ConsumerRunningInfo = serde_json::from_slice(&answered.body.to_bytes()).unwrap();
        assert_eq!(info.jstack.as_deref(), Some("\"main\" RUNNABLE"));
        // Not connected: refused at once.
        let (answer, got) = capture();
        relay.ask("c1", &CLIENT, None, &info_request(true), answer);
        assert_eq!(
            got.lock().take().unwrap().code(),
            ResponseCode::SystemError.code()
        );
    }

    #[tokio::test]
    async fn a_verified_message_answers_as_apache_maps_the_status() {
        let relay = Relay::new();
        let (tx, mut rx) = mpsc::channel(4);
        let record = crate::test_util::encode(&crate::test_util::fields(
            "T",
            b"hello",
            "UNIQ_KEY\u{1}ID1\u{2}",
        ));
        let request =
            RemotingCommand::request(RequestCode::ConsumeMessageDirectly).with_body(record);
        for (status, want) in [
            (Code::Ok, ConsumeMessageResult::Success),
            (Code::FailedToConsumeMessage, ConsumeMessageResult::Later),
            (Code::MessageCorrupted, ConsumeMessageResult::ReturnNull),
            (Code::NotImplemented, ConsumeMessageResult::ThrowException),
        ] {
            let (answer, got) = capture();
            relay.ask("c1", &CLIENT, Some(tx.clone()), &request, answer);
            let sent = rx.recv().await.unwrap().unwrap();
            let Some(Command::VerifyMessageCommand(c)) = sent.command else {
                panic!("{sent:?}");
            };
            let m = c.message.unwrap();
            assert_eq!(m.body.as_ref(), b"hello");
            assert_eq!(m.system_properties.unwrap().message_id, "ID1");
            let result = Command::VerifyMessageResult(pb::VerifyMessageResult { nonce: c.nonce });
            let status = pb::Status {
                code: status.into(),
                message: "x".into(),
            };
            assert!(relay.on_answer(Some(&status), &result));
            let answered = got.lock().take().unwrap();
            let r: ConsumeMessageDirectlyResult =
                serde_json::from_slice(&answered.body.to_bytes()).unwrap();
            assert_eq!(r.consume_result, Some(want));
        }
        // No message attached (not found): refused at once.
        let (answer, got) = capture();
        relay.ask(
            "c1",
            &CLIENT,
            Some(tx),
            &RemotingCommand::request(RequestCode::ConsumeMessageDirectly),
            answer,
        );
        assert_eq!(
            got.lock().take().unwrap().code(),
            ResponseCode::SystemError.code()
        );
    }
}
