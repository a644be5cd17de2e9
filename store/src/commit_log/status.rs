//! What a put returns: status, where it landed, and the offset newtypes.

use std::fmt;
use std::net::SocketAddr;

use bytes::Bytes;
use message::id::OffsetMsgId;

/// A CommitLog byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PhyOffset(pub u64);

/// A consume-queue position (unit index) of one (topic, queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct QueueOffset(pub u64);

impl fmt::Display for PhyOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Outcome of a put, RocketMQ `PutMessageStatus` plus [`WriterPoisoned`].
///
/// [`WriterPoisoned`]: PutMessageStatus::WriterPoisoned
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PutMessageStatus {
    /// Stored (and, where waited for, flushed).
    PutOk,
    /// SYNC_FLUSH: no sync covered the record within `syncFlushTimeout`.
    FlushDiskTimeout,
    /// Sync replication timed out (HA, later).
    FlushSlaveTimeout,
    /// Sync replication has no slave in reach (HA, later).
    SlaveNotAvailable,
    /// The store does not accept puts (shutting down, read-only).
    ServiceNotAvailable,
    /// The next CommitLog file could not be created (disk full, I/O error).
    CreateMappedFileFailed,
    /// Body, record or batch too large or malformed.
    MessageIllegal,
    /// Properties string longer than 32767 bytes.
    PropertiesSizeExceeded,
    /// The put lock is held too long (the broker checks `lock_time_millis`).
    OsPageCacheBusy,
    /// Anything else.
    UnknownError,
    /// An earlier write or sync failed; nothing more is written until the store is
    /// reopened. RocketMQ has no such status: report it as `SERVICE_NOT_AVAILABLE`.
    WriterPoisoned,
    /// The disk is fuller than `diskSpaceWarningLevelRatio`: puts are refused until
    /// cleanup frees space (RocketMQ's `DISK_FULL` running flag, reported as
    /// `SERVICE_NOT_AVAILABLE`; the store's `put_refusal_reason` says why).
    DiskFull,
}

impl PutMessageStatus {
    /// Whether the put succeeded.
    #[must_use]
    pub fn is_ok(self) -> bool {
        self == PutMessageStatus::PutOk
    }

    /// The RocketMQ status this maps to (ours collapse onto theirs).
    #[must_use]
    pub fn rocketmq(self) -> PutMessageStatus {
        match self {
            PutMessageStatus::WriterPoisoned | PutMessageStatus::DiskFull => {
                PutMessageStatus::ServiceNotAvailable
            }
            other => other,
        }
    }

    /// RocketMQ's spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PutMessageStatus::PutOk => "PUT_OK",
            PutMessageStatus::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
            PutMessageStatus::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
            PutMessageStatus::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
            PutMessageStatus::ServiceNotAvailable => "SERVICE_NOT_AVAILABLE",
            PutMessageStatus::CreateMappedFileFailed => "CREATE_MAPPED_FILE_FAILED",
            PutMessageStatus::MessageIllegal => "MESSAGE_ILLEGAL",
            PutMessageStatus::PropertiesSizeExceeded => "PROPERTIES_SIZE_EXCEEDED",
            PutMessageStatus::OsPageCacheBusy => "OS_PAGE_CACHE_BUSY",
            PutMessageStatus::UnknownError => "UNKNOWN_ERROR",
            PutMessageStatus::WriterPoisoned => "WRITER_POISONED",
            PutMessageStatus::DiskFull => "DISK_FULL",
        }
    }
}

impl fmt::Display for PutMessageStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a put landed (RocketMQ `AppendMessageResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    /// Offset of the (first) record.
    pub wrote_offset: PhyOffset,
    /// Bytes written (all records of a batch).
    pub wrote_bytes: usize,
    /// Queue offset of the (first) record.
    pub queue_offset: QueueOffset,
    /// Store timestamp given to the record(s).
    pub store_timestamp: i64,
    /// Records written.
    pub msg_num: usize,
    /// Offset of every record of a batch (empty for a single put).
    pub record_offsets: Vec<PhyOffset>,
    /// Store host, for message ids.
    pub store_host: SocketAddr,
}

impl AppendResult {
    /// Offset just past the last record: what a flush must cover.
    #[must_use]
    pub fn end_offset(&self) -> PhyOffset {
        PhyOffset(self.wrote_offset.0 + self.wrote_bytes as u64)
    }

    /// The offset message id (comma-joined ids for a batch), as RocketMQ returns it.
    #[must_use]
    pub fn msg_id(&self) -> String {
        if self.record_offsets.is_empty() {
            return OffsetMsgId {
                addr: self.store_host,
                offset: self.wrote_offset.0,
            }
            .encode();
        }
        self.record_offsets
            .iter()
            .map(|o| {
                OffsetMsgId {
                    addr: self.store_host,
                    offset: o.0,
                }
                .encode()
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Result of a put: status plus, when something was written, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// Status.
    pub status: PutMessageStatus,
    /// Where it landed (`None` if nothing was written).
    pub append: Option<AppendResult>,
}

impl PutResult {
    pub(crate) fn failed(status: PutMessageStatus) -> Self {
        PutResult {
            status,
            append: None,
        }
    }
}

/// A record or the end-of-file marker read by offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordAt {
    /// The whole record, a slice of the mapping (decode with [`message::record::decode`]).
    Message(Bytes),
    /// The BLANK marker: the log continues at `next`.
    EndOfFile {
        /// Start of the next file.
        next: PhyOffset,
    },
}
