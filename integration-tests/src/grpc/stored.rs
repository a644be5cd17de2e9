//! What a send-only case run ([`RunOptions::consume`](super::RunOptions) false) left on the
//! broker, read back over the remoting protocol (PULL_MESSAGE of every queue from offset 0),
//! and the case's expectations on it: the properties the proxy wrote from the gRPC message
//! (tag, keys, user property, message id, message group, delivery time), the queue a message
//! group went to, and when a delay message became visible.
//!
//! The same reading works behind any proxy, so the properties a native proxy wrote can be
//! compared with Apache's ([`comparable_properties`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use message::properties::Properties;
use message::record::{self, Record};

use super::CaseRun;
use crate::client::{read_request, try_request};

/// One message as the broker stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Queue id.
    pub queue_id: i32,
    /// Offset in its queue.
    pub queue_offset: u64,
    /// Body as text.
    pub body: String,
    /// Properties.
    pub properties: Properties,
    /// When the broker stored it (a delay message: its delivered copy).
    pub store_timestamp: i64,
    /// The born time of the record.
    pub born_timestamp: i64,
}

impl Stored {
    /// A property.
    #[must_use]
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties.get(key)
    }
}

/// Every message of `topic`'s queues `0..queues` on the broker at `addr`, in queue order.
#[must_use]
pub fn read_topic(addr: &str, topic: &str, queues: i32) -> Vec<Stored> {
    let mut out = Vec::new();
    for queue_id in 0..queues {
        let mut offset = 0i64;
        loop {
            let Ok(resp) =
                try_request(addr, read_request("grpc_readback", topic, queue_id, offset))
            else {
                break;
            };
            if resp.code() != 0 {
                break;
            }
            let body = resp.body.to_bytes();
            let mut rest = &body[..];
            let mut got = 0i64;
            while let Ok(Some(Record::Message(m))) = record::decode(rest) {
                out.push(Stored {
                    queue_id: m.queue_id,
                    queue_offset: m.queue_offset,
                    body: String::from_utf8_lossy(m.body).into_owned(),
                    properties: Properties::decode(&m.properties_str()),
                    store_timestamp: m.store_timestamp,
                    born_timestamp: m.born_timestamp,
                });
                got += 1;
                let Some(next) = rest.get(m.total_size as usize..) else {
                    break;
                };
                rest = next;
            }
            if got == 0 {
                break;
            }
            offset += got;
        }
    }
    out
}

