//! The SQL92 filter scenarios (issue 15), both systems alike (`enablePropertyFilter=true`):
//! a backlog of 1 KiB messages, each with the user property `bucket` = its number modulo
//! 100, is read from the first offset to the end three times by `mqbench consumer
//! --catch-up`: unfiltered (`*`), then with `bucket < 1` (1% of the messages match) and
//! `bucket < 50` (50%). Every read scans the whole backlog; the figures are messages
//! scanned per second (backlog / read time), messages delivered, and broker CPU per
//! million scanned.
//!
//! - `sql-filter`: the pulls carry the expression, as a lite pull consumer's do; nothing
//!   is registered, so both brokers evaluate every record.
//! - `sql-filter-registered`: the two filter groups register their expression with a
//!   heartbeat before the backlog is written, and pull without it, as push consumers do:
//!   sluice fills its match index at dispatch (`filterMatchIndexEnable`, on by default),
//!   Apache its bloom filter (`enableCalcFilterBitMap=true` and `enableConsumeQueueExt=true`
//!   for this scenario; off by default).

use std::time::Duration;

use super::{
    Bench, MIB, Plan, QUEUES, RunResult, Sample, TOPIC, add_errors, create_topics, fill_backlog,
    num, strings,
};
use crate::bench::cluster::Cluster;

/// The user property the producer numbers.
const BUCKET: &str = "bucket";
/// Messages per send request of the fill.
const BATCH: u64 = 16;
/// The reads: metric prefix, expression (none: every tag), share of the backlog selected.
pub(super) const READS: [(&str, Option<&str>, f64); 3] = [
    ("all_", None, 1.0),
    ("sql1_", Some("bucket < 1"), 0.01),
    ("sql50_", Some("bucket < 50"), 0.5),
];

/// The backlog of this scenario: a quarter of the plan's catch-up backlog (three reads
/// of it, and the filtered ones are slower per message delivered).
fn backlog_bytes(plan: &Plan) -> u64 {
    plan.backlog_bytes / 4
}

/// The consumer group of a read.
fn group(prefix: &str) -> String {
    format!("bench_{prefix}read")
}

pub(super) fn filtered_reads(
    bench: &Bench<'_>,
    cluster: &mut Cluster,
    plan: &Plan,
    registered: bool,
    result: &mut RunResult,
) -> Result<(), String> {
    create_topics(bench, cluster, TOPIC, 1, QUEUES)?;
    if registered {
        for (prefix, sql, _) in READS {
            let Some(sql) = sql else { continue };
            let g = group(prefix);
            let args = strings(&[
                "consumer",
                "-t",
                TOPIC,
                "-g",
                &g,
                "--sql",
                sql,
                "--heartbeat",
                "--duration",
                "0s",
            ]);
            bench.run(&format!("{prefix}register"), &args, Duration::from_secs(60))?;
        }
    }
    let size = 1024u64;
    let messages = backlog_bytes(plan) / size;
    // The fill's broker CPU includes the dispatch-time indexing of registered filters.
    let fill = fill_backlog(
        bench,
        cluster,
        messages,
        size,
        BATCH,
        &["--bucket-property", BUCKET],
        result,
    )?;
    add_errors(result, &fill);
    let stored = num(&fill, &["messages"]);
    result
        .metrics
        .insert("fill_tps".to_owned(), num(&fill, &["tps"]));
    // A refused request (SYSTEM_BUSY, say) leaves the numbers of its whole batch out.
    #[allow(clippy::cast_precision_loss, reason = "a small count")]
    let failed = num(&fill, &["errors"]) * BATCH as f64;
    result.metrics.insert("backlog_messages".to_owned(), stored);
    result
        .metrics
        .insert("backlog_mib".to_owned(), stored * size as f64 / MIB);
    for (prefix, sql, share) in READS {
        let mut args = strings(&[
            "consumer",
            "-t",
            TOPIC,
            "-g",
            &group(prefix),
            "--from",
            "first",
            "--catch-up",
            "--duration",
            "1800s",
        ]);
        if let Some(sql) = sql {
            args.extend(strings(&["--sql", sql]));
            if registered {
                args.push("--heartbeat".to_owned());
            }
        }
        let sample = Sample::start(cluster);
        let read = bench.run(&format!("{prefix}read"), &args, Duration::from_secs(2000))?;
        let delivered = num(&read, &["messages"]);
        let secs = num(&read, &["duration_secs"]).max(1e-3);
        // CPU per million messages scanned (every read scans the whole backlog).
        sample.finish(cluster, stored, prefix, result);
        add_errors(result, &read);
        let m = &mut result.metrics;
        m.insert(format!("{prefix}secs"), secs);
        m.insert(format!("{prefix}scanned_per_s"), stored / secs);
        m.insert(format!("{prefix}delivered"), delivered);
        m.insert(format!("{prefix}delivered_per_s"), delivered / secs);
        // Messages were numbered 0..n in send order (a failed send skips its number):
        // `bucket < k` selects k of every full hundred, and the start of the last one.
        let (numbered, k) = (stored + failed, (share * 100.0).round());
        let want = (numbered / 100.0).floor() * k + (numbered % 100.0).min(k);
        if delivered > want || delivered < want - failed {
            return Err(format!(
                "{prefix}read: {delivered} of {stored} messages delivered, {want} expected"
            ));
        }
    }
    result.params.insert(
        "backlog".to_owned(),
        format!(
            "{} MiB of 1 KiB messages with {BUCKET} = 0..99",
            backlog_bytes(plan) >> 20
        ),
    );
    Ok(())
}
