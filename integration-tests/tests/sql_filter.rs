//! SQL92 property filters (issue 15 part 1) with the official Java client 5.3.3
//! (`MessageSelector.bySql`, `java/src/main/java/sluice/it/SqlFilter.java`), each case run the
//! same way against sluice (our `mqnamesrv` + `mqbroker`) and against Apache RocketMQ 5.3.3's
//! broker (from Maven Central, registered with our name server), so the expectation is Apache's
//! own behaviour:
//!
//! - **delivered**: with `enablePropertyFilter=true`, a push consumer started before the messages
//!   are sent (its pulls are held and must wake for matching messages only) and lite pull
//!   consumers started after (their pulls carry the expression): each gets exactly the messages
//!   its expression selects, computed here from the properties the producer set (including a
//!   missing property, which is null and matches neither `=` nor `<>`), and none other.
//! - **refused**: an expression RocketMQ does not compile (a string ordered with `>`, a syntax
//!   error) stops the consumer's start with SUBSCRIPTION_PARSE_FAILED (23) and the parser's own
//!   message; with `enablePropertyFilter=false` the start fails with SYSTEM_ERROR (1) "The broker
//!   does not support consumer to filter message by SQL92". Both consumer kinds, the same text
//!   from both brokers.
//! - **live oracle**: random expressions and property sets answered by Apache's own filter
//!   (`java-broker/oracle/SqlOracle.java` on `rocketmq-filter-5.3.3.jar`) and by the `filter`
//!   crate: the same parse error texts, the same results (the recorded fixture of
//!   `filter/tests/` does the same without Java).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed step should fail the test"
)]

use integration_tests::spawn::GatedCommand;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use integration_tests::harness::{
    ApacheBroker, BrokerProcess, ChildOutput, NamesrvProcess, create_topic, unique_name,
};
use integration_tests::java::{JavaTools, PRODUCE_TIMEOUT, Recv, V5, apache_dist};

#[path = "../../filter/tests/support/answers.rs"]
mod answers;

/// The Apache RocketMQ broker every case is also run against.
const APACHE: &str = "5.3.3";
/// Messages sent per case.
const COUNT: usize = 200;
/// How long a consumer may take to start and get its messages.
const CONSUME_TIMEOUT: Duration = Duration::from_secs(150);

/// The broker a case runs against.
enum Broker {
    Sluice(BrokerProcess),
    Apache(ApacheBroker),
}

/// A name server and one broker, sluice's or Apache's, and the Java 5.3.3 client programs.
struct Target {
    name: &'static str,
    broker: Broker,
    // Dropped after the broker (fields drop in order).
    ns: NamesrvProcess,
    java: &'static JavaTools,
}

impl Target {
    fn sluice(property_filter: bool) -> Target {
        let ns = NamesrvProcess::start();
        let on = property_filter.to_string();
        let broker = BrokerProcess::start_with(&ns.addr(), &[("enablePropertyFilter", &on)]);
        Target {
            name: "sluice",
            broker: Broker::Sluice(broker),
            ns,
            java: JavaTools::get(V5),
        }
    }

    fn apache(property_filter: bool) -> Target {
        let ns = NamesrvProcess::start();
        let on = property_filter.to_string();
        let broker = ApacheBroker::start(
            APACHE,
            &ns.addr(),
            "ASYNC_MASTER",
            0,
            &[("enablePropertyFilter", &on)],
        );
        Target {
            name: "Apache 5.3.3",
            broker: Broker::Apache(broker),
            ns,
            java: JavaTools::get(V5),
        }
    }

    fn broker_log(&self) -> String {
        match &self.broker {
            Broker::Sluice(b) => b.process_ref().log_tails(),
            Broker::Apache(b) => b.log_tail(),
        }
    }

    /// A new topic of four queues.
    fn topic(&self) -> String {
        let topic = unique_name("Sql");
        create_topic(&self.ns.addr(), &topic, 4);
        topic
    }

