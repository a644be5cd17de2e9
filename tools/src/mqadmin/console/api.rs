//! The console's JSON: what each page shows, read through the calls `mqadmin`'s sub
//! commands make, and the changing actions, each an `mqadmin` sub command run in process.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use remoting::protocol::admin::TopicStatsTable;
use remoting::protocol::constants::system;
use remoting::protocol::route::TopicRouteData;

use super::{ACTION_TIMEOUT, Shared};
use crate::admin::select_addr;
use crate::error::ToolsError;
use crate::mqadmin::consumer::{examine_consume_stats, examine_consumer_connection};
use crate::mqadmin::message::{find_by_id, find_by_offset, find_by_time, query_message};
use crate::stored::StoredMessage;

type S = State<Arc<Shared>>;

/// An error as the pages show it: `{"error": "..."}`.
fn fail(status: StatusCode, e: impl std::fmt::Display) -> Response {
    (status, Json(json!({ "error": e.to_string() }))).into_response()
}

fn bad_gateway(e: &ToolsError) -> Response {
    let status = match e {
        ToolsError::NotFound(_) | ToolsError::NoRoute { .. } => StatusCode::NOT_FOUND,
        ToolsError::Usage(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_GATEWAY,
    };
    fail(status, e)
}

/// The first figure of a `"10s 60s 600s"` rate text.
fn first_rate(v: Option<&String>) -> f64 {
    v.and_then(|t| t.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.0)
}

fn num(v: Option<&String>) -> i64 {
    v.and_then(|t| t.parse().ok()).unwrap_or(0)
}

/// GET /api/cluster: every broker with its role, version, rates, today's counts and
/// CommitLog offsets (`clusterList`'s figures); a slave's distance from its master.
pub async fn cluster(State(st): S) -> Response {
    let info = match st.client.cluster_info().await {
        Ok(i) => i,
        Err(e) => return bad_gateway(&e),
    };
    let mut rows = Vec::new();
    let mut master_max: BTreeMap<String, i64> = BTreeMap::new();
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(data) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                let (table, error) = match st.client.broker_runtime_info(addr).await {
                    Ok(t) => (t.table, None),
                    Err(e) => (BTreeMap::new(), Some(e.to_string())),
                };
                let max = num(table.get("commitLogMaxOffset"));
                if *id == 0 {
                    master_max.insert(name.clone(), max);
                }
                rows.push(json!({
                    "cluster": cluster,
                    "brokerName": name,
                    "brokerId": id,
                    "addr": addr,
                    "role": if *id == 0 { "MASTER" } else { "SLAVE" },
                    "version": table.get("brokerVersionDesc").cloned().unwrap_or_default(),
                    "inTps": first_rate(table.get("putTps")),
                    "outTps": first_rate(table.get("getTransferedTps")),
                    "putToday": num(table.get("msgPutTotalTodayNow")),
                    "getToday": num(table.get("msgGetTotalTodayNow")),
                    "minOffset": num(table.get("commitLogMinOffset")),
                    "maxOffset": max,
                    "error": error,
                }));
            }
        }
    }
    for row in &mut rows {
        if row["brokerId"].as_i64() != Some(0) {
            let name = row["brokerName"].as_str().unwrap_or_default().to_owned();
            if let (Some(m), Some(own)) = (master_max.get(&name), row["maxOffset"].as_i64()) {
                row["behindMaster"] = json!(m - own);
            }
        }
    }
    Json(json!({ "brokers": rows })).into_response()
}

/// A topic's kind as the topic list filters it.
fn topic_kind(topic: &str) -> &'static str {
    if topic.starts_with(system::RETRY_GROUP_TOPIC_PREFIX) {
        "retry"
    } else if topic.starts_with(system::DLQ_GROUP_TOPIC_PREFIX) {
        "dlq"
    } else if system::is_system_topic(topic) {
        "system"
    } else {
        "normal"
    }
}

