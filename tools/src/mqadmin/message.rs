//! Message commands: queryMsgById, queryMsgByKey, queryMsgByOffset, sendMessage,
//! consumeMessage.

use std::collections::BTreeSet;

use bytes::Bytes;
use clap::Args;
use message::id::OffsetMsgId;
use remoting::protocol::broker::{PullMessageRequestHeader, QueryMessageRequestHeader};
use remoting::protocol::constants::system::TOOLS_CONSUMER_GROUP;
use remoting::protocol::heartbeat::{EXPRESSION_TYPE_TAG, SUB_ALL};

use super::format::{message_ext, print_message};
use super::{Common, Ctx};
use crate::admin::{route_addr, select_addr};
use crate::client::{Client, PullStatus, pull_flag};
use crate::error::{Result, ToolsError};
use crate::publish::{PublishQueue, message_properties, publish_queues, send_header};
use crate::stored::StoredMessage;
use crate::time::now_millis;
use crate::time::parse_timestamp_arg;
use crate::uniq_id;

/// Where Java's `queryMsgById` writes message bodies.
pub const BODY_DIR: &str = "/tmp/rocketmq/msgbodys";

/// QUERY_MESSAGE to one address per broker name of `topic`, merged and filtered as
/// Java's `MQAdminImpl.queryMessage` does (key must be one of KEYS and the topic must
/// match; for unique keys the msg id must equal the key).
///
/// # Errors
/// No route; brokers that fail are skipped unless all fail.
pub async fn query_message(
    client: &Client,
    topic: &str,
    key: &str,
    max_num: i32,
    begin: i64,
    end: i64,
    unique_key: bool,
) -> Result<Vec<(String, StoredMessage)>> {
    let route = client.fetch_route(topic).await?;
    let header = QueryMessageRequestHeader {
        topic: topic.to_owned(),
        key: key.to_owned(),
        max_num,
        begin_timestamp: begin,
        end_timestamp: end,
    };
    let mut out = Vec::new();
    let mut last_err = None;
    let mut answered = 0;
    for b in &route.broker_datas {
        let Some(addr) = select_addr(b) else { continue };
        match client.query_message(addr, &header, unique_key).await {
            Ok(msgs) => {
                answered += 1;
                for m in msgs {
                    let keep = if unique_key {
                        m.msg_id() == key
                    } else {
                        m.topic == topic
                            && m.keys().is_some_and(|ks| ks.split(' ').any(|k| k == key))
                    };
                    if keep {
                        out.push((b.broker_name.clone(), m));
                    }
                }
            }
            Err(e) => last_err = Some(e),
        }
    }
    match (answered, last_err) {
        (0, Some(e)) => Err(e),
        _ => Ok(out),
    }
}

/// The message view of queryMsgById / queryMsgByOffset, after writing the body under
/// [`BODY_DIR`] as Java does.
fn show(ctx: &mut Ctx<'_>, msg: &StoredMessage, print_body: bool) -> Result<()> {
    let path = format!("{BODY_DIR}/{}", msg.msg_id());
    let result = std::fs::create_dir_all(BODY_DIR).and_then(|()| std::fs::write(&path, &msg.body));
    let path = match result {
        Ok(()) => path,
        Err(e) => format!("(not written: {path}: {e})"),
    };
    print_message(ctx.out, msg, &path, print_body)?;
    Ok(())
}

/// `queryMsgById`.
#[derive(Debug, Args)]
pub struct QueryMsgById {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Message id(s), comma separated: offset msg ids, or unique keys (with -t).
    #[arg(short = 'i', long = "msgId")]
    pub msg_id: String,
    /// Topic (needed when the id is a unique key).
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
    /// Print the message body in this charset (UTF-8 only).
    #[arg(short = 'f', long = "bodyFormat")]
    pub body_format: Option<String>,
    /// Cluster name (accepted for compatibility).
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
    /// Consumer group: give the message to one of its consumers again (with -d).
    #[arg(short = 'g', long = "consumerGroup")]
    pub consumer_group: Option<String>,
    /// Client id of the consumer to give it to (with -g).
    #[arg(short = 'd', long = "clientId")]
    pub client_id: Option<String>,
    /// Resend the message (not supported).
    #[arg(short = 's', long = "sendMessage")]
    pub send_message: Option<String>,
}

