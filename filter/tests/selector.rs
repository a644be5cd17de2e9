//! The selector's behaviour as RocketMQ 5.3.3 defines it (the cases of its own
//! `ExpressionTest` and `ParserTest`, and what reading its expression classes shows),
//! bounded nesting, and property tests: no input panics, and the language's identities
//! hold.

#![allow(clippy::unwrap_used, reason = "tests")]

use filter::{ErrorKind, Fault, MAX_DEPTH, Selector};
use proptest::prelude::*;

/// The result for a message with these properties: `Some(true/false)`, `None` for null,
/// or the fault.
fn eval(sql: &str, props: &[(&str, &str)]) -> Result<Option<bool>, Fault> {
    let s = Selector::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let values: Vec<_> = s
        .property_names()
        .iter()
        .map(|n| {
            props
                .iter()
                .rev()
                .find(|(k, _)| *k == &**n)
                .map(|(_, v)| *v)
        })
        .collect();
    s.evaluate(&values)
}

fn error(sql: &str) -> String {
    Selector::parse(sql).unwrap_err().to_string()
}

#[test]
fn logic_is_three_valued() {
    let t = Ok(Some(true));
    let f = Ok(Some(false));
    let null = Ok(None);
    // RocketMQ's own examples.
    let p = [("a", "3"), ("b", "3"), ("c", "6"), ("d", "4")];
    assert_eq!(eval("a=3 and b<>4 And c>5 AND d<=4", &p), t);
    assert_eq!(eval("a=3 or b<>4 Or c>5 OR d<=4", &[("a", "4")]), null);
    assert_eq!(eval("a is not null and a='hello'", &[("a", "hello")]), t);
    assert_eq!(eval("a is null OR a='hello'", &[]), t);
    // Null (a missing property) is neither true nor false; NOT keeps it null.
    assert_eq!(eval("a = 'x'", &[]), null);
    assert_eq!(eval("a <> 'x'", &[]), null);
    assert_eq!(eval("NOT (a = 'x')", &[]), null);
    assert_eq!(eval("a = 'x' AND b = 'y'", &[("b", "z")]), f);
    assert_eq!(eval("a = 'x' OR b = 'y'", &[("b", "y")]), t);
    assert_eq!(eval("a = 'x' OR b = 'y'", &[("b", "z")]), null);
    assert_eq!(eval("TRUE", &[]), t);
    assert_eq!(eval("NULL", &[]), null);
}

#[test]
fn strings_meet_numbers_as_java_converts_them() {
    let t = Ok(Some(true));
    let f = Ok(Some(false));
    // The property is converted to the literal's type (Integer, Long, Double).
    assert_eq!(eval("a = 10", &[("a", "10")]), t);
    assert_eq!(eval("a = 10", &[("a", "+10")]), t);
    assert_eq!(eval("a > 5", &[("a", "10")]), t);
    assert_eq!(eval("a > 5.0", &[("a", "10.5")]), t);
    assert_eq!(eval("a = 1.0", &[("a", "1")]), t);
    assert_eq!(eval("a = 8.0", &[("a", " 0x1p3 ")]), t);
    // ...and when Java cannot convert it, the message does not match at all.
    assert_eq!(eval("a > 5", &[("a", "10.5")]), Err(Fault::NumberFormat));
    assert_eq!(
        eval("a = 1", &[("a", "2147483648")]),
        Err(Fault::NumberFormat)
    );
    assert_eq!(eval("a = 2147483648", &[("a", "2147483648")]), t);
    assert_eq!(
        eval("a > 1 OR b = 1", &[("a", "q"), ("b", "1")]),
        Err(Fault::NumberFormat)
    );
    assert_eq!(eval("b = 1 OR a > 1", &[("a", "q"), ("b", "1")]), t);
    // Two strings order only as numbers.
    assert_eq!(eval("a > b", &[("a", "10"), ("b", "9")]), t);
    assert_eq!(
        eval("a > b", &[("a", "x"), ("b", "9")]),
        Err(Fault::StringComparison)
    );
    // Booleans: "true" in any case is TRUE, anything else FALSE.
    assert_eq!(eval("a = TRUE", &[("a", "True")]), t);
    assert_eq!(eval("a = FALSE", &[("a", "anything")]), t);
    assert_eq!(eval("TRUE = a", &[("a", "true")]), Err(Fault::ClassCast));
    // A bare property is a boolean cast: a string is never TRUE.
    assert_eq!(eval("a", &[("a", "true")]), f);
    assert_eq!(eval("NOT a", &[("a", "x")]), t);
}

