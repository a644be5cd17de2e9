//! The two header encodings of a remoting frame, and `extFields`.
//!
//! JSON (serializeType 0): a UTF-8 object
//! `{"code":310,"extFields":{..},"flag":0,"language":"JAVA","opaque":7,"remark":"..","version":409}`.
//! Readers accept what real clients send: extFields values as strings, numbers or
//! booleans, `"remark":null`, a trailing newline, and fields they do not know.
//!
//! ROCKETMQ binary (serializeType 1), big-endian:
//!
//! | size | field |
//! |------|-------|
//! | 2 | code (i16; Java truncates larger codes) |
//! | 1 | language code |
//! | 2 | version |
//! | 4 | opaque |
//! | 4 | flag |
//! | 4 + n | remark length (0 = none), UTF-8 |
//! | 4 + n | extFields length, then repeated {i16 key length, key, i32 value length, value} |

use std::borrow::Cow;
use std::fmt;

use bytes::{Buf, BufMut, BytesMut};
use compact_str::CompactString;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::error::HeaderError;

mod fast_json;
use crate::frame::SerializeType;

/// Implementation language of the sender (`LanguageCode.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LanguageCode {
    /// JAVA (0); what Java brokers put in every response.
    #[default]
    Java,
    /// CPP (1)
    Cpp,
    /// DOTNET (2)
    Dotnet,
    /// PYTHON (3)
    Python,
    /// DELPHI (4)
    Delphi,
    /// ERLANG (5)
    Erlang,
    /// RUBY (6)
    Ruby,
    /// OTHER (7); also stands for names and codes we do not know.
    Other,
    /// HTTP (8)
    Http,
    /// GO (9)
    Go,
    /// PHP (10)
    Php,
    /// OMS (11)
    Oms,
    /// RUST (12)
    Rust,
    /// `NODE_JS` (13, 5.x only)
    NodeJs,
}

const LANGUAGES: [(LanguageCode, &str); 14] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
    (LanguageCode::NodeJs, "NODE_JS"),
];

impl LanguageCode {
    /// The byte used by the binary header.
    #[must_use]
    pub fn code(self) -> u8 {
        // LANGUAGES is indexed by code.
        LANGUAGES
            .iter()
            .position(|(l, _)| *l == self)
            .and_then(|i| u8::try_from(i).ok())
            .unwrap_or(7)
    }

    /// The enum name used by the JSON header.
    #[must_use]
    pub fn name(self) -> &'static str {
        LANGUAGES[usize::from(self.code())].1
    }

    /// From the binary code; unknown codes become `Other`.
    #[must_use]
    pub fn from_code(code: u8) -> Self {
        LANGUAGES
            .get(usize::from(code))
            .map_or(LanguageCode::Other, |(l, _)| *l)
    }

    /// From the JSON name; unknown names become `Other`.
    #[must_use]
    pub fn from_name(name: &str) -> Self {
        LANGUAGES
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(LanguageCode::Other, |(l, _)| *l)
    }
}

impl fmt::Display for LanguageCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The custom-header map of a command: every value a string on the wire.
///
/// A small ordered list: headers have a dozen entries, where a linear scan beats
/// hashing, and the order a client sent is kept when we relay a command. Keys and
/// values are inline strings: almost all fit in 24 bytes, so decoding a header does
/// not allocate per field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtFields(Vec<(CompactString, CompactString)>);

impl ExtFields {
    /// An empty map.
    #[must_use]
    pub const fn new() -> Self {
        ExtFields(Vec::new())
    }

    /// An empty map with room for `n` entries.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        ExtFields(Vec::with_capacity(n))
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Sets `key` to `value`, replacing an earlier value (last wins, as in Java).
    pub fn insert(&mut self, key: impl Into<CompactString>, value: impl Into<CompactString>) {
        let key = key.into();
        let value = value.into();
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1.into_string())
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Builds [`ExtFields`] while decoding a header: entries in wire order, a later duplicate
/// replacing the earlier value, without scanning for duplicates on every entry. Keys seen
/// are bits of a 64-bit filter (length and first byte); only a key whose bit is already set
/// is looked up.
pub(crate) struct ExtFieldsBuilder {
    ext: ExtFields,
    seen: u64,
}

impl ExtFieldsBuilder {
    pub(crate) fn new() -> Self {
        ExtFieldsBuilder {
            ext: ExtFields::with_capacity(16),
            seen: 0,
        }
    }