/// GET /api/topics: every topic the name servers know, with its kind.
pub async fn topics(State(st): S) -> Response {
    match st.client.all_topics().await {
        Ok(list) => {
            let topics: Vec<Value> = list
                .topic_list
                .iter()
                .map(|t| json!({ "topic": t, "kind": topic_kind(t) }))
                .collect();
            Json(json!({ "topics": topics })).into_response()
        }
        Err(e) => bad_gateway(&e),
    }
}

/// Most topics whose offsets [`topic_offsets`] reads at once.
const TOPIC_OFFSETS_MAX: usize = 200;

/// GET /api/topics/offsets: for each normal topic (the first [`TOPIC_OFFSETS_MAX`] by
/// name), the sum of its queues' max offsets on every broker; the topic list draws its
/// in-rates from successive answers. A topic that cannot be read is left out.
pub async fn topic_offsets(State(st): S) -> Response {
    let list = match st.client.all_topics().await {
        Ok(l) => l,
        Err(e) => return bad_gateway(&e),
    };
    let mut normal: Vec<String> = list
        .topic_list
        .into_iter()
        .filter(|t| topic_kind(t) == "normal")
        .collect();
    normal.sort();
    normal.truncate(TOPIC_OFFSETS_MAX);
    let mut reads = tokio::task::JoinSet::new();
    for topic in normal {
        let st = Arc::clone(&st);
        reads.spawn(async move {
            let total = topic_stats(&st, &topic)
                .await
                .map(|(_, stats)| total_max_offset(&stats));
            (topic, total)
        });
    }
    let mut offsets = BTreeMap::new();
    while let Some(read) = reads.join_next().await {
        if let Ok((topic, Ok(total))) = read {
            offsets.insert(topic, total);
        }
    }
    Json(json!({ "offsets": offsets })).into_response()
}

/// A topic's route and its queues' offsets on each broker of it (`topicStatus`'s calls).
async fn topic_stats(
    st: &Shared,
    topic: &str,
) -> Result<(Arc<TopicRouteData>, Vec<(String, TopicStatsTable)>), ToolsError> {
    let route = st.client.fetch_route(topic).await?;
    let mut stats = Vec::new();
    for b in &route.broker_datas {
        let Some(addr) = select_addr(b) else { continue };
        stats.push((addr.to_owned(), st.client.topic_stats(addr, topic).await?));
    }
    Ok((route, stats))
}

fn total_max_offset(stats: &[(String, TopicStatsTable)]) -> i64 {
    stats
        .iter()
        .flat_map(|(_, s)| s.offset_table.values())
        .map(|o| o.max_offset)
        .sum()
}

/// `?topic=`.
#[derive(Debug, Deserialize)]
pub struct TopicQuery {
    topic: String,
}

/// GET /api/topic?topic=: its queues on every broker (`topicStatus`), its route, the
/// groups consuming it and how far each has consumed it (the sum of its consumer offsets;
/// the page draws out-rates from successive answers).
pub async fn topic(State(st): S, Query(q): Query<TopicQuery>) -> Response {
    let topic = q.topic.trim();
    let (route, stats) = match topic_stats(&st, topic).await {
        Ok(r) => r,
        Err(e) => return bad_gateway(&e),
    };
    let mut queues = Vec::new();
    let mut groups = std::collections::BTreeSet::new();
    for (addr, stats) in &stats {
        for (mq, o) in &stats.offset_table {
            queues.push(json!({
                "brokerName": mq.broker_name,
                "queueId": mq.queue_id,
                "minOffset": o.min_offset,
                "maxOffset": o.max_offset,
                "lastUpdated": o.last_update_timestamp,
            }));
        }
        if let Ok(list) = st.client.topic_consumed_by(addr, topic).await {
            groups.extend(list.group_list);
        }
    }
    let mut consumed = BTreeMap::new();
    for group in &groups {
        if let Ok(c) = examine_consume_stats(&st.client, group, Some(topic)).await {
            let offsets: i64 = c.offset_table.values().map(|o| o.consumer_offset).sum();
            consumed.insert(group.clone(), offsets);
        }
    }
    let brokers: Vec<Value> = route
        .queue_datas
        .iter()
        .map(|q| {
            json!({
                "brokerName": q.broker_name,
                "readQueueNums": q.read_queue_nums,
                "writeQueueNums": q.write_queue_nums,
                "perm": q.perm,
            })
        })
        .collect();
    Json(json!({
        "topic": topic,
        "queues": queues,
        "totalMaxOffset": total_max_offset(&stats),
        "brokers": brokers,
        "groups": groups,
        "consumed": consumed,
    }))
    .into_response()
}

