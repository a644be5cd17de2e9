//! The per-message cost of a SQL92 filter: one selector evaluated against the
//! properties string of a typical message (the broker's pull path does this for every
//! unit it scans), for common shapes of expression; and the one-off cost of parsing.

#![allow(
    clippy::unwrap_used,
    reason = "benchmark setup: a failure should abort loudly"
)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use filter::Selector;

/// Properties as a Java 5.3.3 producer writes them, plus a few user properties.
const PROPS: &str = "KEYS\u{1}order-000123\u{2}TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}7F0000011B5C18B4AAC2000000000001\u{2}WAIT\u{1}true\u{2}region\u{1}eu-west\u{2}priority\u{1}5\u{2}vip\u{1}false\u{2}color\u{1}blue";

/// `name\x01value\x02...` pairs, as `message::properties::iter` reads them.
fn pairs(props: &str) -> impl Iterator<Item = (&str, &str)> {
    props.split('\u{2}').filter_map(|kv| {
        let i = kv.find('\u{1}')?;
        (i > 0 && i + 1 < kv.len()).then(|| (&kv[..i], &kv[i + 1..]))
    })
}

const CASES: [(&str, &str); 6] = [
    ("string_eq", "region = 'eu-west'"),
    ("numeric_gt", "priority > 3"),
    (
        "in_5",
        "color IN ('red', 'green', 'blue', 'black', 'white')",
    ),
    ("tags_in", "TAGS IN ('TagA', 'TagB')"),
    ("between_miss", "priority BETWEEN 10 AND 20"),
    (
        "compound",
        "region = 'eu-west' AND (priority > 3 OR vip = 'true') AND TAGS IS NOT NULL AND color NOT IN ('red')",
    ),
];

fn evaluate(c: &mut Criterion) {
    let mut g = c.benchmark_group("evaluate");
    g.throughput(Throughput::Elements(1));
    for (name, sql) in CASES {
        let s = Selector::parse(sql).unwrap();
        assert!(s.matches_properties(pairs(PROPS)) != (name == "between_miss"));
        g.bench_function(name, |b| {
            b.iter(|| black_box(&s).matches_properties(pairs(black_box(PROPS))));
        });
    }
    g.finish();
}

fn parse(c: &mut Criterion) {
    let sql = CASES[5].1;
    c.bench_function("parse/compound", |b| {
        b.iter(|| Selector::parse(black_box(sql)).unwrap());
    });
}

criterion_group!(benches, evaluate, parse);
criterion_main!(benches);
