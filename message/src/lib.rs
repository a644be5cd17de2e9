//! RocketMQ's message format, in one sans-io crate that depends on nothing of ours.
//!
//! The same bytes are written by a producer, stored by the broker, replicated to the
//! slave, scanned by recovery and read back by every consumer and by `mqadmin`; store,
//! broker and tools all call this crate, so the format has one owner and a tool can
//! read messages without linking the store. No file, socket or clock in here: codecs
//! take and return bytes.
//!
//! Layout:
//! - [`record`]: the stored-message record (the CommitLog format, also the body of
//!   pull, query and view responses), the BLANK end-of-file marker, `MessageSysFlag`
//!   bits, body CRC, size limits and [`record::RecordError`].
//! - [`batch`]: the SEND_BATCH_MESSAGE body a client encodes and the broker splits.
//! - [`id`]: message ids: the offset msg id (store host + CommitLog offset) and the
//!   client's unique key (`UNIQ_KEY`, `MessageClientIDSetter`).
//! - [`properties`]: the properties string codec (`name\x01value\x02...`), an ordered
//!   property map, and [`properties::keys`], the `MessageConst` names we use.
//! - [`tags`]: the tags hash (`tagsCode`, Java's `String.hashCode`).

pub mod batch;
pub mod id;
pub mod properties;
pub mod record;
pub mod tags;