/// GET /api/groups: the subscription groups of every master.
pub async fn groups(State(st): S) -> Response {
    let info = match st.client.cluster_info().await {
        Ok(i) => i,
        Err(e) => return bad_gateway(&e),
    };
    let mut all = std::collections::BTreeSet::new();
    for data in info.broker_addr_table.values() {
        let Some(addr) = data.master_addr() else {
            continue;
        };
        match st.client.subscription_groups(addr).await {
            Ok(w) => all.extend(w.subscription_group_table.into_keys()),
            Err(e) => return bad_gateway(&e),
        }
    }
    let groups: Vec<Value> = all
        .into_iter()
        .map(|g| json!({ "group": g, "system": system::is_system_group(&g) }))
        .collect();
    Json(json!({ "groups": groups })).into_response()
}

/// `?group=`.
#[derive(Debug, Deserialize)]
pub struct GroupQuery {
    group: String,
}

/// GET /api/group?group=: its progress per queue and its total lag (`consumerProgress`),
/// and its online clients (`consumerConnection`).
pub async fn group(State(st): S, Query(q): Query<GroupQuery>) -> Response {
    let group = q.group.trim();
    let stats = match examine_consume_stats(&st.client, group, None).await {
        Ok(s) => s,
        Err(e) => return bad_gateway(&e),
    };
    let mut queues = Vec::new();
    let mut diff_total = 0i64;
    for (mq, o) in &stats.offset_table {
        let diff = o.broker_offset - o.consumer_offset;
        diff_total += diff;
        queues.push(json!({
            "topic": mq.topic,
            "brokerName": mq.broker_name,
            "queueId": mq.queue_id,
            "brokerOffset": o.broker_offset,
            "consumerOffset": o.consumer_offset,
            "diff": diff,
            "lastTimestamp": o.last_timestamp,
        }));
    }
    let (clients, connection_error) = match examine_consumer_connection(&st.client, group).await {
        Ok(c) => (
            c.connection_set
                .iter()
                .map(|x| {
                    json!({
                        "clientId": x.client_id,
                        "clientAddr": x.client_addr,
                        "language": format!("{:?}", x.language),
                        "version": remoting::protocol::constants::version_name(x.version),
                    })
                })
                .collect::<Vec<_>>(),
            None,
        ),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    Json(json!({
        "group": group,
        "queues": queues,
        "diffTotal": diff_total,
        "consumeTps": stats.consume_tps,
        "clients": clients,
        "connectionError": connection_error,
    }))
    .into_response()
}

/// `?id=` (and `topic=`), `?topic=&key=`, `?topic=&broker=&queue=&offset=`, or
/// `?topic=&begin=&end=` (ms).
#[derive(Debug, Deserialize)]
pub struct MessageQuery {
    id: Option<String>,
    topic: Option<String>,
    key: Option<String>,
    broker: Option<String>,
    queue: Option<i32>,
    offset: Option<i64>,
    begin: Option<i64>,
    end: Option<i64>,
}

/// Most messages a time range lists.
const TIME_RANGE_MAX: usize = 64;

fn message_json(m: &StoredMessage) -> Value {
    let properties: BTreeMap<String, String> = m
        .properties
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    json!({
        "msgId": m.msg_id(),
        "offsetMsgId": m.offset_msg_id(),
        "topic": m.topic,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "commitLogOffset": m.commit_log_offset,
        "tags": m.tags(),
        "keys": m.keys(),
        "bornTimestamp": m.born_timestamp,
        "bornHost": m.born_host.to_string(),
        "storeTimestamp": m.store_timestamp,
        "storeHost": m.store_host.to_string(),
        "reconsumeTimes": m.reconsume_times,
        "storeSize": m.store_size,
        "body": String::from_utf8_lossy(&m.body),
        "bodyLength": m.body.len(),
        "properties": properties,
    })
}

/// GET /api/message: one message by id (`queryMsgById`) or by offset
/// (`queryMsgByOffset`), or the messages of a key (`queryMsgByKey`) or of a time range.
pub async fn message(State(st): S, Query(q): Query<MessageQuery>) -> Response {
    let topic = q.topic.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let found: Result<Vec<StoredMessage>, ToolsError> = if let Some(id) =
        q.id.as_deref().map(str::trim).filter(|s| !s.is_empty())
    {
        find_by_id(&st.client, id, topic).await.map(|m| vec![m])
    } else if let (Some(t), Some(key)) = (topic, q.key.as_deref().map(str::trim)) {
        query_message(&st.client, t, key, 64, 0, i64::MAX, false)
            .await
            .map(|v| v.into_iter().map(|(_, m)| m).collect())
    } else if let (Some(t), Some(b), Some(queue), Some(offset)) =
        (topic, q.broker.as_deref(), q.queue, q.offset)
    {
        find_by_offset(&st.client, t, b.trim(), queue, offset)
            .await
            .map(|m| vec![m])
    } else if let (Some(t), Some(begin)) = (topic, q.begin) {
        find_by_time(
            &st.client,
            t,
            begin,
            q.end.unwrap_or(i64::MAX),
            TIME_RANGE_MAX,
        )
        .await
    } else {
        return fail(
            StatusCode::BAD_REQUEST,
            "give id, topic and key, topic, broker, queue and offset, or topic and a time range",
        );
    };
    match found {
        Ok(list) => {
            let messages: Vec<Value> = list.iter().map(message_json).collect();
            Json(json!({ "messages": messages })).into_response()
        }
        Err(e) => bad_gateway(&e),
    }
}

/// Runs `mqadmin <args> -n <namesrv>` in process, signed with the form's credentials when
/// given; `{ok, output}` with what it printed.
async fn run_mqadmin(st: &Shared, args: Vec<String>, creds: &Credentials) -> Response {
    let mut argv: Vec<String> = vec!["mqadmin".to_owned()];
    argv.extend(args);
    argv.push("-n".to_owned());
    argv.push(st.namesrv.clone());
    if let Some(ak) = creds.access_key.as_deref().filter(|s| !s.is_empty()) {
        argv.push("--accessKey".to_owned());
        argv.push(ak.to_owned());
        argv.push("--secretKey".to_owned());
        argv.push(creds.secret_key.clone().unwrap_or_default());
    }
    let cli = match <crate::mqadmin::Cli as clap::Parser>::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => return fail(StatusCode::BAD_REQUEST, e.to_string().trim()),
    };
    // The command writes to plain `Write`s: it runs on a blocking thread of its own.
    let handle = tokio::runtime::Handle::current();
    let ran = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let result = handle.block_on(tokio::time::timeout(
            ACTION_TIMEOUT,
            crate::mqadmin::run(&cli, &mut out, &mut err),
        ));
        let mut output = String::from_utf8_lossy(&out).into_owned();
        output.push_str(&String::from_utf8_lossy(&err));
        (result, output)
    })
    .await;
    let (result, mut output) = match ran {
        Ok(r) => r,
        Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    match result {
        Ok(Ok(())) => Json(json!({ "ok": true, "output": output })).into_response(),
        Ok(Err(e)) => {
            output.push_str(&e.to_string());
            (
                StatusCode::BAD_GATEWAY,
                Json(json!({ "ok": false, "output": output, "error": e.to_string() })),
            )
                .into_response()
        }
        Err(_) => fail(StatusCode::GATEWAY_TIMEOUT, "the action timed out"),
    }
}