impl QueryMsgById {
    async fn find(&self, client: &Client, id: &str) -> Result<StoredMessage> {
        find_by_id(client, id, self.topic.as_deref().map(str::trim)).await
    }
}

/// Looks one id up (`queryMsgById`): as an offset id on its broker, else as a unique key of
/// `topic`.
///
/// # Errors
/// Not found, or the brokers failing.
pub async fn find_by_id(client: &Client, id: &str, topic: Option<&str>) -> Result<StoredMessage> {
    // A unique key also decodes as an offset id (both are 32 hex chars for IPv4), its
    // "address" being the producer's IP and pid. Only ever connect to addresses the
    // name server lists as brokers, never to whatever an id happens to contain.
    let offset_err = match OffsetMsgId::decode(id) {
        Ok(oid) => {
            let addr = oid.addr.to_string();
            let known = client.cluster_info().await.is_ok_and(|info| {
                info.broker_addr_table
                    .values()
                    .any(|b| b.broker_addrs.values().any(|a| *a == addr))
            });
            if known {
                // The offset is an int64 on the wire: the same eight bytes either way.
                match client.view_message(&addr, topic, oid.offset as i64).await {
                    Ok(m) => return Ok(m),
                    Err(e) => e,
                }
            } else {
                ToolsError::NotFound(format!(
                    "{id} is not an offset msg id of a known broker ({addr} is not registered)"
                ))
            }
        }
        Err(e) => ToolsError::from(e),
    };
    let Some(topic) = topic else {
        return Err(offset_err);
    };
    tracing::debug!(id, error = %offset_err, "not an offset msg id, trying it as a unique key");
    let found = query_message(client, topic, id, 32, 0, i64::MAX, true).await?;
    found.into_iter().next().map(|(_, m)| m).ok_or_else(|| {
        ToolsError::NotFound(format!(
            "query message by id finished, but no message: {id}"
        ))
    })
}

impl QueryMsgById {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        if self.send_message.is_some() {
            return Err(ToolsError::Usage(
                "queryMsgById -s (resend) is not supported".to_owned(),
            ));
        }
        let ids: Vec<&str> = self
            .msg_id
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        // -g and -d: each message given again to one consumer, as Apache's does.
        if let (Some(group), Some(client_id)) = (&self.consumer_group, &self.client_id) {
            let topic = self.topic.as_deref().map(str::trim);
            for id in ids {
                let r = consume_directly(&ctx.client, id, topic, group.trim(), client_id.trim())
                    .await?;
                let result = r
                    .consume_result
                    .and_then(|c| serde_json::to_value(c).ok())
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "null".to_owned());
                write!(
                    ctx.out,
                    "ConsumeMessageDirectlyResult [order={}, autoCommit={}, consumeResult={result}, remark={}, spentTimeMills={}]",
                    r.order,
                    r.auto_commit,
                    if r.remark.is_empty() {
                        "null"
                    } else {
                        &r.remark
                    },
                    r.spent_time_mills
                )?;
            }
            return Ok(());
        }
        if self.consumer_group.is_some() || self.client_id.is_some() {
            return Err(ToolsError::Usage(
                "queryMsgById: -g and -d go together (consume directly)".to_owned(),
            ));
        }
        for id in ids {
            let msg = self.find(&ctx.client, id).await?;
            show(ctx, &msg, self.body_format.is_some())?;
        }
        Ok(())
    }
}

/// `queryMsgByKey`.
#[derive(Debug, Args)]
pub struct QueryMsgByKey {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Message key.
    #[arg(short = 'k', long = "msgKey")]
    pub key: String,
    /// Begin timestamp (ms), default 0.
    #[arg(short = 'b', long = "beginTimestamp", default_value_t = 0)]
    pub begin: i64,
    /// End timestamp (ms), default Long.MAX_VALUE.
    #[arg(short = 'e', long = "endTimestamp", default_value_t = i64::MAX)]
    pub end: i64,
    /// Max messages returned, default 64.
    #[arg(short = 'm', long = "maxNum", default_value_t = 64)]
    pub max_num: i32,
    /// Cluster name (accepted for compatibility).
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
}

