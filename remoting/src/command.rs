//! `RemotingCommand`: one request or response, and typed custom headers.

use bytes::{BufMut, Bytes, BytesMut};

use crate::code::ResponseCode;
use crate::error::{ExtFieldError, FrameError};
use crate::frame::{self, RawFrame, SerializeType};
use crate::header::{self, ExtFields, Header, LanguageCode};

/// Flag bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 0b01;
/// Flag bit 1: the request expects no response.
pub const FLAG_ONEWAY: i32 = 0b10;

/// The version ordinal sluice puts in the commands it creates: `V4_9_8` (409).
///
/// Java clients store the broker's version from HEART_BEAT responses and refuse
/// SQL92 pulls below 232; 409 also keeps 5.x clients on the behaviour we implement.
pub const CURRENT_VERSION: i32 = 409;

/// The body of a command: one buffer, or several slices sent back to back
/// without copying (pull responses hand out slices of the mapped CommitLog).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Body {
    /// No body.
    #[default]
    Empty,
    /// One contiguous buffer.
    One(Bytes),
    /// Several buffers, written with one vectored write.
    Parts(Vec<Bytes>),
}

impl Body {
    /// Total length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Body::Empty => 0,
            Body::One(b) => b.len(),
            Body::Parts(parts) => parts.iter().map(Bytes::len).sum(),
        }
    }

    /// Whether the body is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body as one buffer (copies only when it is made of several parts).
    #[must_use]
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Body::Empty => Bytes::new(),
            Body::One(b) => b.clone(),
            Body::Parts(parts) => {
                let mut buf = BytesMut::with_capacity(self.len());
                for p in parts {
                    buf.put_slice(p);
                }
                buf.freeze()
            }
        }
    }

    /// The buffers to write, in order.
    #[must_use]
    pub fn parts(&self) -> &[Bytes] {
        match self {
            Body::Empty => &[],
            Body::One(b) => std::slice::from_ref(b),
            Body::Parts(parts) => parts,
        }
    }
}

impl From<Bytes> for Body {
    fn from(b: Bytes) -> Self {
        if b.is_empty() {
            Body::Empty
        } else {
            Body::One(b)
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Self {
        Body::from(Bytes::from(v))
    }
}

impl From<String> for Body {
    fn from(s: String) -> Self {
        Body::from(Bytes::from(s))
    }
}

/// A custom header: a struct whose fields travel as strings in `extFields`.
///
/// Implemented by the `ext_header!` macro for every header of the protocol.
pub trait CommandHeader: Sized {
    /// Writes every present field into `ext`.
    fn write_to(&self, ext: &mut ExtFields);

    /// Reads the struct from `ext`.
    ///
    /// # Errors
    /// A required field is missing or a field does not parse.
    fn read_from(ext: &ExtFields) -> Result<Self, ExtFieldError>;
}

/// One request or response of the remoting protocol.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Code, language, version, opaque, flag, remark, extFields.
    pub header: Header,
    /// Body bytes.
    pub body: Body,
    /// Header encoding: requests are answered in the encoding they used.
    pub serialize_type: SerializeType,
}

impl RemotingCommand {
    /// A request with the given code and no custom header.
    #[must_use]
    pub fn request(code: impl Into<i32>) -> Self {
        RemotingCommand {
            header: Header {
                code: code.into(),
                language: LanguageCode::Rust,
                version: CURRENT_VERSION,
                ..Header::default()
            },
            body: Body::Empty,
            serialize_type: SerializeType::Json,
        }
    }

    /// A request carrying `custom` in its extFields.
    #[must_use]
    pub fn request_with(code: impl Into<i32>, custom: &impl CommandHeader) -> Self {
        let mut cmd = RemotingCommand::request(code);
        custom.write_to(&mut cmd.header.ext_fields);
        cmd
    }

    /// A response with the given code and remark, not yet tied to a request.
    #[must_use]
    pub fn response(code: impl Into<i32>, remark: impl Into<Option<String>>) -> Self {
        RemotingCommand {
            header: Header {
                code: code.into(),
                language: LanguageCode::Java,
                version: CURRENT_VERSION,
                flag: FLAG_RESPONSE,
                remark: remark.into(),
                ..Header::default()
            },
            body: Body::Empty,
            serialize_type: SerializeType::Json,
        }
    }

    /// A response to `self`: same opaque, same header encoding.
    #[must_use]
    pub fn reply(&self, code: impl Into<i32>, remark: impl Into<Option<String>>) -> Self {
        let mut r = RemotingCommand::response(code, remark);
        r.header.opaque = self.header.opaque;
        r.serialize_type = self.serialize_type;
        r
    }

    /// Makes `self` the response to `request`: its opaque, the response flag, and
    /// the request's header encoding. For answers sent later, outside the dispatcher.
    #[must_use]
    pub fn answering(mut self, request: &RemotingCommand) -> Self {
        self.header.opaque = request.header.opaque;
        self.header.flag |= FLAG_RESPONSE;
        self.serialize_type = request.serialize_type;
        self
    }

    /// A SUCCESS response to `self`.
    #[must_use]
    pub fn reply_ok(&self) -> Self {
        self.reply(ResponseCode::Success, None)
    }

    /// Sets the body.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Body>) -> Self {
        self.body = body.into();
        self
    }