/// Reads `topic` back until `want` messages are there (a delay message appears in its topic
/// only when due) or `timeout` passes; what was there last.
#[must_use]
pub fn wait_for(
    addr: &str,
    topic: &str,
    queues: i32,
    want: usize,
    timeout: Duration,
) -> Vec<Stored> {
    let deadline = Instant::now() + timeout;
    loop {
        let got = read_topic(addr, topic, queues);
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The case's expectations on what a send-only run of it (`run`, its SENT lines) stored
/// (`stored`): each message once, under the id the send answered, with its tag, keys,
/// property and message group; a message group's messages in one queue, in order; a delay
/// message with its delivery time, visible not before it and at most 10 s after.
///
/// # Errors
/// What is not as expected.
pub fn check_stored(case: &str, run: &CaseRun, stored: &[Stored]) -> Result<(), String> {
    let once = |body: &str| -> Result<&Stored, String> {
        match stored
            .iter()
            .filter(|s| s.body == body)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [s] => Ok(*s),
            other => Err(format!("{body} stored {} times", other.len())),
        }
    };
    let sent_id = |i: usize| run.sent_id(i);
    let expect = |s: &Stored, key: &str, want: Option<&str>| -> Result<(), String> {
        if s.property(key) == want {
            Ok(())
        } else {
            Err(format!(
                "{}: {key} is {:?}, not {want:?}",
                s.body,
                s.property(key)
            ))
        }
    };
    let count = match case {
        "normal" => {
            for i in 0..8 {
                let s = once(&format!("normal-{i}"))?;
                expect(s, "TAGS", Some("TagA"))?;
                expect(s, "KEYS", Some(&format!("key-{i}")))?;
                expect(s, "idx", Some(&i.to_string()))?;
                expect(s, "UNIQ_KEY", Some(sent_id(i)?))?;
                expect(s, "__SHARDINGKEY", None)?;
            }
            8
        }
        "fifo" => {
            for g in 0..3 {
                let mine: Vec<&Stored> = stored
                    .iter()
                    .filter(|s| s.body.starts_with(&format!("fifo-{g}-")))
                    .collect();
                let queues: std::collections::BTreeSet<i32> =
                    mine.iter().map(|s| s.queue_id).collect();
                if queues.len() != 1 {
                    return Err(format!("group-{g} spread over queues {queues:?}"));
                }
                let mut in_queue = mine.clone();
                in_queue.sort_by_key(|s| s.queue_offset);
                let order: Vec<&str> = in_queue.iter().map(|s| s.body.as_str()).collect();
                let want: Vec<String> = (0..4).map(|j| format!("fifo-{g}-{j}")).collect();
                if order != want {
                    return Err(format!("group-{g} stored as {order:?}, not {want:?}"));
                }
                for s in mine {
                    expect(s, "__SHARDINGKEY", Some(&format!("group-{g}")))?;
                }
            }
            for (i, s) in run.sent.iter().enumerate() {
                let body = format!("fifo-{}-{}", i % 3, i / 3);
                expect(once(&body)?, "UNIQ_KEY", Some(s.msg_id.as_str()))?;
            }
            12
        }
        "delay" => {
            for s in &run.sent {
                let m = once(&format!("delay-{}", s.index))?;
                expect(m, "UNIQ_KEY", Some(s.msg_id.as_str()))?;
                let due = s.deliver.unwrap_or(0);
                let stated: i64 = m
                    .property("TIMER_DELIVER_MS")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                // The program prints the due time it gave the SDK; the SDK may round it
                // (Python: whole seconds).
                if (stated - due).abs() > 1000 {
                    return Err(format!(
                        "delay-{}: TIMER_DELIVER_MS {stated}, due {due}",
                        s.index
                    ));
                }
                // Both clocks are this machine's; 20 ms for rounding.
                let at = m.store_timestamp;
                if at + 20 < stated || at > stated + 10_000 {
                    return Err(format!(
                        "delay-{} due {stated}, visible at {at} ({} ms late)",
                        s.index,
                        at - stated
                    ));
                }
            }
            3
        }
        "transaction" => return check_transaction(run, stored),
        other => return Err(format!("no stored expectations for case {other}")),
    };
    if stored.len() != count {
        return Err(format!("{} messages stored, not {count}", stored.len()));
    }
    if run.sent.len() != count {
        return Err(format!("{} messages sent, not {count}", run.sent.len()));
    }
    Ok(())
}

/// The transaction case: what the broker made visible in the topic once the transactions
/// ended. Committed by the client (`tx-0`, `tx-3`): once. Committed by a check-back (`tx-2`,
/// `tx-5`: the program answers COMMIT for them): at least once (a second check round may
/// commit a copy again before the first answer is in, as on Apache). Rolled back (`tx-1`,
/// `tx-4`): never. Each under the id its send answered, marked `TRAN_MSG`, with the topic as
/// its producer group; and the program was asked about both open ones.
fn check_transaction(run: &CaseRun, stored: &[Stored]) -> Result<(), String> {
    if run.sent.len() != 6 {
        return Err(format!("{} messages sent, not 6", run.sent.len()));
    }
    for i in 0..6 {
        let body = format!("tx-{i}");
        let copies: Vec<&Stored> = stored.iter().filter(|s| s.body == body).collect();
        let want_ok = match i % 3 {
            0 => copies.len() == 1,
            1 => copies.is_empty(),
            _ => !copies.is_empty(),
        };
        if !want_ok {
            return Err(format!(
                "{body} ({:?}) stored {} times",
                run.sent
                    .iter()
                    .find(|s| s.index == i)
                    .and_then(|s| s.tx.as_deref()),
                copies.len()
            ));
        }
        for s in copies {
            let id = run.sent_id(i)?;
            for (key, want) in [("UNIQ_KEY", id), ("TRAN_MSG", "true")] {
                if s.property(key) != Some(want) {
                    return Err(format!(
                        "{body}: {key} is {:?}, not {want:?}",
                        s.property(key)
                    ));
                }
            }
            if s.property("PGROUP").is_none() {
                return Err(format!("{body}: no PGROUP"));
            }
        }
    }
    let checked: std::collections::BTreeSet<&str> = run
        .events("CHECK")
        .iter()
        .map(|e| e.body.as_str())
        .collect();
    for open in ["tx-2", "tx-5"] {
        if !checked.contains(open) {
            return Err(format!("{open} never checked back (checked: {checked:?})"));
        }
    }
    Ok(())
}

/// Properties whose values differ from run to run or from proxy to proxy by nature: the ids
/// and times the SDK makes, the client's address, the timer's marks, the producer group and
/// real topic (both proxies use the topic; the topics of two runs differ), the real queue of
/// a delay message (round robin from a random start, in both proxies).
pub const VARYING_PROPERTIES: [&str; 10] = [
    "UNIQ_KEY",
    "BORN_TIMESTAMP",
    "__BORNHOST",
    "TIMER_DELIVER_MS",
    "TIMER_OUT_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "PGROUP",
    "REAL_TOPIC",
    "REAL_QID",
];

/// A stored message's properties, by body, with the values of [`VARYING_PROPERTIES`]
/// replaced by `*` (their presence still counts), for comparing two proxies' messages.
#[must_use]
pub fn comparable_properties(stored: &[Stored]) -> BTreeMap<String, BTreeMap<String, String>> {
    stored
        .iter()
        .map(|s| {
            let props = s
                .properties
                .iter()
                .map(|(k, v)| {
                    let v = if VARYING_PROPERTIES.contains(&k) {
                        "*"
                    } else {
                        v
                    };
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            (s.body.clone(), props)
        })
        .collect()
}