#[test]
fn between_in_and_string_tests() {
    let t = Ok(Some(true));
    let f = Ok(Some(false));
    assert_eq!(eval("a between 2 and 10", &[("a", "2")]), t);
    assert_eq!(eval("a not between 2 and 10", &[("a", "11")]), t);
    assert_eq!(eval("a BETWEEN -1 AND 5", &[("a", "0")]), t);
    assert_eq!(eval("a in ('3', '4', '5')", &[("a", "4")]), t);
    assert_eq!(eval("a not in ('3', '4', '5')", &[("a", "4")]), f);
    assert_eq!(eval("a not in ('3')", &[]), Ok(None));
    let long = "a IN ('1','2','3','4','5','6','7','8','9','10')";
    assert_eq!(eval(long, &[("a", "7")]), t);
    assert_eq!(eval(long, &[("a", "11")]), f);
    for (sql, want) in [
        ("value contains 'x'", t),
        ("value startswith 'ax'", t),
        ("value endswith 'xb'", t),
        ("value not contains 'x'", f),
        ("value contains ''", f),
        ("value not contains ''", f),
        ("'axb' contains 'x'", t),
    ] {
        assert_eq!(eval(sql, &[("value", "axb")]), want, "{sql}");
    }
    // A missing property never contains anything, nor lacks it.
    assert_eq!(eval("value contains 'x'", &[]), f);
    assert_eq!(eval("value not contains 'x'", &[]), f);
    assert_eq!(
        eval(
            "a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'",
            &[("a", "3"), ("b", "3"), ("c", "axbdc")]
        ),
        t
    );
    assert_eq!(
        eval(
            "TAGS is not null and TAGS='''''tag'''''",
            &[("TAGS", "''tag''")]
        ),
        t
    );
}

#[test]
fn precedence_follows_the_grammar() {
    // NOT binds tighter than comparisons: NOT a = 1 is (NOT a) = 1, never true.
    assert_eq!(eval("NOT a = 1", &[("a", "1")]), Ok(Some(false)));
    assert_eq!(
        eval("a = 1 OR b = 2 AND c = 3", &[("a", "1"), ("c", "4")]),
        Ok(Some(true))
    );
    assert_eq!(
        eval("(a = 1 OR b = 2) AND c = 3", &[("a", "1"), ("c", "4")]),
        Ok(Some(false))
    );
    // Keywords in any case; whatever follows a complete expression is never read.
    assert_eq!(
        eval("a = 1 AnD b Is NoT nUlL", &[("a", "1"), ("b", "")]),
        Ok(Some(true))
    );
    assert_eq!(eval("a = 1 b c", &[("a", "1")]), Ok(Some(true)));
    assert_eq!(
        eval("a = 1 -- no line break", &[("a", "1")]),
        Ok(Some(true))
    );
}