impl QueryMsgByKey {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let found = query_message(
            &ctx.client,
            self.topic.trim(),
            self.key.trim(),
            self.max_num,
            self.begin,
            self.end,
            false,
        )
        .await?;
        if found.is_empty() {
            return Err(ToolsError::NotFound(
                "query message by key finished, but no message.".to_owned(),
            ));
        }
        writeln!(
            ctx.out,
            "{:<50} {:>4} {:>40}",
            "#Message ID", "#QID", "#Offset"
        )?;
        for (_, m) in &found {
            writeln!(
                ctx.out,
                "{:<50} {:>4} {:>40}",
                m.msg_id(),
                m.queue_id,
                m.queue_offset
            )?;
        }
        Ok(())
    }
}

/// A pull for tools: `TOOLS_CONSUMER`, subscription `*`, no suspend, no commit.
async fn tool_pull(
    client: &Client,
    addr: &str,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max: i32,
) -> Result<crate::client::PullResult> {
    let header = PullMessageRequestHeader {
        consumer_group: group.to_owned(),
        topic: topic.to_owned(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: max,
        sys_flag: pull_flag::SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some(SUB_ALL.to_owned()),
        sub_version: 0,
        expression_type: Some(EXPRESSION_TYPE_TAG.to_owned()),
        ..PullMessageRequestHeader::default()
    };
    client.pull(addr, &header, client.timeout() * 2).await
}

/// The master (else any) address of `broker_name` in `topic`'s route.
async fn broker_addr(client: &Client, topic: &str, broker_name: &str) -> Result<String> {
    let route = client.fetch_route(topic).await?;
    route_addr(&route, broker_name)
        .map(str::to_owned)
        .ok_or_else(|| ToolsError::NoBroker {
            broker_name: broker_name.to_owned(),
        })
}

/// `queryMsgByOffset`.
#[derive(Debug, Args)]
pub struct QueryMsgByOffset {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Broker name.
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: String,
    /// Queue id.
    #[arg(short = 'i', long = "queueId")]
    pub queue_id: i32,
    /// Queue offset.
    #[arg(short = 'o', long = "offset")]
    pub offset: i64,
    /// Print the body in this charset (UTF-8 only).
    #[arg(short = 'f', long = "bodyFormat")]
    pub body_format: Option<String>,
}

impl QueryMsgByOffset {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        let msg = find_by_offset(
            &ctx.client,
            self.topic.trim(),
            self.broker_name.trim(),
            self.queue_id,
            self.offset,
        )
        .await?;
        show(ctx, &msg, self.body_format.is_some())
    }
}

/// Gives the message `id` to the consumer `client_id` of `group` again
/// (CONSUME_MESSAGE_DIRECTLY through the broker that stores it; `queryMsgById -g -d`, the
/// console's "resend to a consumer").
///
/// # Errors
/// The message is not found, or the broker or the client fails.
pub async fn consume_directly(
    client: &Client,
    id: &str,
    topic: Option<&str>,
    group: &str,
    client_id: &str,
) -> Result<remoting::protocol::admin::ConsumeMessageDirectlyResult> {
    let msg = find_by_id(client, id, topic).await?;
    // The broker that stores it: a registered broker address (never one an id names).
    let addr = msg.store_host.to_string();
    let info = client.cluster_info().await?;
    let broker_name = info
        .broker_addr_table
        .values()
        .find(|b| b.broker_addrs.values().any(|a| *a == addr))
        .map(|b| b.broker_name.clone())
        .ok_or_else(|| ToolsError::NotFound(format!("{addr} is not a registered broker")))?;
    let header = remoting::protocol::broker::ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: group.to_owned(),
        client_id: Some(client_id.to_owned()),
        msg_id: Some(msg.offset_msg_id()),
        broker_name: Some(broker_name),
        topic: Some(msg.topic.clone()),
        topic_sys_flag: None,
        group_sys_flag: None,
    };
    let request = remoting::RemotingCommand::request_with(
        remoting::RequestCode::ConsumeMessageDirectly,
        &header,
    );
    let response = client
        .call_with_timeout(&addr, request, client.timeout() * 4)
        .await?;
    crate::client::parse_body(&response, &addr)
}

