//! The seam between HA and the store: [`HaLog`], which the broker implements over
//! the CommitLog. `ha` depends on nothing of ours, so everything replication needs
//! from the log goes through these few methods.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use crate::error::LogError;

/// A future resolving once the log may have grown beyond an offset (see
/// [`HaLog::wait_beyond`]).
pub type GrowthWait = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The CommitLog as replication sees it. Offsets are physical CommitLog byte offsets.
///
/// A master uses `max_offset`, `min_offset`, `file_size`, `read` and `wait_beyond`;
/// a slave uses `max_offset`, `append` and `truncate`. One store implements both,
/// because a broker switches roles without reopening its store.
///
/// Implementations are called from the HA event-loop threads, so every method must
/// return quickly: no waiting on locks held across I/O, no blocking for data.
///
/// The broker maps these onto the store directly (`MessageStore` for the writes, so
/// dispatch and consume queues follow; its `CommitLog` for the reads):
///
/// ```ignore
/// struct StoreLog(Arc<store::MessageStore>);
///
/// impl ha::HaLog for StoreLog {
///     fn max_offset(&self) -> u64 { self.0.commit_log().max_offset().0 }
///     fn min_offset(&self) -> u64 { self.0.commit_log().min_offset().0 }
///     fn file_size(&self) -> u64 { self.0.config().mapped_file_size_commit_log }
///     fn read(&self, offset: u64, max_len: usize) -> Option<Bytes> {
///         let b = self.0.commit_log().read_from(PhyOffset(offset))?;
///         Some(b.slice(..b.len().min(max_len)))
///     }
///     fn wait_beyond(&self, offset: u64) -> ha::GrowthWait {
///         let w = self.0.commit_log().readable_watch().wait(offset + 1, Duration::from_secs(3600));
///         Box::pin(async move { let _ = w.await; })
///     }
///     fn append(&self, offset: u64, data: &[u8]) -> Result<(), ha::LogError> {
///         self.0.append_raw(PhyOffset(offset), data).map_err(|e| match e {
///             StoreError::OffsetMismatch { requested, actual } =>
///                 ha::LogError::OffsetMismatch { requested, actual },
///             e => ha::LogError::store(e),
///         })
///     }
///     fn truncate(&self, offset: u64) -> Result<(), ha::LogError> {
///         self.0.truncate_dirty(PhyOffset(offset)).map_err(ha::LogError::store)
///     }
/// }
/// ```
pub trait HaLog: Send + Sync + 'static {
    /// End of the bytes that may be replicated: the CommitLog's readable (committed)
    /// end, where the next record will go.
    ///
    /// The master refuses a slave reporting more than this (the slave holds bytes the
    /// master does not; acking them lost messages in RocketMQ, #1155 / #3015) and
    /// never sends beyond it. The slave reports it as its ack and checks every frame
    /// against it.
    fn max_offset(&self) -> u64;

    /// First offset still held. A slave asking for less cannot be served (those files
    /// expired); the master closes it with an error instead of stalling silently.
    fn min_offset(&self) -> u64;

    /// Size of one CommitLog file (`mappedFileSizeCommitLog`). A slave reporting 0 is
    /// empty, and RocketMQ starts it at the start of the master's last file:
    /// `max_offset - max_offset % file_size`.
    fn file_size(&self) -> u64;

    /// Up to `max_len` readable bytes from `offset`, never crossing the end of the
    /// file that holds `offset`; `None` (or an empty slice) when nothing is readable
    /// there. Should be a zero-copy slice of the mapped file: the master writes it to
    /// the socket as is, next to the frame header, with one vectored write.
    fn read(&self, offset: u64, max_len: usize) -> Option<Bytes>;

    /// A future that resolves once `max_offset() > offset` (it may also resolve
    /// early; the master then just looks again). The master's event loop polls it
    /// with a waker that wakes the loop, so a slave that has caught up is fed within
    /// microseconds of a put, without polling the log on a timer. Over the store,
    /// this is a wait on the CommitLog's readable `OffsetWatch`.
    fn wait_beyond(&self, offset: u64) -> GrowthWait;

    /// Appends replicated bytes at exactly `offset` (slave). `offset` must be the end
    /// of the log; on an empty log it starts the log there (the master starts an
    /// empty slave at a file boundary). The bytes may span files.
    ///
    /// # Errors
    /// [`LogError::OffsetMismatch`] when `offset` is not the end of the log (the
    /// connection is dropped and resynchronised from the log's end); anything else
    /// (poisoned writer, I/O) drops the connection too and is logged as an error.
    fn append(&self, offset: u64, data: &[u8]) -> Result<(), LogError>;

    /// Cuts the log back to `offset`, a record boundary (slave following a new
    /// master that lacks this log's tail), consume queues and index included. The HA
    /// client calls it on its own thread, between connections, so it never races an
    /// append of replicated bytes; it may take a while (dispatch catching up).
    ///
    /// # Errors
    /// `offset` is outside the log or the store cannot cut it.
    fn truncate(&self, offset: u64) -> Result<(), LogError>;
}