#[test]
fn refused_as_rocketmq_refuses() {
    let cases = [
        (
            "a > 'x'",
            "java.lang.RuntimeException: Value ''x'' cannot be compared.",
        ),
        (
            "a = NULL",
            "java.lang.RuntimeException: 'NULL' cannot be compared.",
        ),
        (
            "TRUE = 1",
            "java.lang.RuntimeException: 'TRUE' cannot be compared with '1'",
        ),
        (
            "a BETWEEN 2 AND 1",
            "java.lang.RuntimeException: Illegal values of between, left value(2) must less than or equal to right value(1)",
        ),
        (
            "'x' IN ('x')",
            "java.lang.RuntimeException: Expected a property for In expression, got: 'x'",
        ),
        (
            "a > 1 > 2",
            "java.lang.RuntimeException: Value '(a > 1)' cannot be compared.",
        ),
        (
            "a = 0.0",
            "java.lang.RuntimeException: 0.0 is less than 4.9E-324",
        ),
        (
            "a = 9223372036854775808",
            "java.lang.NumberFormatException: For input string: \"9223372036854775808\"",
        ),
        (
            "1",
            "org.apache.rocketmq.filter.parser.ParseException: Expression will not result in a boolean value: 1",
        ),
        (
            "a = 1 #",
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line 1, column 8.  Encountered: <EOF> after : \"\"",
        ),
        (
            "a IN 5",
            "org.apache.rocketmq.filter.parser.ParseException: Encountered \" <DECIMAL_LITERAL> \"5 \"\" at line 1, column 6.\nWas expecting:\n    \"(\" ...\n    ",
        ),
        (
            "a IS x",
            "org.apache.rocketmq.filter.parser.ParseException: Encountered \" <ID> \"x \"\" at line 1, column 6.\nWas expecting one of:\n    \"NOT\" ...\n    \"NULL\" ...\n    ",
        ),
    ];
    for (sql, want) in cases {
        assert_eq!(error(sql), want, "{sql}");
    }
    assert_eq!(
        Selector::parse("a >").unwrap_err().kind(),
        ErrorKind::Syntax
    );
    assert_eq!(
        Selector::parse("a # 1").unwrap_err().kind(),
        ErrorKind::Lexical
    );
    assert_eq!(
        Selector::parse("a > 'x'").unwrap_err().kind(),
        ErrorKind::Invalid
    );
}

/// Runs `f` on a thread with half the stack of a tokio worker: deep inputs must be
/// refused, not overflow it (a debug build's frames are the larger).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn nesting_is_bounded() {
    on_small_stack(|| {
        let nested = |open: &str, n: usize, close: &str| {
            format!("{}a = 1{}", open.repeat(n), close.repeat(n))
        };
        // Parentheses and unary operators count a level each ("+(" two).
        for (open, close, deepest) in [
            ("(", ")", MAX_DEPTH - 1),
            ("NOT ", "", MAX_DEPTH - 2),
            ("+(", ")", MAX_DEPTH / 2 - 1),
        ] {
            let s = Selector::parse(&nested(open, deepest, close));
            assert!(s.is_ok(), "{open} x {deepest}: {s:?}");
        }
        for (open, close) in [("(", ")"), ("+(", ")"), ("NOT ", ""), ("- ", ""), ("+", "")] {
            for n in [MAX_DEPTH + 1, 10_000, 100_000] {
                let e = Selector::parse(&nested(open, n, close)).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::TooDeep, "{open} x {n}");
            }
        }
        // Left-leaning chains: equalities nest, ANDs and ORs do not.
        let eq_chain = format!("a{}", " = a".repeat(10_000));
        assert_eq!(
            Selector::parse(&eq_chain).unwrap_err().kind(),
            ErrorKind::TooDeep
        );
        let and_chain = format!("a = '1'{}", " AND a = '1'".repeat(100_000));
        let s = Selector::parse(&and_chain).unwrap();
        assert!(s.matches(|_| Some("1")));
        assert!(!s.matches(|_| Some("2")));
        let s = Selector::parse(&nested("(", MAX_DEPTH - 1, ")")).unwrap();
        assert!(s.matches(|_| Some("1")));
    });
}