    /// [`COUNT`] messages of `SqlFilter produce`.
    fn produce(&self, topic: &str) {
        let ns = self.ns.addr();
        let count = COUNT.to_string();
        let out = self.java.run(
            "sluice.it.SqlFilter",
            &[
                "produce",
                "--namesrv",
                &ns,
                "--topic",
                topic,
                "--count",
                &count,
            ],
            PRODUCE_TIMEOUT,
        );
        out.assert_ok();
        assert_eq!(
            out.stdout
                .lines()
                .filter(|l| l.starts_with("SENT "))
                .count(),
            COUNT,
            "{}: {out}",
            self.name
        );
    }

    /// The arguments of `SqlFilter consume` for a new group.
    fn consume_args(&self, topic: &str, kind: &str, sql: &str, count: usize) -> Vec<String> {
        [
            "consume",
            "--namesrv",
            &self.ns.addr(),
            "--topic",
            topic,
            "--group",
            &unique_name("SqlC"),
            "--kind",
            kind,
            "--sql",
            sql,
            "--count",
            &count.to_string(),
            "--linger-ms",
            "3000",
            "--wait-ms",
            &CONSUME_TIMEOUT.as_millis().to_string(),
        ]
        .map(str::to_owned)
        .to_vec()
    }
}

/// The properties `SqlFilter produce` gives message `i`.
struct Msg {
    i: usize,
    tag: &'static str,
    color: Option<&'static str>,
    vip: bool,
}

fn msg(i: usize) -> Msg {
    Msg {
        i,
        tag: if i % 2 == 0 { "TagA" } else { "TagB" },
        color: (i % 25 != 0).then(|| ["red", "green", "blue"][i % 3]),
        vip: i % 7 == 0,
    }
}

/// Each case: the consumer kind, the expression, and which messages it selects (written
/// here independently of any SQL evaluator).
type Case = (&'static str, &'static str, fn(&Msg) -> bool);

const CASES: [Case; 4] = [
    (
        "push",
        "(idx BETWEEN 10 AND 59 AND color IN ('red', 'blue')) OR vip = 'true'",
        |m| ((10..=59).contains(&m.i) && matches!(m.color, Some("red" | "blue"))) || m.vip,
    ),
    (
        "lite",
        "TAGS = 'TagB' AND mod10 >= 5 AND color IS NOT NULL",
        |m| m.tag == "TagB" && m.i % 10 >= 5 && m.color.is_some(),
    ),
    ("lite", "color <> 'red' AND NOT (idx > 150)", |m| {
        m.color.is_some_and(|c| c != "red") && m.i <= 150
    }),
    ("push", "mod10 = 3 AND TAGS IS NOT NULL", |m| m.i % 10 == 3),
];

/// Bodies a consumer printed.
fn received(out: &ChildOutput) -> Vec<String> {
    Recv::all(out.stdout.lines())
        .into_iter()
        .map(|r| r.body)
        .collect()
}