    /// Writes a custom header into extFields.
    #[must_use]
    pub fn with_header(mut self, custom: &impl CommandHeader) -> Self {
        custom.write_to(&mut self.header.ext_fields);
        self
    }

    /// Marks the command oneway.
    #[must_use]
    pub fn oneway(mut self) -> Self {
        self.header.flag |= FLAG_ONEWAY;
        self
    }

    /// The code.
    #[must_use]
    pub fn code(&self) -> i32 {
        self.header.code
    }

    /// The request id.
    #[must_use]
    pub fn opaque(&self) -> i32 {
        self.header.opaque
    }

    /// The remark, if any.
    #[must_use]
    pub fn remark(&self) -> Option<&str> {
        self.header.remark.as_deref()
    }

    /// The custom header fields.
    #[must_use]
    pub fn ext_fields(&self) -> &ExtFields {
        &self.header.ext_fields
    }

    /// One custom header field.
    #[must_use]
    pub fn ext(&self, key: &str) -> Option<&str> {
        self.header.ext_fields.get(key)
    }

    /// Whether flag bit 0 is set.
    #[must_use]
    pub fn is_response(&self) -> bool {
        self.header.flag & FLAG_RESPONSE != 0
    }

    /// Whether flag bit 1 is set.
    #[must_use]
    pub fn is_oneway(&self) -> bool {
        self.header.flag & FLAG_ONEWAY != 0
    }

    /// Reads a typed custom header from extFields.
    ///
    /// # Errors
    /// A required field is missing or a field does not parse.
    pub fn decode_header<H: CommandHeader>(&self) -> Result<H, ExtFieldError> {
        H::read_from(&self.header.ext_fields)
    }

    /// Builds a command from a split frame.
    ///
    /// # Errors
    /// The header does not parse.
    pub fn from_frame(frame: RawFrame) -> Result<Self, FrameError> {
        let header = header::decode(frame.serialize_type, &frame.header)?;
        Ok(RemotingCommand {
            header,
            body: Body::from(frame.body),
            serialize_type: frame.serialize_type,
        })
    }

    /// Appends the length prefix and the header; the body is to follow as `self.body.parts()`.
    ///
    /// # Errors
    /// The header or the frame is too large for its length field.
    pub fn encode_head(&self, buf: &mut BytesMut) -> Result<(), FrameError> {
        let start = buf.len();
        // Reserve the prefix, write the header after it, then fill the prefix in.
        buf.put_bytes(0, frame::LENGTH_PREFIX_LEN + frame::HEADER_WORD_LEN);
        if let Err(e) = header::encode(self.serialize_type, &self.header, buf) {
            buf.truncate(start);
            return Err(e.into());
        }
        let header_len = buf.len() - start - frame::LENGTH_PREFIX_LEN - frame::HEADER_WORD_LEN;
        let mut prefix = BytesMut::with_capacity(8);
        if let Err(e) = frame::encode_prefix(
            &mut prefix,
            self.serialize_type,
            header_len,
            self.body.len(),
        ) {
            buf.truncate(start);
            return Err(e);
        }
        buf[start..start + 8].copy_from_slice(&prefix);
        Ok(())
    }

    /// Appends the whole frame (prefix, header, body) to `buf`.
    ///
    /// # Errors
    /// The header or the frame is too large for its length field.
    pub fn encode(&self, buf: &mut BytesMut) -> Result<(), FrameError> {
        self.encode_head(buf)?;
        for part in self.body.parts() {
            buf.put_slice(part);
        }
        Ok(())
    }

    /// The response code as a known `ResponseCode`, if it is one.
    #[must_use]
    pub fn response_code(&self) -> Option<ResponseCode> {
        ResponseCode::try_from(self.header.code).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::RequestCode;
    use crate::frame::FrameDecoder;

    #[test]
    fn encode_decode_both_types() {
        for ser in [SerializeType::Json, SerializeType::RocketMq] {
            let mut cmd =
                RemotingCommand::request(RequestCode::SendMessageV2).with_body(b"hello".to_vec());
            cmd.serialize_type = ser;
            cmd.header.opaque = 99;
            cmd.header.ext_fields.insert("b", "TopicA");
            let mut buf = BytesMut::new();
            cmd.encode(&mut buf).unwrap();
            let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
            let back = RemotingCommand::from_frame(frame).unwrap();
            assert_eq!(back, cmd);
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn reply_copies_opaque_and_encoding() {
        let mut req = RemotingCommand::request(34);
        req.header.opaque = 5;
        req.serialize_type = SerializeType::RocketMq;
        let resp = req.reply(ResponseCode::SystemError, Some("x".to_owned()));
        assert!(resp.is_response());
        assert_eq!(
            (resp.opaque(), resp.serialize_type),
            (5, SerializeType::RocketMq)
        );
        assert!(!req.clone().oneway().is_response());
        assert!(req.oneway().is_oneway());
    }

    #[test]
    fn parts_body_equals_one_body() {
        let cmd = RemotingCommand::response(0, None).with_body(Body::Parts(vec![
            Bytes::from_static(b"ab"),
            Bytes::from_static(b"cd"),
        ]));
        let mut a = BytesMut::new();
        cmd.encode(&mut a).unwrap();
        let one = RemotingCommand::response(0, None).with_body(b"abcd".to_vec());
        let mut b = BytesMut::new();
        one.encode(&mut b).unwrap();
        assert_eq!(a, b);
    }
}