#[test]
fn properties_are_read_once_and_last_wins() {
    let s = Selector::parse("a = '1' AND TAGS IN ('t', 'u') AND a IS NOT NULL").unwrap();
    assert_eq!(s.property_names().len(), 2);
    assert!(s.matches_properties([("a", "0"), ("TAGS", "t"), ("a", "1")]));
    assert!(!s.matches_properties([("a", "1"), ("TAGS", "t"), ("a", "0")]));
    assert!(!s.matches_properties([("a", "1")]));
    let wide: String = (0..40)
        .map(|i| format!("p{i} = '{i}'"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let s = Selector::parse(&wide).unwrap();
    let pairs: Vec<(String, String)> = (0..40).map(|i| (format!("p{i}"), i.to_string())).collect();
    assert!(s.matches_properties(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))));
}

/// Text made of the language's pieces, so random inputs get past the lexer.
fn soup() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "a",
        "b",
        "TAGS",
        "NOT",
        "AND",
        "OR",
        "BETWEEN",
        "IN",
        "IS",
        "NULL",
        "TRUE",
        "FALSE",
        "CONTAINS",
        "STARTSWITH",
        "ENDSWITH",
        "=",
        "<>",
        ">",
        ">=",
        "<",
        "<=",
        "(",
        ")",
        ",",
        "+",
        "-",
        "1",
        "0",
        "2147483648",
        "1.5",
        "1e3",
        "0.0",
        "'x'",
        "'it''s'",
        "''",
        "'",
        "#",
        ".",
        "/*",
        "*/",
        "--",
        "\n",
        "\t",
        "é",
        " ",
    ]);
    prop::collection::vec(piece, 0..40).prop_map(|v| v.join(" "))
}

fn value() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop::sample::select(vec![
        "1",
        "0",
        "-3",
        "1.5",
        "x",
        "true",
        "",
        "NaN",
        "2147483648",
        "0x1p3",
        "١",
    ]))
    .prop_map(|v| v.map(str::to_owned))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_text_parses_or_fails_cleanly(text in "\\PC{0,80}") {
        let _ = Selector::parse(&text);
    }

    #[test]
    fn any_soup_parses_or_fails_and_evaluates(text in soup(), a in value(), b in value()) {
        if let Ok(s) = Selector::parse(&text) {
            let lookup = |name: &str| match name {
                "a" => a.as_deref(),
                "b" => b.as_deref(),
                _ => None,
            };
            let by_slot = s.matches(lookup);
            let pairs: Vec<(&str, &str)> = [("a", &a), ("b", &b)]
                .iter()
                .filter_map(|(k, v)| v.as_deref().map(|v| (*k, v)))
                .collect();
            prop_assert_eq!(by_slot, s.matches_properties(pairs));
            let _ = s.to_string();
        }
    }

    /// IN is a chain of equalities, BETWEEN a pair of comparisons, NOT BETWEEN their
    /// negation, and for a present property `x OR NOT x` holds.
    #[test]
    fn identities_hold(v in "[0-9]{1,3}|[a-c]", lo in 0i32..50, span in 0i32..50, items in prop::collection::vec("[0-9a-c]", 1..7)) {
        let props = [("a", v.as_str())];
        let quoted: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
        let in_list = eval(&format!("a IN ({})", quoted.join(", ")), &props);
        let ors = eval(&quoted.iter().map(|q| format!("a = {q}")).collect::<Vec<_>>().join(" OR "), &props);
        prop_assert_eq!(in_list, ors);
        let hi = lo + span;
        let between = eval(&format!("a BETWEEN {lo} AND {hi}"), &props);
        prop_assert_eq!(between, eval(&format!("a >= {lo} AND a <= {hi}"), &props));
        let not_between = eval(&format!("a NOT BETWEEN {lo} AND {hi}"), &props);
        match between {
            Ok(Some(b)) => prop_assert_eq!(not_between, Ok(Some(!b))),
            other => prop_assert_eq!(not_between, other),
        }
        prop_assert_eq!(eval("a = 'z' OR NOT (a = 'z')", &props), Ok(Some(true)));
    }
}