/// Messages of `topic` stored between `begin` and `end` (ms), at most `max`, oldest first
/// per queue: each queue's offset at `begin` (SEARCH_OFFSET_BY_TIMESTAMP), then pulls.
///
/// # Errors
/// No route, or the brokers failing.
pub async fn find_by_time(
    client: &Client,
    topic: &str,
    begin: i64,
    end: i64,
    max: usize,
) -> Result<Vec<StoredMessage>> {
    let route = client.fetch_route(topic).await?;
    let mut found = Vec::new();
    for q in &route.queue_datas {
        let Some(addr) = route_addr(&route, &q.broker_name).map(str::to_owned) else {
            continue;
        };
        for queue_id in 0..q.read_queue_nums {
            let mut offset = client.search_offset(&addr, topic, queue_id, begin).await?;
            'queue: while found.len() < max {
                let result = tool_pull(
                    client,
                    &addr,
                    TOOLS_CONSUMER_GROUP,
                    topic,
                    queue_id,
                    offset,
                    32,
                )
                .await?;
                if result.status != PullStatus::Found {
                    break;
                }
                let msgs = result.messages(&addr)?;
                if msgs.is_empty() {
                    break;
                }
                for m in msgs {
                    offset = m.queue_offset + 1;
                    if m.store_timestamp > end || found.len() >= max {
                        break 'queue;
                    }
                    if m.store_timestamp >= begin {
                        found.push(m);
                    }
                }
            }
        }
    }
    found.sort_by_key(|m| m.store_timestamp);
    Ok(found)
}

/// The message at `offset` of queue `queue_id` of `topic` on `broker_name`
/// (`queryMsgByOffset`).
///
/// # Errors
/// No such broker or message, or the broker failing.
pub async fn find_by_offset(
    client: &Client,
    topic: &str,
    broker_name: &str,
    queue_id: i32,
    offset: i64,
) -> Result<StoredMessage> {
    let addr = broker_addr(client, topic, broker_name).await?;
    let result = tool_pull(
        client,
        &addr,
        TOOLS_CONSUMER_GROUP,
        topic,
        queue_id,
        offset,
        1,
    )
    .await?;
    if result.status != PullStatus::Found {
        return Err(ToolsError::NotFound(format!(
            "no message at {topic}/{broker_name}/{queue_id} offset {offset}: {} (queue offsets {}..{})",
            result.status.name(),
            result.min_offset,
            result.max_offset
        )));
    }
    result
        .messages(&addr)?
        .into_iter()
        .next()
        .ok_or_else(|| ToolsError::NotFound("pull found no message".to_owned()))
}

/// `sendMessage`.
#[derive(Debug, Args)]
pub struct SendMessage {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// UTF-8 message body.
    #[arg(short = 'p', long = "body")]
    pub body: String,
    /// Message keys.
    #[arg(short = 'k', long = "key")]
    pub keys: Option<String>,
    /// Message tags.
    #[arg(short = 'c', long = "tags")]
    pub tags: Option<String>,
    /// Send to this broker (name).
    #[arg(short = 'b', long = "broker")]
    pub broker: Option<String>,
    /// Send to this queue (needs -b).
    #[arg(short = 'i', long = "qid")]
    pub queue_id: Option<i32>,
    /// Message trace (accepted, ignored).
    #[arg(short = 'm', long = "msgTraceEnable")]
    pub msg_trace_enable: Option<String>,
}

