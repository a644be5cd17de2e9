//! A reader of the Prometheus / OpenMetrics text a metrics endpoint answers, and plain
//! HTTP/1.1 on loopback (a scrape, the console's JSON), for the tests that check sluice's
//! metrics and console.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name as written (`rocketmq_messages_in_total`).
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if present.
    #[must_use]
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }
}

/// A whole scrape.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// Every sample, in order.
    pub samples: Vec<Sample>,
    /// `# TYPE` lines: family name → type.
    pub types: BTreeMap<String, String>,
}

impl Exposition {
    /// Samples named `name` whose labels include every pair of `labels`.
    #[must_use]
    pub fn find(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Sample> {
        self.samples
            .iter()
            .filter(|s| s.name == name && labels.iter().all(|(k, v)| s.label(k) == Some(*v)))
            .collect()
    }

    /// The sum of the values of [`Self::find`]'s samples (`None` when there are none).
    #[must_use]
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found = self.find(name, labels);
        (!found.is_empty()).then(|| found.iter().map(|s| s.value).sum())
    }
}

/// Parses exposition text.
///
/// # Errors
/// A line that is not a comment and not a sample, with its number.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let mut out = Exposition::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            if let (Some(name), Some(kind)) = (parts.next(), parts.next()) {
                out.types.insert(name.to_owned(), kind.to_owned());
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let sample = parse_sample(line).map_err(|e| format!("line {}: {e}: {line}", n + 1))?;
        out.samples.push(sample);
    }
    Ok(out)
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or_else(|| "no value".to_owned())?;
    let name = line[..name_end].to_owned();
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut key = String::new();
        let end;
        loop {
            let Some((i, c)) = chars.next() else {
                return Err("unterminated labels".into());
            };
            match c {
                '}' => {
                    end = i;
                    break;
                }
                ',' => {}
                '=' => {
                    if chars.next().map(|(_, c)| c) != Some('"') {
                        return Err("label value not quoted".into());
                    }
                    let mut value = String::new();
                    loop {
                        match chars.next() {
                            Some((_, '\\')) => match chars.next() {
                                Some((_, 'n')) => value.push('\n'),
                                Some((_, c)) => value.push(c),
                                None => return Err("dangling escape".into()),
                            },
                            Some((_, '"')) => break,
                            Some((_, c)) => value.push(c),
                            None => return Err("unterminated label value".into()),
                        }
                    }
                    labels.insert(std::mem::take(&mut key), value);
                }
                c => key.push(c),
            }
        }
        rest = &inner[end + 1..];
    }
    let value_text = rest
        .split_whitespace()
        .next()
        .ok_or_else(|| "no value".to_owned())?;
    let value = match value_text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v
            .parse::<f64>()
            .map_err(|e| format!("bad value {v}: {e}"))?,
    };
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// GETs `path` from `addr` (host:port) and returns the status code and body.
///
/// # Errors
/// The connection or the response failed.
pub fn http_get(addr: &str, path: &str) -> Result<(u16, String), String> {
    http_request(
        addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/openmetrics-text\r\nConnection: close\r\n\r\n"
        ),
    )
}

/// POSTs the JSON `body` to `path` on `addr` and returns the status code and body.
///
/// # Errors
/// The connection or the response failed.
pub fn http_post_json(addr: &str, path: &str, body: &str) -> Result<(u16, String), String> {
    http_request(
        addr,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn http_request(addr: &str, request: &str) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    s.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end: {text}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status: {head}"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)?
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

fn dechunk(mut body: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size_line, rest) = body
            .split_once("\r\n")
            .ok_or_else(|| "bad chunk".to_owned())?;
        let size = usize::from_str_radix(size_line.trim(), 16).map_err(|e| e.to_string())?;
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest.get(..size).ok_or_else(|| "short chunk".to_owned())?;
        out.push_str(chunk);
        body = rest
            .get(size + 2..)
            .ok_or_else(|| "short chunk".to_owned())?;
    }
}

/// Scrapes `addr` and parses the answer.
///
/// # Errors
/// The scrape failed or its text does not parse.
pub fn scrape(addr: &str) -> Result<Exposition, String> {
    let (status, body) = http_get(addr, "/metrics")?;
    if status != 200 {
        return Err(format!("scrape of {addr} answered {status}: {body}"));
    }
    parse(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_labels_escapes_and_specials() {
        let text = "# TYPE a counter\na_total{x=\"1\",y=\"q\\\"z\"} 5\nb 2.5\nc_bucket{le=\"+Inf\"} 3\n# EOF\n";
        let e = parse(text).expect("parses");
        assert_eq!(e.samples.len(), 3);
        assert_eq!(e.samples[0].label("y"), Some("q\"z"));
        assert_eq!(e.sum("a_total", &[("x", "1")]), Some(5.0));
        assert_eq!(e.types.get("a").map(String::as_str), Some("counter"));
        assert!(parse("x{a=b} 1").is_err());
        assert!(parse("x{a=\"b\" 1").is_err());
    }
}