fn delivered(t: &Target) {
    // The push consumers start first: their pulls are held until matching messages arrive.
    let topic = t.topic();
    let pushes: Vec<_> = CASES
        .iter()
        .filter(|(kind, ..)| *kind == "push")
        .map(|case| {
            let (kind, sql, select) = case;
            let want = (0..COUNT).filter(|&i| select(&msg(i))).count();
            let args = t.consume_args(&topic, kind, sql, want);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let c = t.java.spawn("sluice.it.SqlFilter", &refs);
            assert!(
                c.wait_for_line("STARTED", Duration::from_secs(90))
                    .is_some(),
                "{}: {sql}: the consumer did not start:\n{}",
                t.name,
                c.log_tails()
            );
            (case, c)
        })
        .collect();
    // Let the push consumers' first pulls reach the broker and be held.
    std::thread::sleep(Duration::from_secs(3));
    t.produce(&topic);
    let mut outputs = Vec::new();
    for ((kind, sql, select), c) in pushes {
        outputs.push((
            *kind,
            *sql,
            *select,
            c.wait(CONSUME_TIMEOUT + Duration::from_secs(30)),
        ));
    }
    for (kind, sql, select) in CASES.iter().filter(|(kind, ..)| *kind == "lite") {
        let want = (0..COUNT).filter(|&i| select(&msg(i))).count();
        let args = t.consume_args(&topic, kind, sql, want);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = t.java.run(
            "sluice.it.SqlFilter",
            &refs,
            CONSUME_TIMEOUT + Duration::from_secs(30),
        );
        outputs.push((*kind, *sql, *select, out));
    }
    for (kind, sql, select, out) in outputs {
        let want: BTreeSet<String> = (0..COUNT)
            .filter(|&i| select(&msg(i)))
            .map(|i| format!("sql-{i}"))
            .collect();
        let got = received(&out);
        let got_set: BTreeSet<String> = got.iter().cloned().collect();
        assert!(
            out.success() && got_set == want && got.len() == want.len(),
            "{}: {kind} {sql}: {} delivered ({} distinct), {} expected\n\
             missing {:?}\nunexpected {:?}\n{out}\nbroker:\n{}",
            t.name,
            got.len(),
            got_set.len(),
            want.len(),
            want.difference(&got_set).collect::<Vec<_>>(),
            got_set.difference(&want).collect::<Vec<_>>(),
            t.broker_log()
        );
        eprintln!(
            "{}: {kind} {sql}: {} of {COUNT} delivered, as expected",
            t.name,
            got.len()
        );
    }
}

/// The `ERR start` line of a consumer of `sql` that must not start.
fn refusal(t: &Target, topic: &str, kind: &str, sql: &str) -> String {
    let args = t.consume_args(topic, kind, sql, 1);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = t
        .java
        .run("sluice.it.SqlFilter", &refs, Duration::from_secs(90));
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("ERR start "))
        .map(str::to_owned);
    assert!(
        !out.success() && line.is_some(),
        "{}: {kind} {sql}: the consumer was not refused:\n{out}",
        t.name
    );
    line.unwrap()
}

/// What Apache 5.3.3's client prints when its start is refused (`MQClientException` of
/// CHECK_CLIENT_CONFIG's answer, as `Harness.describe` writes it).
fn refused_with(code: i32, remark: &str) -> String {
    format!(
        "ERR start MQClientException: CODE: {code} DESC: {remark} For more information, please visit the url, https://rocketmq.apache.org/docs/bestPractice/06FAQ"
    )
}

fn bad_expressions_refused(t: &Target) {
    let topic = t.topic();
    let cases = [
        (
            "a > 'x'",
            "java.lang.RuntimeException: Value ''x'' cannot be compared.",
        ),
        (
            "a IN 5",
            "org.apache.rocketmq.filter.parser.ParseException: Encountered \" <DECIMAL_LITERAL> \"5 \"\" at line 1, column 6. Was expecting: \"(\" ...",
        ),
    ];
    for kind in ["push", "lite"] {
        for (sql, remark) in cases {
            let line = refusal(t, &topic, kind, sql);
            assert_eq!(line, refused_with(23, remark), "{}: {kind} {sql}", t.name);
        }
    }
}

fn refused_when_off(t: &Target) {
    let topic = t.topic();
    for kind in ["push", "lite"] {
        let line = refusal(t, &topic, kind, "a > 1");
        assert_eq!(
            line,
            refused_with(
                1,
                "The broker does not support consumer to filter message by SQL92"
            ),
            "{}: {kind}",
            t.name
        );
    }
}

#[test]
fn delivered_sluice() {
    integration_tests::require_tools!(Java, Maven);
    let t = Target::sluice(true);
    delivered(&t);
    bad_expressions_refused(&t);
}

#[test]
fn delivered_apache_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    let t = Target::apache(true);
    delivered(&t);
    bad_expressions_refused(&t);
}

#[test]
fn refused_when_off_sluice() {
    integration_tests::require_tools!(Java, Maven);
    refused_when_off(&Target::sluice(false));
}

#[test]
fn refused_when_off_apache_5_3_3() {
    integration_tests::require_tools!(Java, Maven);
    refused_when_off(&Target::apache(false));
}

