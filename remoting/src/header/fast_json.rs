//! A direct parser for the JSON header every standard client sends:
//! `{"code":..,"extFields":{"k":"v",..},"flag":..,"language":"JAVA","opaque":..,
//! "remark":..,"serializeTypeCurrentRPC":"JSON","version":..}` in any key order, with
//! whitespace anywhere. It decodes straight into [`Header`] without the generic serde
//! machinery — the header is decoded once per request, on the hot path.
//!
//! Anything it does not expect (other keys, nested values, numbers where strings go,
//! malformed text) makes it return `None`; the caller then falls back to the serde
//! decoder, which accepts every variant and produces the error messages. So this
//! parser only has to be right on what it accepts.

use compact_str::CompactString;

use super::{ExtFields, ExtFieldsBuilder, Header, LanguageCode};

/// Parses a header, or `None` to fall back to the general decoder.
pub(super) fn parse(bytes: &[u8]) -> Option<Header> {
    // Validated once here (word at a time for ASCII); strings are then sliced out at quote and
    // backslash positions, which are always character boundaries.
    let text = std::str::from_utf8(bytes).ok()?;
    let mut p = Parser {
        s: text,
        b: bytes,
        i: 0,
    };
    p.ws();
    p.expect(b'{')?;
    let mut h = Header::default();
    let mut code = None;
    let mut language_seen = false;
    p.ws();
    if p.peek()? == b'}' {
        return None; // no code: let the general decoder report it
    }
    loop {
        p.ws();
        let key = p.string_raw()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        match key {
            b"code" => code = Some(p.int()?),
            b"opaque" => h.opaque = p.int()?,
            b"flag" => h.flag = p.int()?,
            b"version" => h.version = p.int()?,
            b"language" => {
                h.language = LanguageCode::from_name(&p.string()?);
                language_seen = true;
            }
            b"remark" => {
                h.remark = if p.null() { None } else { Some(p.string()?) };
            }
            b"serializeTypeCurrentRPC" => {
                if !p.null() {
                    p.string()?;
                }
            }
            b"extFields" => {
                if !p.null() {
                    h.ext_fields = p.ext_fields()?;
                }
            }
            _ => return None,
        }
        p.ws();
        match p.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    p.ws();
    if p.i != p.b.len() {
        return None;
    }
    if !language_seen {
        h.language = LanguageCode::Java;
    }
    h.code = code?;
    Some(h)
}

struct Parser<'a> {
    /// The header text.
    s: &'a str,
    /// The same, as bytes.
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    fn null(&mut self) -> bool {
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    /// A JSON integer that fits an i32.
    fn int(&mut self) -> Option<i32> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        std::str::from_utf8(&self.b[start..self.i])
            .ok()?
            .parse()
            .ok()
    }

    /// A string without escapes, borrowed (object keys).
    fn string_raw(&mut self) -> Option<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.i;
        loop {
            match self.next()? {
                b'"' => return Some(&self.b[start..self.i - 1]),
                b'\\' => return None,
                _ => {}
            }
        }
    }

    /// A string, unescaped.
    fn string(&mut self) -> Option<String> {
        self.compact_string().map(CompactString::into_string)
    }

    /// A string, unescaped, inline when short (no allocation for most fields).
    fn compact_string(&mut self) -> Option<CompactString> {
        self.expect(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            self.i += plain_run(self.b.get(self.i..)?);
            match *self.b.get(self.i)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.i += 2;
                }
                _ => return None, // a control character
            }
        }
        let raw = self.s.get(start..self.i)?;
        self.i += 1;
        if escaped {
            unescape(raw).map(CompactString::from)
        } else {
            Some(CompactString::from(raw))
        }
    }
    /// `{"k":"v",...}`; numbers and booleans become their text (as the serde decoder
    /// does), nulls are dropped.
    fn ext_fields(&mut self) -> Option<ExtFields> {
        self.expect(b'{')?;
        let mut ext = ExtFieldsBuilder::new();
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(ext.finish());
        }
        loop {
            self.ws();
            let key = self.compact_string()?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            match self.peek()? {
                b'"' => {
                    let value = self.compact_string()?;
                    ext.put(key, value);
                }
                b'n' => {
                    if !self.null() {
                        return None;
                    }
                }
                b't' if self.b[self.i..].starts_with(b"true") => {
                    self.i += 4;
                    ext.put(key, CompactString::const_new("true"));
                }
                b'f' if self.b[self.i..].starts_with(b"false") => {
                    self.i += 5;
                    ext.put(key, CompactString::const_new("false"));
                }
                b'-' | b'0'..=b'9' => {
                    let start = self.i;
                    while matches!(
                        self.peek(),
                        Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    ) {
                        self.i += 1;
                    }
                    let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
                    // Integers only, in serde's text form; anything else goes to serde.
                    let n: i64 = text.parse().ok()?;
                    ext.put(key, CompactString::from(n.to_string()));
                }
                _ => return None,
            }
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => return Some(ext.finish()),
                _ => return None,
            }
        }
    }
}

