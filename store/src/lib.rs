//! The sluice message store, byte-compatible with Apache RocketMQ's.
//!
//! Every message of every topic is appended to one log, the CommitLog, made of fixed
//! size files named by the offset of their first byte. A put takes one lock, encodes
//! the record straight into the mapped tail file and returns; durability is a separate
//! future (group commit under `SYNC_FLUSH`). A dispatch thread follows the log and
//! writes, per message, a 20-byte unit into the consume queue of its (topic, queue) and
//! its keys into the index, which is what pulls and key queries read. After a crash the
//! `abort` file tells recovery to validate the tail record by record and cut it at the
//! first invalid byte, then to bring the consume queues and index back in line with
//! it. Old files expire by age or disk usage.
//!
//! The message format itself (record codec, batch body, ids, properties, tags hash) is
//! the `message` crate's; the store calls it.
//!
//! Layout:
//! - [`config`]: `StoreConfig` with RocketMQ's key names and defaults, `sanitize`.
//! - [`error`]: `StoreError`, `ConfigError`, `Result`.
//! - [`clock`]: the `Clock` seam (expiry, pacing, index names) and local time.
//! - [`put`]: what a put takes: one message or a client batch.
//! - [`mapped_file`]: one mapped file, its single writer, read slices, transient pool
//!   buffers, reader-safe deletion, word-mapped files (the only `unsafe`).
//! - [`mapped_file_queue`]: the ordered files: load, find, flush/commit across files.
//! - [`commit_log`]: put path, flush completion, reads, queue offsets; `commit_log/status.rs`
//!   holds the result types, `commit_log/ha.rs` the HA append/truncate,
//!   `commit_log/flush.rs` the flush services (group commit, async flush, pool commit,
//!   flush-timeout watcher).
//! - `service_thread` (private): the named thread with a stop flag and wake-up that
//!   every background service runs on.
//! - `file_allocator` (private): creates the next CommitLog file ahead of the writer and
//!   pre-faults the pages just ahead of it.
//! - [`offset_watch`]: "wait for offset >= N with timeout", async and blocking.
//! - [`checkpoint`]: the `checkpoint` file.
//! - [`lock`]: the `lock` file: one process per store.
//! - [`recovery`]: pure scan of a file's bytes plus the truncating shell.
//! - [`consume_queue`]: 20-byte units per (topic, queue), the table of queues.
//! - [`index`]: index files (header, slots, entries), the index service.
//! - [`dispatch`]: reput: follow the log into consume queues, index and listeners.
//! - [`cleanup`]: expiry by `fileReservedTime` / `deleteWhen` / disk usage.
//! - [`timer`]: the timer store's file layout (timerlog units, wheel slots, checkpoint).
//! - [`message_store`]: the store as the broker sees it: open/recover, puts, pulls and
//!   lookups, role and disk refusals, services, shutdown.

pub mod checkpoint;
pub mod cleanup;
pub mod clock;
pub mod commit_log;
pub mod config;
pub mod consume_queue;
pub mod dispatch;
pub mod error;
mod file_allocator;
pub mod index;
pub mod lock;
pub mod mapped_file;
pub mod mapped_file_queue;
pub mod message_store;
pub mod offset_watch;
pub mod page_cache;
pub mod page_file;
pub mod put;
pub mod recovery;
mod service_thread;
pub mod timer;

pub use cleanup::{CleanReport, DiskUsage, DiskVerdict, ManualDiskUsage, StatvfsDiskUsage};
pub use clock::{Clock, ManualClock, SystemClock};
pub use commit_log::{
    AppendResult, CommitLog, FlushMeters, FlushWait, PhyOffset, PutMessageStatus, PutResult,
    QueueOffset, RecordAt,
};
pub use config::{FlushDiskType, StoreConfig};
pub use consume_queue::BoundaryType;
pub use dispatch::{DispatchListener, DispatchRequest};
pub use error::{ConfigError, Result, StoreError};
pub use message_store::{
    GetMessageResult, GetMessageStatus, LogicsRecovery, MatchAll, MessageFilter, MessageStore,
    QueryMessageResult, StoreEnv,
};
pub use put::{MessageBatch, MessageInner};
pub use recovery::{RecoveryMode, RecoveryReport};