    pub(crate) fn put(&mut self, key: CompactString, value: CompactString) {
        let bytes = key.as_bytes();
        let hash = bytes.len() ^ usize::from(bytes.first().copied().unwrap_or(0)).wrapping_mul(7);
        let bit = 1u64 << (hash & 63);
        if self.seen & bit == 0 {
            self.seen |= bit;
            self.ext.0.push((key, value));
        } else {
            self.ext.insert(key, value);
        }
    }

    pub(crate) fn finish(self) -> ExtFields {
        self.ext
    }
}

impl<K: Into<CompactString>, V: Into<CompactString>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        let mut ext = ExtFields::new();
        for (k, v) in iter {
            ext.insert(k, v);
        }
        ext
    }
}

/// The header part of a command, as carried by either encoding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// Request or response code.
    pub code: i32,
    /// Sender's language.
    pub language: LanguageCode,
    /// Sender's version ordinal.
    pub version: i32,
    /// Request id.
    pub opaque: i32,
    /// Bit 0 response, bit 1 oneway.
    pub flag: i32,
    /// Error text.
    pub remark: Option<String>,
    /// Custom header fields.
    pub ext_fields: ExtFields,
}

/// Decodes a header in the given encoding.
///
/// # Errors
/// `HeaderError` when the bytes are not a header of that encoding, or lack a code.
pub fn decode(serialize_type: SerializeType, bytes: &[u8]) -> Result<Header, HeaderError> {
    match serialize_type {
        SerializeType::Json => decode_json(bytes),
        SerializeType::RocketMq => decode_binary(bytes),
    }
}

/// Appends the encoded header to `buf`.
///
/// # Errors
/// `HeaderError::Binary` when a string is too long for its binary length field
/// (keys over 32767 bytes); `buf` is then left as it was.
pub fn encode(
    serialize_type: SerializeType,
    header: &Header,
    buf: &mut BytesMut,
) -> Result<(), HeaderError> {
    match serialize_type {
        SerializeType::Json => {
            encode_json(header, buf);
            Ok(())
        }
        SerializeType::RocketMq => {
            let start = buf.len();
            encode_binary(header, buf).inspect_err(|_| buf.truncate(start))
        }
    }
}

// ---------------------------------------------------------------- JSON

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonHeader<'a> {
    #[serde(default, deserialize_with = "lenient_opt_i32")]
    code: Option<i32>,
    #[serde(default, deserialize_with = "lenient_language")]
    language: LanguageCode,
    #[serde(default, deserialize_with = "lenient_i32")]
    version: i32,
    #[serde(default, deserialize_with = "lenient_i32")]
    opaque: i32,
    #[serde(default, deserialize_with = "lenient_i32")]
    flag: i32,
    #[serde(default, borrow)]
    remark: Option<Cow<'a, str>>,
    #[serde(default)]
    ext_fields: Option<ExtFields>,
}

fn decode_json(bytes: &[u8]) -> Result<Header, HeaderError> {
    if let Some(header) = fast_json::parse(bytes) {
        return Ok(header);
    }
    // serde would also accept a struct written as an array; a header is an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(HeaderError::Json("header is not a JSON object".into()));
    }
    let h: JsonHeader<'_> =
        serde_json::from_slice(bytes).map_err(|e| HeaderError::Json(e.to_string()))?;
    Ok(Header {
        code: h.code.ok_or(HeaderError::MissingCode)?,
        language: h.language,
        version: h.version,
        opaque: h.opaque,
        flag: h.flag,
        remark: h.remark.map(Cow::into_owned),
        ext_fields: h.ext_fields.unwrap_or_default(),
    })
}

/// An integer that some clients send as a number and others as a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum LenientInt<'a> {
    Int(i64),
    Float(f64),
    Str(&'a str),
}

impl LenientInt<'_> {
    fn to_i32(&self) -> Option<i32> {
        match self {
            LenientInt::Int(v) => i32::try_from(*v).ok(),
            #[allow(
                clippy::cast_possible_truncation,
                reason = "only integral values in range pass the check"
            )]
            LenientInt::Float(f) if f.fract() == 0.0 && f.abs() <= f64::from(i32::MAX) => {
                Some(*f as i32)
            }
            LenientInt::Float(_) => None,
            LenientInt::Str(s) => s.trim().parse().ok(),
        }
    }
}