/// How many leading bytes of `b` need no attention inside a JSON string: not a quote, not a
/// backslash, not a control character.
fn plain_run(b: &[u8]) -> usize {
    b.iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .unwrap_or(b.len())
}

/// The text of a JSON string with escapes (quotes already stripped), or `None` if an escape
/// is malformed.
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = rest.as_bytes().get(at + 1)?;
        let mut used = 2;
        let ch = match escape {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = hex4(rest.as_bytes().get(at + 2..at + 6)?)?;
                used = 6;
                if (0xD800..0xDC00).contains(&first) {
                    let low = rest.as_bytes().get(at + 6..at + 12)?;
                    if !low.starts_with(b"\\u") {
                        return None;
                    }
                    let second = hex4(&low[2..])?;
                    if !(0xDC00..0xE000).contains(&second) {
                        return None;
                    }
                    used = 12;
                    char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))?
                } else {
                    char::from_u32(first)?
                }
            }
            _ => return None,
        };
        out.push(ch);
        rest = rest.get(at + used..)?;
    }
    out.push_str(rest);
    Some(out)
}

/// Four hex digits (the properties separators arrive as `\u0001` / `\u0002`, so this runs
/// several times per send header).
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| {
        let v = char::from(d).to_digit(16)?;
        Some(acc << 4 | v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_client_shapes() {
        let java = br#"{"code":310,"extFields":{"a":"pg","i":"TAGS\u0001A\u0002"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":409}"#;
        let h = parse(java).unwrap();
        assert_eq!((h.code, h.opaque, h.version), (310, 7, 409));
        assert_eq!(h.ext_fields.get("i"), Some("TAGS\u{1}A\u{2}"));
        let cpp = b"{\"code\":105,\"extFields\":{\"topic\":\"T\"},\"flag\":0,\"language\":\"CPP\",\"opaque\":0,\"remark\":\"\",\"version\":63}\n";
        let h = parse(cpp).unwrap();
        assert_eq!(
            (h.language, h.remark.as_deref()),
            (LanguageCode::Cpp, Some(""))
        );
        let ali = br#"{"code":310,"extFields":{"d":4,"k":false,"z":null,"g":1795955659538},"flag":0,"language":"JAVA","opaque":2,"version":121}"#;
        let h = parse(ali).unwrap();
        assert_eq!(h.ext_fields.get("d"), Some("4"));
        assert_eq!(h.ext_fields.get("k"), Some("false"));
        assert_eq!(h.ext_fields.get("z"), None);
        let spaced = b" { \"code\" : 1 , \"remark\" : null , \"extFields\" : { } } ";
        assert_eq!(parse(spaced).unwrap().code, 1);
        let escapes = br#"{"code":1,"remark":"a\"b\\c\/\n\u00e9\ud83d\ude00"}"#;
        assert_eq!(
            parse(escapes).unwrap().remark.as_deref(),
            Some("a\"b\\c/\né😀")
        );
    }

    #[test]
    fn declines_what_it_does_not_know() {
        for bytes in [
            &br#"{"flag":0}"#[..],
            br#"{"code":"34"}"#,
            br#"{"code":1,"extra":1}"#,
            br#"{"code":1.5}"#,
            br#"{"code":1,"extFields":{"a":1.5}}"#,
            br#"{"code":1,"extFields":{"a":{"b":1}}}"#,
            br#"{"code":1} x"#,
            br#"{"code":1"#,
            br#"{"code":1,"remark":"\ud800"}"#,
            b"[1]",
        ] {
            assert!(parse(bytes).is_none(), "{}", String::from_utf8_lossy(bytes));
        }
    }

    proptest::proptest! {
        /// Any string as serde_json writes it (escapes, control characters, astral planes)
        /// comes back the same through the fast path, not through the fallback.
        #[test]
        fn strings_agree_with_serde(key in "[a-zA-Z]{1,12}", value in "\\PC*|[\\x00-\\x1f\\x7f\"\\\\/é😀]*") {
            let json = format!(
                r#"{{"code":310,"extFields":{{{}:{}}},"flag":0}}"#,
                serde_json::to_string(&key).unwrap(),
                serde_json::to_string(&value).unwrap()
            );
            let h = parse(json.as_bytes());
            proptest::prop_assert!(h.is_some(), "{json}");
            let ext = h.unwrap().ext_fields;
            proptest::prop_assert_eq!(ext.get(&key), Some(value.as_str()));
        }
    }
}