/// The operator's credentials, when the cluster checks changing requests.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    access_key: Option<String>,
    secret_key: Option<String>,
}

/// The form of a topic creation or update.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicForm {
    topic: String,
    cluster: String,
    read_queue_nums: Option<u32>,
    write_queue_nums: Option<u32>,
    perm: Option<u32>,
    #[serde(flatten)]
    creds: Credentials,
}

/// POST /api/topic/update: `mqadmin updateTopic`.
pub async fn update_topic(State(st): S, Json(f): Json<TopicForm>) -> Response {
    let mut args = vec![
        "updateTopic".to_owned(),
        "-c".to_owned(),
        f.cluster.trim().to_owned(),
        "-t".to_owned(),
        f.topic.trim().to_owned(),
    ];
    if let Some(r) = f.read_queue_nums {
        args.extend(["-r".to_owned(), r.to_string()]);
    }
    if let Some(w) = f.write_queue_nums {
        args.extend(["-w".to_owned(), w.to_string()]);
    }
    if let Some(p) = f.perm {
        args.extend(["-p".to_owned(), p.to_string()]);
    }
    run_mqadmin(&st, args, &f.creds).await
}

/// The form of a topic deletion.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteForm {
    topic: String,
    cluster: String,
    #[serde(flatten)]
    creds: Credentials,
}