impl SendMessage {
    fn pick(&self, queues: &[PublishQueue]) -> Result<PublishQueue> {
        let broker = self.broker.as_deref().map(str::trim);
        let candidates: Vec<&PublishQueue> = queues
            .iter()
            .filter(|q| broker.is_none_or(|b| q.broker_name == b))
            .filter(|q| self.queue_id.is_none_or(|i| q.queue_id == i))
            .collect();
        if candidates.is_empty() {
            return Err(ToolsError::Usage(format!(
                "no writable queue {}{} for topic {}",
                broker
                    .map(|b| format!("on broker {b} "))
                    .unwrap_or_default(),
                self.queue_id
                    .map(|i| format!("with id {i} "))
                    .unwrap_or_default(),
                self.topic.trim()
            )));
        }
        let at = usize::try_from(now_millis().rem_euclid(1 << 16)).unwrap_or(0) % candidates.len();
        Ok(candidates[at].clone())
    }

    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        if self.queue_id.is_some() && self.broker.is_none() {
            return Err(ToolsError::Usage(
                "Broker name must be set if the queue is chosen!".to_owned(),
            ));
        }
        let topic = self.topic.trim();
        let (queues, _) = publish_queues(&ctx.client, topic).await?;
        let queue = self.pick(&queues)?;
        let uniq = uniq_id::local_generator().next_at(now_millis());
        let props = message_properties(
            self.tags.as_deref().map(str::trim),
            self.keys.as_deref().map(str::trim),
            &uniq,
        );
        let group = now_millis().to_string();
        let header = send_header(&group, topic, &queue, &props, now_millis(), false);
        let body = Bytes::from(self.body.trim().as_bytes().to_vec());
        let result = ctx
            .client
            .send(&queue.addr, &header, body, false, ctx.client.timeout())
            .await?;
        writeln!(
            ctx.out,
            "{:<32}  {:<4}  {:<20}    {}",
            "#Broker Name", "#QID", "#Send Result", "#MsgId"
        )?;
        writeln!(
            ctx.out,
            "{:<32}  {:<4}  {:<20}    {}",
            queue.broker_name,
            result.queue_id,
            result.status(),
            uniq
        )?;
        Ok(())
    }
}

/// `consumeMessage`.
#[derive(Debug, Args)]
pub struct ConsumeMessage {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Broker name.
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: Option<String>,
    /// Queue id (needs -b).
    #[arg(short = 'i', long = "queueId")]
    pub queue_id: Option<i32>,
    /// Queue offset (needs -i).
    #[arg(short = 'o', long = "offset")]
    pub offset: Option<i64>,
    /// Consumer group name.
    #[arg(short = 'g', long = "consumerGroup")]
    pub group: Option<String>,
    /// Begin timestamp [currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS].
    #[arg(short = 's', long = "beginTimestamp")]
    pub begin: Option<String>,
    /// End timestamp [currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS].
    #[arg(short = 'e', long = "endTimestamp")]
    pub end: Option<String>,
    /// Number of messages to consume (default 128).
    #[arg(short = 'c', long = "MessageNumber", default_value_t = 128)]
    pub count: i64,
}