// ---------------------------------------------------------------------------- the live oracle

/// Random expressions (mostly well formed, some mangled) and property sets.
fn requests(seed: u64, n: usize) -> Vec<String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let props = ["a", "b", "c", "TAGS"];
    let values = [
        "1",
        "0",
        "3",
        "10",
        "-5",
        "+7",
        "1.5",
        "1e3",
        "abc",
        "true",
        "TRUE",
        "x",
        "",
        " 3 ",
        "NaN",
        "0x10",
        "1.5f",
        "٣",
        "2147483648",
        "é",
    ];
    let literals = [
        "1",
        "0",
        "3",
        "10",
        "2147483648",
        "10L",
        "1.5",
        "1e3",
        ".5",
        "0.0",
        "1e400",
        "'x'",
        "'3'",
        "''",
        "'it''s'",
        "TRUE",
        "FALSE",
        "NULL",
    ];
    let pick = |rng: &mut fastrand::Rng, items: &[&'static str]| items[rng.usize(..items.len())];
    let atom = |rng: &mut fastrand::Rng| -> String {
        match rng.u8(..10) {
            0..=3 => pick(rng, &props).to_owned(),
            4..=7 => pick(rng, &literals).to_owned(),
            8 => format!("-{}", pick(rng, &literals)),
            _ => format!("NOT {}", pick(rng, &props)),
        }
    };
    let mut out = Vec::new();
    for _ in 0..n {
        let mut parts = Vec::new();
        for j in 0..rng.usize(1..4) {
            if j > 0 {
                parts.push(pick(&mut rng, &["AND", "OR", "and"]).to_owned());
            }
            let l = atom(&mut rng);
            let c = match rng.u8(..8) {
                0 => l,
                1 => format!("{l} IS NULL"),
                2 => format!("{l} IS NOT NULL"),
                3 => format!("{l} BETWEEN {} AND {}", atom(&mut rng), atom(&mut rng)),
                4 => format!("{l} IN ('x', '3', 'abc')"),
                5 => format!("{l} CONTAINS 'b'"),
                _ => {
                    let op = pick(&mut rng, &["=", "<>", ">", ">=", "<", "<="]);
                    format!("{l} {op} {}", atom(&mut rng))
                }
            };
            parts.push(if rng.u8(..5) == 0 {
                format!("({c})")
            } else {
                c
            });
        }
        let mut sql = parts.join(" ");
        if rng.u8(..4) == 0 {
            let cut = rng.usize(..=sql.len());
            if sql.is_char_boundary(cut) {
                sql.truncate(cut);
            }
        }
        let mut fields = vec![answers::escape(&sql)];
        for p in props {
            if rng.bool() {
                fields.push(p.to_owned());
                fields.push(answers::escape(pick(&mut rng, &values)));
            }
        }
        out.push(fields.join("\t"));
    }
    out
}

#[test]
fn apache_filter_agrees_on_random_expressions() {
    integration_tests::require_tools!(Java, Maven);
    let dist = apache_dist(APACHE).unwrap_or_else(|e| panic!("{e}"));
    let oracle = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/java-broker/oracle/SqlOracle.java"
    );
    let seed = fastrand::u64(..);
    let lines = requests(seed, 20_000);
    let mut child = Command::new(integration_tests::harness::tools::java_binary())
        .arg("-cp")
        .arg(&dist.classpath)
        .arg(oracle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .gated_spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = lines.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = String::from_utf8(out.stdout).unwrap();
    let theirs: Vec<&str> = theirs.lines().collect();
    assert_eq!(theirs.len(), lines.len());
    let differences: Vec<String> = lines
        .iter()
        .zip(&theirs)
        .filter_map(|(req, apache)| {
            let ours = answers::answer(req);
            (ours != *apache).then(|| format!("request {req}\n  ours   {ours}\n  apache {apache}"))
        })
        .collect();
    assert!(
        differences.is_empty(),
        "seed {seed}: {} of {} differ:\n{}",
        differences.len(),
        lines.len(),
        differences[..differences.len().min(10)].join("\n")
    );
}