/// POST /api/topic/delete: `mqadmin deleteTopic`.
pub async fn delete_topic(State(st): S, Json(f): Json<DeleteForm>) -> Response {
    let args = vec![
        "deleteTopic".to_owned(),
        "-c".to_owned(),
        f.cluster.trim().to_owned(),
        "-t".to_owned(),
        f.topic.trim().to_owned(),
    ];
    run_mqadmin(&st, args, &f.creds).await
}

/// The form of an offset reset.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetForm {
    group: String,
    topic: String,
    /// `now`, epoch ms, or `yyyy-MM-dd#HH:mm:ss:SSS` (as `resetOffsetByTime -s`).
    timestamp: String,
    #[serde(flatten)]
    creds: Credentials,
}

/// POST /api/group/reset: `mqadmin resetOffsetByTime`.
pub async fn reset_offset(State(st): S, Json(f): Json<ResetForm>) -> Response {
    let args = vec![
        "resetOffsetByTime".to_owned(),
        "-g".to_owned(),
        f.group.trim().to_owned(),
        "-t".to_owned(),
        f.topic.trim().to_owned(),
        "-s".to_owned(),
        f.timestamp.trim().to_owned(),
    ];
    run_mqadmin(&st, args, &f.creds).await
}

/// The form of a resend to one consumer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResendForm {
    id: String,
    topic: Option<String>,
    group: String,
    client_id: String,
    #[serde(flatten)]
    creds: Credentials,
}

/// POST /api/message/resend: `mqadmin queryMsgById -i ID -g GROUP -d CLIENT` (the message
/// given to that consumer again).
pub async fn resend(State(st): S, Json(f): Json<ResendForm>) -> Response {
    let mut args = vec![
        "queryMsgById".to_owned(),
        "-i".to_owned(),
        f.id.trim().to_owned(),
        "-g".to_owned(),
        f.group.trim().to_owned(),
        "-d".to_owned(),
        f.client_id.trim().to_owned(),
    ];
    if let Some(t) = f.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        args.extend(["-t".to_owned(), t.to_owned()]);
    }
    run_mqadmin(&st, args, &f.creds).await
}