impl ConsumeMessage {
    pub(crate) async fn run(&self, ctx: &mut Ctx<'_>) -> Result<()> {
        if self.count <= 0 {
            return Err(ToolsError::Usage(
                "Please input a positive messageNumber!".to_owned(),
            ));
        }
        if self.queue_id.is_some() && self.broker_name.is_none() {
            return Err(ToolsError::Usage(
                "Please set the brokerName before queueId!".to_owned(),
            ));
        }
        if self.offset.is_some() && self.queue_id.is_none() {
            return Err(ToolsError::Usage(
                "Please set queueId before offset!".to_owned(),
            ));
        }
        let now = now_millis();
        let parse = |s: &Option<String>, what: &str| -> Result<i64> {
            match s {
                None => Ok(0),
                Some(t) => parse_timestamp_arg(t, now)
                    .ok_or_else(|| ToolsError::Usage(format!("invalid {what} timestamp {t:?}"))),
            }
        };
        let begin = parse(&self.begin, "begin")?;
        let end = parse(&self.end, "end")?;
        if begin > now || end > now {
            return Err(ToolsError::Usage(
                "Please set the timestamps before now!".to_owned(),
            ));
        }
        if end > 0 && begin > end {
            return Err(ToolsError::Usage(
                "Please make sure that the beginTimestamp is less than or equal to the endTimestamp".to_owned(),
            ));
        }
        let topic = self.topic.trim();
        let group = self
            .group
            .as_deref()
            .map_or(TOOLS_CONSUMER_GROUP, str::trim);
        let route = ctx.client.fetch_route(topic).await?;
        // (broker name, address, queue id)
        let mut queues = Vec::new();
        for q in &route.queue_datas {
            if self
                .broker_name
                .as_deref()
                .is_some_and(|b| b.trim() != q.broker_name)
            {
                continue;
            }
            let Some(addr) = route_addr(&route, &q.broker_name) else {
                continue;
            };
            for id in 0..q.read_queue_nums {
                if self.queue_id.is_none_or(|want| want == id) {
                    queues.push((q.broker_name.clone(), addr.to_owned(), id));
                }
            }
        }
        queues.sort();
        let mut left = self.count;
        for (broker, addr, queue_id) in queues {
            if left <= 0 {
                break;
            }
            let mut min = ctx.client.min_offset(&addr, topic, queue_id).await?;
            let mut max = ctx.client.max_offset(&addr, topic, queue_id).await? - 1;
            if begin > 0 {
                min = ctx
                    .client
                    .search_offset(&addr, topic, queue_id, begin)
                    .await?;
            }
            if end > 0 {
                max = ctx
                    .client
                    .search_offset(&addr, topic, queue_id, end)
                    .await?;
            }
            if let Some(o) = self.offset {
                if o > max {
                    writeln!(
                        ctx.out,
                        "{topic}/{broker}/{queue_id} no matched msg, offset={o}"
                    )?;
                    continue;
                }
                min = min.max(o);
            }
            if max < min {
                continue;
            }
            if max - min + 1 > left {
                writeln!(
                    ctx.out,
                    "The older {left} message of the {queue_id} queue will be provided"
                )?;
                max = min + left - 1;
            }
            left -= max - min + 1;
            self.pull_range(ctx, group, &broker, &addr, queue_id, min, max)
                .await?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments, reason = "one queue range, spelled out")]
    async fn pull_range(
        &self,
        ctx: &mut Ctx<'_>,
        group: &str,
        broker: &str,
        addr: &str,
        queue_id: i32,
        min: i64,
        max: i64,
    ) -> Result<()> {
        let topic = self.topic.trim();
        let mut offset = min;
        let mut seen = BTreeSet::new();
        while offset <= max {
            let want = i32::try_from((max - offset + 1).min(32)).unwrap_or(32);
            let r = tool_pull(&ctx.client, addr, group, topic, queue_id, offset, want).await?;
            let mq =
                format!("MessageQueue [topic={topic}, brokerName={broker}, queueId={queue_id}]");
            match r.status {
                PullStatus::Found => {
                    writeln!(ctx.out, "Consume ok")?;
                    let msgs = r.messages(addr)?;
                    for m in msgs
                        .iter()
                        .filter(|m| m.queue_offset <= max && seen.insert(m.queue_offset))
                    {
                        writeln!(
                            ctx.out,
                            "MSGID: {} {} BODY: {}",
                            m.msg_id(),
                            message_ext(m, broker),
                            String::from_utf8_lossy(&m.body)
                        )?;
                    }
                }
                PullStatus::NoMatchedMsg => {
                    writeln!(
                        ctx.out,
                        "{mq} no matched msg. status={}, offset={}",
                        r.status.name(),
                        r.next_begin_offset
                    )?;
                }
                PullStatus::NoNewMsg | PullStatus::OffsetIllegal => {
                    writeln!(
                        ctx.out,
                        "{mq} print msg finished. status={}, offset={}",
                        r.status.name(),
                        r.next_begin_offset
                    )?;
                    break;
                }
            }
            if r.next_begin_offset <= offset {
                break;
            }
            offset = r.next_begin_offset;
        }
        Ok(())
    }
}