fn lenient_opt_i32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    match Option::<LenientInt<'de>>::deserialize(d)? {
        None => Ok(None),
        Some(v) => v
            .to_i32()
            .map(Some)
            .ok_or_else(|| de::Error::custom("integer field out of range")),
    }
}

fn lenient_i32<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    Ok(lenient_opt_i32(d)?.unwrap_or(0))
}

fn lenient_language<'de, D: Deserializer<'de>>(d: D) -> Result<LanguageCode, D::Error> {
    Ok(match Option::<LenientInt<'de>>::deserialize(d)? {
        None => LanguageCode::Java,
        Some(LenientInt::Str(name)) => LanguageCode::from_name(name),
        Some(other) => other
            .to_i32()
            .and_then(|c| u8::try_from(c).ok())
            .map_or(LanguageCode::Other, LanguageCode::from_code),
    })
}

impl<'de> Deserialize<'de> for ExtFields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ExtVisitor;

        impl<'de> Visitor<'de> for ExtVisitor {
            type Value = ExtFields;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of scalar values")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExtFields, A::Error> {
                let mut ext = ExtFields::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if let Some(value) = map.next_value::<ExtValue>()?.0 {
                        ext.insert(key.into_owned(), value);
                    }
                }
                Ok(ext)
            }
        }

        d.deserialize_map(ExtVisitor)
    }
}

/// An extFields value: strings as they are, numbers and booleans as their text
/// (ali-ons sends `"d":4` and `"k":false`), null dropped.
struct ExtValue(Option<String>);

