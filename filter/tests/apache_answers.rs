//! Golden test: every case of `fixtures/apache-5.3.3-selectors.txt` (requests answered
//! by Apache RocketMQ 5.3.3's own filter) is answered the same by ours: the same parse
//! error text, the same result, the same printed expression.

mod support;

#[test]
fn answers_match_apache_5_3_3() {
    let text = include_str!("fixtures/apache-5.3.3-selectors.txt");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(lines.len() > 2000, "fixture too small: {}", lines.len());
    let mut differences = Vec::new();
    for case in lines.chunks_exact(2) {
        let ours = support::answers::answer(case[0]);
        if ours != case[1] {
            differences.push(format!(
                "request {}\n  ours   {ours}\n  apache {}",
                case[0], case[1]
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} cases differ:\n{}",
        differences.len(),
        lines.len() / 2,
        differences[..differences.len().min(10)].join("\n")
    );
}