impl<'de> Deserialize<'de> for ExtValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl Visitor<'_> for ValueVisitor {
            type Value = ExtValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number, boolean or null")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ExtValue, E> {
                Ok(ExtValue(Some(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<ExtValue, E> {
                Ok(ExtValue(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ExtValue, E> {
                Ok(ExtValue(Some(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ExtValue, E> {
                Ok(ExtValue(Some(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ExtValue, E> {
                Ok(ExtValue(Some(v.to_string())))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ExtValue, E> {
                Ok(ExtValue(Some(v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ExtValue, E> {
                Ok(ExtValue(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<ExtValue, E> {
                Ok(ExtValue(None))
            }
        }

        d.deserialize_any(ValueVisitor)
    }
}

fn encode_json(h: &Header, buf: &mut BytesMut) {
    // Keys in fastjson's (alphabetical) order; nulls omitted.
    buf.put_slice(b"{\"code\":");
    put_int(buf, i64::from(h.code));
    buf.put_slice(b",\"extFields\":{");
    for (i, (k, v)) in h.ext_fields.iter().enumerate() {
        if i > 0 {
            buf.put_u8(b',');
        }
        put_json_str(buf, k);
        buf.put_u8(b':');
        put_json_str(buf, v);
    }
    buf.put_slice(b"},\"flag\":");
    put_int(buf, i64::from(h.flag));
    buf.put_slice(b",\"language\":\"");
    buf.put_slice(h.language.name().as_bytes());
    buf.put_slice(b"\",\"opaque\":");
    put_int(buf, i64::from(h.opaque));
    if let Some(remark) = &h.remark {
        buf.put_slice(b",\"remark\":");
        put_json_str(buf, remark);
    }
    buf.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_int(buf, i64::from(h.version));
    buf.put_u8(b'}');
}

fn put_int(buf: &mut BytesMut, v: i64) {
    buf.put_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Writes `s` as a JSON string literal.
pub(crate) fn put_json_str(buf: &mut BytesMut, s: &str) {
    buf.put_u8(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1F => None,
            _ => continue,
        };
        buf.put_slice(&bytes[start..i]);
        if let Some(e) = escape {
            buf.put_slice(e);
        } else {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            buf.put_slice(b"\\u00");
            buf.put_u8(HEX[usize::from(b >> 4)]);
            buf.put_u8(HEX[usize::from(b & 0xF)]);
        }
        start = i + 1;
    }
    buf.put_slice(&bytes[start..]);
    buf.put_u8(b'"');
}

// ---------------------------------------------------------------- ROCKETMQ binary

fn decode_binary(mut b: &[u8]) -> Result<Header, HeaderError> {
    const FIXED: usize = 2 + 1 + 2 + 4 + 4;
    if b.len() < FIXED {
        return Err(HeaderError::Binary("shorter than the fixed fields"));
    }
    let code = i32::from(b.get_i16());
    let language = LanguageCode::from_code(b.get_u8());
    let version = i32::from(b.get_i16());
    let opaque = b.get_i32();
    let flag = b.get_i32();
    let remark = read_len_prefixed(&mut b, 4)?;
    let remark = if remark.is_empty() {
        None
    } else {
        Some(utf8(remark)?.to_owned())
    };
    let mut ext = take_len_prefixed(&mut b, 4)?;
    let mut ext_fields = ExtFieldsBuilder::new();
    while !ext.is_empty() {
        let key = read_len_prefixed(&mut ext, 2)?;
        let value = read_len_prefixed(&mut ext, 4)?;
        ext_fields.put(utf8(key)?.into(), utf8(value)?.into());
    }
    let ext_fields = ext_fields.finish();
    Ok(Header {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
    })
}

fn take_len_prefixed<'a>(b: &mut &'a [u8], width: usize) -> Result<&'a [u8], HeaderError> {
    if b.is_empty() && width == 4 {
        // Old encoders may stop after the remark when there are no extFields.
        return Ok(&[]);
    }
    read_len_prefixed(b, width)
}

fn read_len_prefixed<'a>(b: &mut &'a [u8], width: usize) -> Result<&'a [u8], HeaderError> {
    if b.len() < width {
        return Err(HeaderError::Binary("truncated length"));
    }
    let len = if width == 2 {
        i64::from(b.get_i16())
    } else {
        i64::from(b.get_i32())
    };
    let len = usize::try_from(len).map_err(|_| HeaderError::Binary("negative length"))?;
    if len > b.len() {
        return Err(HeaderError::Binary("length exceeds header"));
    }
    let (head, tail) = b.split_at(len);
    *b = tail;
    Ok(head)
}

fn utf8(b: &[u8]) -> Result<&str, HeaderError> {
    std::str::from_utf8(b).map_err(|_| HeaderError::Utf8)
}

fn encode_binary(h: &Header, buf: &mut BytesMut) -> Result<(), HeaderError> {
    const TOO_LONG: HeaderError = HeaderError::Binary("string too long for its length field");
    let len32 = |n: usize| i32::try_from(n).map_err(|_| TOO_LONG);
    // Code and version are 16-bit here; Java truncates larger values the same way.
    #[allow(clippy::cast_possible_truncation)]
    {
        buf.put_i16(h.code as i16);
        buf.put_u8(h.language.code());
        buf.put_i16(h.version as i16);
    }
    buf.put_i32(h.opaque);
    buf.put_i32(h.flag);
    match &h.remark {
        Some(r) if !r.is_empty() => {
            buf.put_i32(len32(r.len())?);
            buf.put_slice(r.as_bytes());
        }
        _ => buf.put_i32(0),
    }
    let ext_len: usize = h
        .ext_fields
        .iter()
        .map(|(k, v)| 2 + k.len() + 4 + v.len())
        .sum();
    buf.put_i32(len32(ext_len)?);
    for (k, v) in h.ext_fields.iter() {
        buf.put_i16(i16::try_from(k.len()).map_err(|_| TOO_LONG)?);
        buf.put_slice(k.as_bytes());
        buf.put_i32(len32(v.len())?);
        buf.put_slice(v.as_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            code: 310,
            language: LanguageCode::Java,
            version: 409,
            opaque: 17,
            flag: 0,
            remark: Some("a \"quoted\"\n\u{1}remark".into()),
            ext_fields: [
                ("a", "pg"),
                ("b", "Topic"),
                ("i", "TAGS\u{1}A\u{2}KEYS\u{1}k"),
            ]
            .into_iter()
            .collect(),
        }
    }

    #[test]
    fn json_round_trip() {
        let mut buf = BytesMut::new();
        encode(SerializeType::Json, &sample(), &mut buf).unwrap();
        let text = std::str::from_utf8(&buf).unwrap();
        assert!(
            text.starts_with("{\"code\":310,\"extFields\":{\"a\":\"pg\""),
            "{text}"
        );
        assert_eq!(decode(SerializeType::Json, &buf).unwrap(), sample());
    }

    #[test]
    fn binary_round_trip() {
        let mut buf = BytesMut::new();
        encode(SerializeType::RocketMq, &sample(), &mut buf).unwrap();
        assert_eq!(decode(SerializeType::RocketMq, &buf).unwrap(), sample());
    }

    #[test]
    fn json_accepts_client_variants() {
        let ali = br#"{"code":310,"extFields":{"a":"pg","d":4,"g":1795955659538,"k":false,"z":null},"flag":0,"language":"JAVA","opaque":2,"version":121}"#;
        let h = decode(SerializeType::Json, ali).unwrap();
        assert_eq!(h.ext_fields.get("d"), Some("4"));
        assert_eq!(h.ext_fields.get("g"), Some("1795955659538"));
        assert_eq!(h.ext_fields.get("k"), Some("false"));
        assert_eq!(h.ext_fields.get("z"), None);
        let cpp = b"{\"code\":105,\"extFields\":{\"topic\":\"T\"},\"flag\":0,\"language\":\"CPP\",\"opaque\":0,\"remark\":\"\",\"version\":63}\n";
        let h = decode(SerializeType::Json, cpp).unwrap();
        assert_eq!(h.language, LanguageCode::Cpp);
        assert_eq!(h.remark.as_deref(), Some(""));
        let rust = br#"{"code":105,"language":"RUST","version":474,"opaque":0,"flag":0,"remark":null,"extFields":{"topic":"PeerTopic"},"serializeTypeCurrentRPC":"JSON"}"#;
        let h = decode(SerializeType::Json, rust).unwrap();
        assert_eq!(
            (h.code, h.language, h.remark),
            (105, LanguageCode::Rust, None)
        );
        let go_ish = br#"{"code":"34","language":"GO","flag":0}"#;
        assert_eq!(decode(SerializeType::Json, go_ish).unwrap().code, 34);
        let unknown = br#"{"code":1,"language":"COBOL"}"#;
        assert_eq!(
            decode(SerializeType::Json, unknown).unwrap().language,
            LanguageCode::Other
        );
    }

    #[test]
    fn json_refuses_bad_headers() {
        assert_eq!(
            decode(SerializeType::Json, b"{\"flag\":0}"),
            Err(HeaderError::MissingCode)
        );
        assert!(matches!(
            decode(SerializeType::Json, b"{\"code\":"),
            Err(HeaderError::Json(_))
        ));
        assert!(matches!(
            decode(SerializeType::Json, b"[1,2]"),
            Err(HeaderError::Json(_))
        ));
        assert!(matches!(
            decode(SerializeType::Json, b"{\"code\":99999999999}"),
            Err(HeaderError::Json(_))
        ));
    }

    #[test]
    fn duplicate_ext_fields_keep_the_last_value_in_both_encodings() {
        let json = br#"{"code":1,"extFields":{"a1":"x","a2":"y","a1":"z","b":"1","b":"2"}}"#;
        let h = decode(SerializeType::Json, json).unwrap();
        let entries: Vec<_> = h.ext_fields.iter().collect();
        assert_eq!(entries, [("a1", "z"), ("a2", "y"), ("b", "2")]);
        let mut buf = BytesMut::new();
        encode(SerializeType::RocketMq, &h, &mut buf).unwrap();
        // Append a duplicate by hand: the binary form allows it too.
        let mut raw = buf.to_vec();
        let ext_len_at = 2 + 1 + 2 + 4 + 4 + 4;
        let dup = [
            &2i16.to_be_bytes()[..],
            b"a2",
            &1i32.to_be_bytes()[..],
            b"w",
        ]
        .concat();
        let old = i32::from_be_bytes(raw[ext_len_at..ext_len_at + 4].try_into().unwrap());
        let new = old + i32::try_from(dup.len()).unwrap();
        raw[ext_len_at..ext_len_at + 4].copy_from_slice(&new.to_be_bytes());
        raw.extend_from_slice(&dup);
        let back = decode(SerializeType::RocketMq, &raw).unwrap();
        let entries: Vec<_> = back.ext_fields.iter().collect();
        assert_eq!(entries, [("a1", "z"), ("a2", "w"), ("b", "2")]);
    }

    #[test]
    fn binary_refuses_truncation() {
        let mut buf = BytesMut::new();
        encode(SerializeType::RocketMq, &sample(), &mut buf).unwrap();
        for cut in 0..buf.len() {
            // Any strict prefix is either an error or (only at the ext boundary) a header without ext fields.
            if let Ok(h) = decode(SerializeType::RocketMq, &buf[..cut]) {
                assert!(h.ext_fields.is_empty());
            }
        }
    }
}
