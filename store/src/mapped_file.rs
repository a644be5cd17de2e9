//! One fixed-size CommitLog file mapped into memory, its single writer, zero-copy read
//! slices, and the transient store pool's locked buffers.
//!
//! This is the only module with `unsafe`. The mapping is a `MAP_SHARED` [`MmapRaw`]
//! that several parties touch through raw pointers, each in its own byte range:
//!
//! * the one [`FileWriter`] (at most one exists per file, enforced by a flag; the
//!   CommitLog keeps it under its put lock) writes at and after the write position,
//!   which nobody else reads, then publishes the new position with `Release`;
//! * readers get [`Bytes`] only below the committed position, a range that is never
//!   written again, except by [`FileWriter::truncate_to`], which first lowers the
//!   positions and then waits until no reader slice of the file is alive;
//! * the flush thread only calls `msync` on the published range (no Rust references);
//! * with the transient pool, the writer writes into a locked anonymous buffer
//!   instead, and the commit thread copies the published part of it into the file
//!   with `pwrite`.
//!
//! Space for a file is reserved with `posix_fallocate` when it is created, so a full
//! disk is an error at creation, never a `SIGBUS` on a page fault of the put path.
//! Consume-queue files are created sparse (as RocketMQ's are) and reserved piece by
//! piece ahead of the writer with [`MappedFile::reserve`], for the same reason.
//!
//! Deletion never pulls a mapping from under a reader: [`MappedFile::destroy_when_unused`]
//! first makes the file refuse new slices, and unlinks it once the live ones are gone
//! (or, past `destroyMapedFileIntervalForcibly`, while they are still alive: the mapping
//! lives on in those slices, so their bytes stay valid; the space returns to the file
//! system when the last one is dropped).
//!
//! [`MappedWords`] is a second kind of mapping, for the index file: it is only ever
//! accessed through aligned atomic loads and stores (random writes by the dispatch
//! thread, concurrent reads by queries), never through slices.

#![allow(unsafe_code)]

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use memmap2::{Advice, MmapOptions, MmapRaw};
use parking_lot::Mutex;
use tracing::{debug, info, warn};

use crate::error::{Result, StoreError};

/// OS page size assumed for flush/commit thresholds (RocketMQ `OS_PAGE_SIZE`).
pub const OS_PAGE_SIZE: usize = 4096;

/// The 20-digit, zero-padded file name of a file starting at `offset`.
#[must_use]
pub fn file_name(offset: u64) -> String {
    format!("{offset:020}")
}

/// The start offset encoded in a file name, if it is one of ours.
#[must_use]
pub fn parse_file_name(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

/// Fsyncs a directory so that a rename or unlink in it is durable.
///
/// # Errors
/// The directory cannot be opened or synced.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io("fsync dir", dir, e))
}

/// `posix_fallocate(file, pos, len)`.
fn fallocate(file: &File, path: &Path, pos: u64, len: u64) -> Result<()> {
    let invalid = || {
        StoreError::io(
            "fallocate",
            path,
            std::io::Error::from(std::io::ErrorKind::InvalidInput),
        )
    };
    let pos = libc::off_t::try_from(pos).map_err(|_| invalid())?;
    let len = libc::off_t::try_from(len).map_err(|_| invalid())?;
    // SAFETY: plain syscall on a descriptor the caller owns and keeps open; no memory
    // is passed to the kernel.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), pos, len) };
    if rc != 0 {
        return Err(StoreError::io(
            "fallocate",
            path,
            std::io::Error::from_raw_os_error(rc),
        ));
    }
    Ok(())
}

/// Creates `path` through `<path>.tmp` and a rename, so a file under its final name
/// always has its full size: reserved with `posix_fallocate`, synced, and the
/// directory synced if `reserve` (CommitLog files, created off the put path); sparse
/// and unsynced otherwise (consume-queue and index files, created on the dispatch
/// thread, which must not wait for the disk; RocketMQ never syncs these either, and
/// recovery rebuilds what a power loss takes).
fn create_file(dir: &Path, path: &Path, size: usize, reserve: bool) -> Result<File> {
    let tmp = path.with_extension("tmp");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| StoreError::io("create", &tmp, e))?;
    let prepare = || -> Result<()> {
        if reserve {
            fallocate(&file, &tmp, 0, size as u64)?;
            file.sync_all()
                .map_err(|e| StoreError::io("fsync", &tmp, e))?;
        } else {
            file.set_len(size as u64)
                .map_err(|e| StoreError::io("truncate", &tmp, e))?;
        }
        if path.exists() {
            return Err(StoreError::io(
                "create",
                path,
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        fs::rename(&tmp, path).map_err(|e| StoreError::io("rename", &tmp, e))?;
        if reserve { sync_dir(dir) } else { Ok(()) }
    };
    if let Err(e) = prepare() {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(file)
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A locked, anonymous buffer of one file's size (transient store pool).
#[derive(Debug)]
pub struct PoolBuffer {
    mem: MmapRaw,
}

/// The transient store pool: `transientStorePoolSize` buffers, each one file in size,
/// locked into RAM when the OS lets us (`mlock`).
#[derive(Debug)]
pub struct TransientStorePool {
    free: Mutex<Vec<Arc<PoolBuffer>>>,
    buffer_size: usize,
}

impl TransientStorePool {
    /// Allocates `count` buffers of `buffer_size` bytes.
    ///
    /// # Errors
    /// The anonymous mappings cannot be made.
    pub fn new(count: usize, buffer_size: usize) -> Result<Self> {
        let mut free = Vec::with_capacity(count);
        for _ in 0..count {
            let mem = MmapOptions::new()
                .len(buffer_size)
                .map_anon()
                .map_err(|e| StoreError::io("mmap anon", "transient store pool", e))?;
            if let Err(e) = mem.lock() {
                warn!(error = %e, buffer_size, "cannot mlock transient store pool buffer; using it unlocked");
                // Still fault it in now, not on the put path.
                if let Err(e) = mem.advise(Advice::PopulateWrite) {
                    warn!(error = %e, "cannot prefault transient store pool buffer");
                }
            }
            free.push(Arc::new(PoolBuffer {
                mem: MmapRaw::from(mem),
            }));
        }
        info!(count, buffer_size, "transient store pool ready");
        Ok(TransientStorePool {
            free: Mutex::new(free),
            buffer_size,
        })
    }

    fn borrow(&self) -> Option<Arc<PoolBuffer>> {
        self.free.lock().pop()
    }

    fn give_back(&self, buf: Arc<PoolBuffer>) {
        self.free.lock().push(buf);
    }

    /// Size of each buffer.
    #[must_use]
    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// Buffers currently free.
    #[must_use]
    pub fn available(&self) -> usize {
        self.free.lock().len()
    }
}

/// The shared state of one mapped file.
#[derive(Debug)]
struct Region {
    mmap: MmapRaw,
    file: File,
    path: PathBuf,
    from: u64,
    size: usize,
    /// End of the bytes the writer has published.
    wrote: AtomicUsize,
    /// End of the bytes readers may see (== `wrote` unless a pool buffer is used).
    committed: AtomicUsize,
    /// End of the bytes known durable.
    flushed: AtomicUsize,
    /// Store timestamp of the last record published.
    store_timestamp: AtomicI64,
    /// Live [`Bytes`] slices of this file.
    readers: AtomicUsize,
    writer_taken: AtomicBool,
    /// Cleared when deletion starts: no new read slices from then on.
    available: AtomicBool,
    /// Store clock (ms) of the first deletion attempt.
    first_shutdown_ms: AtomicI64,
    /// Unlinked from its directory.
    unlinked: AtomicBool,
    /// Transient pool buffer while it is in use; guards commits.
    pool: Mutex<Option<(Arc<PoolBuffer>, Arc<TransientStorePool>)>>,
}

/// One CommitLog file: cheap to clone (reference counted); the mapping lives until the
/// last clone and the last read slice are dropped, even after the file is deleted.
#[derive(Debug, Clone)]
pub struct MappedFile(Arc<Region>);

impl MappedFile {
    /// Creates `dir/<20-digit from>` of `size` bytes with space reserved up front:
    /// written as `<name>.tmp`, `posix_fallocate`d, synced, renamed, directory synced.
    ///
    /// # Errors
    /// The file exists, the disk is full (`fallocate`), or mapping fails.
    pub fn create(
        dir: &Path,
        from: u64,
        size: usize,
        pool: Option<&Arc<TransientStorePool>>,
    ) -> Result<Self> {
        let path = dir.join(file_name(from));
        let file = create_file(dir, &path, size, true)?;
        let mf = Self::map(file, path, from, size, 0)?;
        if let Some(pool) = pool {
            match pool.borrow() {
                Some(buf) => *mf.0.pool.lock() = Some((buf, Arc::clone(pool))),
                None => {
                    warn!(file = %mf.path().display(), "transient store pool exhausted; writing this file through the mapping")
                }
            }
        }
        debug!(file = %mf.path().display(), size, "created mapped file");
        Ok(mf)
    }

    /// Creates `dir/<20-digit from>` of `size` bytes as a sparse file (consume
    /// queues): the writer reserves space ahead of itself with [`reserve`](Self::reserve).
    ///
    /// # Errors
    /// The file exists, or creating or mapping it fails.
    pub fn create_sparse(dir: &Path, from: u64, size: usize) -> Result<Self> {
        let path = dir.join(file_name(from));
        let file = create_file(dir, &path, size, false)?;
        let mf = Self::map(file, path, from, size, 0)?;
        debug!(file = %mf.path().display(), size, "created sparse mapped file");
        Ok(mf)
    }

    /// Marks the mapping for random access (`MADV_RANDOM`) or back to normal. A page
    /// fault in a sparse file otherwise makes the kernel read ahead (zero-fill) up to
    /// `read_ahead_kb` of holes (8 MiB on this project's VMs) into the page cache:
    /// measured at 30 µs of every unit appended when 1 000 queues start their files.
    /// The writer of a consume queue sets it on the file it fills, and clears it when
    /// the file is full, so later cold reads get readahead again. Best effort.
    pub fn advise_random(&self, random: bool) {
        let advice = if random {
            Advice::Random
        } else {
            Advice::Normal
        };
        if let Err(e) = self.0.mmap.advise(advice) {
            debug!(file = %self.path().display(), error = %e, "madvise failed");
        }
    }

    /// Drops the pages of `[pos, pos + len)` that are synced to disk from this process's
    /// mapping (`MADV_DONTNEED`), so they no longer count in its resident memory: a
    /// later read faults them back in from the page cache or the disk, unchanged (the
    /// mapping is shared and file-backed). The range is widened down to its first page
    /// and cut to whole pages below the flushed position (every page released is fully
    /// synced). Best effort.
    pub fn release(&self, pos: usize, len: usize) {
        let flushed = self.flushed_position();
        let start = pos / OS_PAGE_SIZE * OS_PAGE_SIZE;
        let end = (pos.saturating_add(len)).min(flushed) / OS_PAGE_SIZE * OS_PAGE_SIZE;
        if end <= start {
            return;
        }
        // SAFETY: the mapping is MAP_SHARED over a regular file and [start, end) lies
        // below the flushed position: MADV_DONTNEED only drops this process's page table
        // entries there; the data stays in the page cache and on disk, and the next
        // access reads the same bytes back. No memory is freed that a slice relies on.
        let advised = unsafe {
            self.0.mmap.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                start,
                end - start,
            )
        };
        if let Err(e) = advised {
            debug!(file = %self.path().display(), error = %e, "madvise(DONTNEED) failed");
        }
    }

    /// Bytes of the mapping resident in this process (its `Rss` in `/proc/self/smaps`;
    /// tests, diagnostics). `None` when it cannot be read.
    #[must_use]
    pub fn resident_bytes(&self) -> Option<u64> {
        let start = format!("{:x}-", self.0.mmap.as_ptr() as usize);
        let smaps = fs::read_to_string("/proc/self/smaps").ok()?;
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
        lines.next()?;
        let rss = lines.find_map(|l| l.strip_prefix("Rss:"))?;
        let kb: u64 = rss.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    }

    /// Drops the file's synced pages from memory — this mapping's
    /// ([`release`](Self::release)) and the page cache (`POSIX_FADV_DONTNEED`) — so the next
    /// read of them comes from the disk: cold reads in tests and benchmarks. Pages not yet
    /// synced stay. Best effort (a file system without a page cache of its own, tmpfs,
    /// keeps them); false if the kernel refused the advice.
    pub fn drop_cached_pages(&self) -> bool {
        self.release(0, self.0.size);
        // SAFETY: an advice about our own open file descriptor; no memory is touched.
        let rc = unsafe {
            libc::posix_fadvise(self.0.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
        };
        rc == 0
    }

    /// Whether every page of `[pos, pos + len)` is in the page cache (`mincore`): a read
    /// there costs no disk I/O. `None` if the range is outside the file or the call fails.
    #[must_use]
    pub fn is_resident(&self, pos: usize, len: usize) -> Option<bool> {
        let end = pos.checked_add(len.max(1))?;
        if end > self.0.size {
            return None;
        }
        let first = pos / OS_PAGE_SIZE;
        let last = (end - 1) / OS_PAGE_SIZE;
        // A few pages at a time: a message of up to 4 MiB is 1 024 pages.
        let mut vec = [0u8; 64];
        let mut page = first;
        while page <= last {
            let pages = (last - page + 1).min(vec.len());
            // SAFETY: the page-aligned range [page, page + pages) lies inside the mapping
            // (end <= size, and the mapping covers whole pages); `vec` holds one byte per
            // page of it. mincore only reads the page tables.
            let rc = unsafe {
                libc::mincore(
                    self.0.mmap.as_mut_ptr().add(page * OS_PAGE_SIZE).cast(),
                    pages * OS_PAGE_SIZE,
                    vec.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return None;
            }
            if vec[..pages].iter().any(|v| v & 1 == 0) {
                return Some(false);
            }
            page += pages;
        }
        Some(true)
    }

    /// Reserves disk space for `[pos, pos + len)` (`posix_fallocate`), so writes
    /// there cannot fault on a full disk. File systems without `fallocate` are
    /// accepted as they are.
    ///
    /// # Errors
    /// The disk is full or the call fails otherwise.
    pub fn reserve(&self, pos: usize, len: usize) -> Result<()> {
        let len = len.min(self.0.size.saturating_sub(pos));
        if len == 0 {
            return Ok(());
        }
        match fallocate(&self.0.file, &self.0.path, pos as u64, len as u64) {
            Err(StoreError::Io { source, .. })
                if source.raw_os_error() == Some(libc::EOPNOTSUPP) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    /// Maps an existing file; all positions start at `size` (recovery sets them).
    ///
    /// # Errors
    /// The file cannot be opened or mapped, or its length is not `size`.
    pub fn open(path: &Path, from: u64, size: usize) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| StoreError::io("open", path, e))?;
        let actual = file
            .metadata()
            .map_err(|e| StoreError::io("stat", path, e))?
            .len();
        if actual != size as u64 {
            return Err(StoreError::FileSize {
                file: path.to_owned(),
                actual,
                expected: size as u64,
            });
        }
        Self::map(file, path.to_owned(), from, size, size)
    }

    fn map(file: File, path: PathBuf, from: u64, size: usize, pos: usize) -> Result<Self> {
        let mmap = MmapOptions::new()
            .len(size)
            .map_raw(&file)
            .map_err(|e| StoreError::io("mmap", &path, e))?;
        Ok(MappedFile(Arc::new(Region {
            mmap,
            file,
            path,
            from,
            size,
            wrote: AtomicUsize::new(pos),
            committed: AtomicUsize::new(pos),
            flushed: AtomicUsize::new(pos),
            store_timestamp: AtomicI64::new(0),
            readers: AtomicUsize::new(0),
            writer_taken: AtomicBool::new(false),
            available: AtomicBool::new(true),
            first_shutdown_ms: AtomicI64::new(0),
            unlinked: AtomicBool::new(false),
            pool: Mutex::new(None),
        })))
    }

    /// Pre-faults the pages of `[pos, pos + len)` writable (`MADV_POPULATE_WRITE`), so
    /// the put path takes no page faults there. One call over a range is far cheaper
    /// than faulting page by page (measured on this project's VM: first-touch writes
    /// ran at ~300 MiB/s, writes into pre-faulted pages at memory speed). Callers keep
    /// ranges small (a few MiB): a long populate holds the mapping lock and stalls
    /// syncs. Contents are unchanged. Returns where the range ends. Best effort.
    pub fn prefault(&self, pos: usize, len: usize) -> usize {
        let pos = pos - pos % OS_PAGE_SIZE;
        let end = pos.saturating_add(len).min(self.0.size);
        if pos < end {
            if let Err(e) = self
                .0
                .mmap
                .advise_range(Advice::PopulateWrite, pos, end - pos)
            {
                debug!(file = %self.path().display(), error = %e, "cannot prefault mapped file");
            }
        }
        end.max(pos)
    }

    /// Warms a new file as RocketMQ's `warmMapedFileEnable` does: every page is
    /// touched and the whole file synced, so its extents are allocated and written
    /// before use and later syncs carry no extent conversions. Costs one write of the
    /// file's size to disk. Best effort.
    pub fn warm(&self) {
        let start = Instant::now();
        let mut at = 0;
        while at < self.0.size {
            at = self.prefault(at, 4 << 20);
        }
        match self.0.mmap.flush() {
            Ok(()) => info!(
                file = %self.path().display(),
                elapsed_ms = start.elapsed().as_millis() as u64,
                "warmed mapped file"
            ),
            Err(e) => warn!(file = %self.path().display(), error = %e, "cannot warm mapped file"),
        }
    }

    /// Whether puts write through the mapping (no transient pool buffer).
    #[must_use]
    pub fn is_mapped_write_target(&self) -> bool {
        self.0.pool.lock().is_none()
    }

    /// Offset of the first byte (the file name).
    #[must_use]
    pub fn from(&self) -> u64 {
        self.0.from
    }

    /// File size.
    #[must_use]
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// Path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// End of published bytes (relative).
    #[must_use]
    pub fn wrote_position(&self) -> usize {
        self.0.wrote.load(Ordering::Acquire)
    }

    /// End of readable bytes (relative).
    #[must_use]
    pub fn read_position(&self) -> usize {
        self.0.committed.load(Ordering::Acquire)
    }

    /// End of durable bytes (relative).
    #[must_use]
    pub fn flushed_position(&self) -> usize {
        self.0.flushed.load(Ordering::Acquire)
    }

    /// Whether the file has no room left.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.wrote_position() == self.0.size
    }

    /// Store timestamp of the last record written.
    #[must_use]
    pub fn store_timestamp(&self) -> i64 {
        self.0.store_timestamp.load(Ordering::Acquire)
    }

    /// Takes the file's single writer, positioned at the write position; `None` if
    /// another writer is alive.
    #[must_use]
    pub fn writer(&self) -> Option<FileWriter> {
        if self.0.writer_taken.swap(true, Ordering::AcqRel) {
            return None;
        }
        let (target, pooled) = match &*self.0.pool.lock() {
            Some((buf, _)) => (buf.mem.as_mut_ptr(), true),
            None => (self.0.mmap.as_mut_ptr(), false),
        };
        Some(FileWriter {
            file: self.clone(),
            target,
            pos: self.wrote_position(),
            pooled,
        })
    }

    /// A zero-copy slice of `len` readable bytes at `pos`; `None` if not all readable.
    #[must_use]
    pub fn slice(&self, pos: usize, len: usize) -> Option<Bytes> {
        let r = &self.0;
        // Dekker-style handshake with `truncate_to`: count ourselves first, then check
        // the position; the truncator lowers the position first, then checks the count.
        // The same handshake guards deletion through `available`.
        r.readers.fetch_add(1, Ordering::SeqCst);
        let end = pos.checked_add(len);
        if !r.available.load(Ordering::SeqCst)
            || end.is_none_or(|end| end > r.committed.load(Ordering::SeqCst))
        {
            r.readers.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Bytes::from_owner(SliceOwner {
            region: Arc::clone(r),
            pos,
            len,
        }))
    }

    /// Runs `f` over `len` readable bytes at `pos` without allocating a slice (the
    /// bytes are counted as read while `f` runs); `None` if they are not all readable.
    pub fn read_with<R>(&self, pos: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let r = &self.0;
        r.readers.fetch_add(1, Ordering::SeqCst);
        let end = pos.checked_add(len);
        if !r.available.load(Ordering::SeqCst)
            || end.is_none_or(|end| end > r.committed.load(Ordering::SeqCst))
        {
            r.readers.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        struct Release<'a>(&'a AtomicUsize);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _counted = Release(&r.readers);
        // SAFETY: as for `SliceOwner::as_ref`: [pos, pos + len) is below the committed
        // position, which the writer never writes again, and `truncate_to` waits for
        // `readers` (counted until `_counted` drops, after `f`) to reach zero before it
        // rewrites anything. `self` keeps the mapping alive.
        let bytes = unsafe { std::slice::from_raw_parts(r.mmap.as_ptr().add(pos), len) };
        Some(f(bytes))
    }

    /// All readable bytes from `pos` on.
    #[must_use]
    pub fn slice_from(&self, pos: usize) -> Option<Bytes> {
        let end = self.read_position();
        if pos > end {
            return None;
        }
        self.slice(pos, end - pos)
    }

    /// Runs `f` over the whole mapping, regardless of positions. For recovery only,
    /// before any writer or reader of the file exists.
    pub(crate) fn with_raw<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        // SAFETY: recovery calls this while it owns the only handle to the queue: no
        // writer exists yet and no reader slices have been handed out, so nothing
        // mutates the mapping while `f` reads it. The mapping is `size` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(self.0.mmap.as_ptr(), self.0.size) };
        f(bytes)
    }

    /// The extents of `[from, size)` that may hold data, in order: what the file system
    /// reports between `SEEK_DATA` and `SEEK_HOLE`. Space reserved by `posix_fallocate`
    /// and never written is a hole here, so a scan can skip it instead of reading it
    /// through the mapping, which would make the kernel zero-fill a page cache page for
    /// every page read. A file system that cannot tell reports everything as data.
    pub(crate) fn data_extents(&self, from: usize) -> Vec<std::ops::Range<usize>> {
        use rustix::fs::{SeekFrom, seek};
        let size = self.0.size as u64;
        let mut extents = Vec::new();
        let mut pos = from as u64;
        while pos < size {
            let start = match seek(&self.0.file, SeekFrom::Data(pos)) {
                Ok(start) if start < size => start,
                // No data from `pos` on.
                Ok(_) | Err(rustix::io::Errno::NXIO) => break,
                Err(e) => {
                    debug!(file = %self.path().display(), error = %e, "SEEK_DATA failed: reading it all");
                    extents.push(pos as usize..self.0.size);
                    break;
                }
            };
            let end = seek(&self.0.file, SeekFrom::Hole(start)).map_or(size, |end| end.min(size));
            extents.push(start as usize..end as usize);
            pos = end;
        }
        extents
    }

    /// Copies pending pool-buffer bytes into the file (`pwrite`) when at least
    /// `least_pages` pages are pending (0: any). Returns the committed position.
    ///
    /// # Errors
    /// The write failed (the caller poisons the writer).
    pub fn commit(&self, least_pages: usize) -> Result<usize> {
        let r = &self.0;
        let mut guard = r.pool.lock();
        let Some((buf, _)) = guard.as_ref() else {
            return Ok(self.read_position());
        };
        let committed = r.committed.load(Ordering::Acquire);
        let wrote = r.wrote.load(Ordering::Acquire);
        let full = wrote == r.size;
        let pages_ok =
            least_pages == 0 || wrote / OS_PAGE_SIZE - committed / OS_PAGE_SIZE >= least_pages;
        if wrote > committed && (full || pages_ok) {
            // SAFETY: bytes [committed, wrote) of the pool buffer were written by the
            // writer before it published `wrote` (Release, read above with Acquire) and
            // are never written again while the buffer belongs to this file; the buffer
            // only goes back to the pool below, under this same lock.
            let data = unsafe {
                std::slice::from_raw_parts(buf.mem.as_ptr().add(committed), wrote - committed)
            };
            r.file
                .write_all_at(data, committed as u64)
                .map_err(|e| StoreError::io("pwrite", &r.path, e))?;
            r.committed.store(wrote, Ordering::Release);
        }
        if r.committed.load(Ordering::Acquire) == r.size {
            if let Some((buf, pool)) = guard.take() {
                pool.give_back(buf);
            }
        }
        Ok(r.committed.load(Ordering::Acquire))
    }

    /// Makes readable bytes durable (`msync(MS_SYNC)` of the unflushed range) when at
    /// least `least_pages` pages are dirty (0: any). Returns the flushed position.
    ///
    /// # Errors
    /// The sync failed (the caller poisons the writer).
    pub fn flush(&self, least_pages: usize) -> Result<usize> {
        let r = &self.0;
        let flushed = r.flushed.load(Ordering::Acquire);
        let target = r.committed.load(Ordering::Acquire);
        let full = target == r.size;
        let pages_ok =
            least_pages == 0 || target / OS_PAGE_SIZE - flushed / OS_PAGE_SIZE >= least_pages;
        if target > flushed && (full || pages_ok) {
            let start = flushed - flushed % OS_PAGE_SIZE;
            r.mmap
                .flush_range(start, target - start)
                .map_err(|e| StoreError::io("msync", &r.path, e))?;
            r.flushed.fetch_max(target, Ordering::AcqRel);
        }
        Ok(r.flushed.load(Ordering::Acquire))
    }

    /// Deletes the file from disk; the mapping lives on until the last clone and read
    /// slice are gone. Idempotent.
    ///
    /// # Errors
    /// The unlink failed.
    pub fn destroy(&self) -> Result<()> {
        if let Some((buf, pool)) = self.0.pool.lock().take() {
            pool.give_back(buf);
        }
        self.0.available.store(false, Ordering::SeqCst);
        if self.0.unlinked.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        match fs::remove_file(&self.0.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                self.0.unlinked.store(false, Ordering::Release);
                return Err(StoreError::io("unlink", &self.0.path, e));
            }
        }
        info!(file = %self.0.path.display(), "deleted mapped file");
        Ok(())
    }

    /// Paced, reader-safe deletion (RocketMQ `ReferenceResource.shutdown` +
    /// `MappedFile.destroy`): the first call makes the file refuse new read slices.
    /// The file is unlinked once no slice is alive, or once `interval_forcibly_ms` have
    /// passed since that first call (the slices stay valid: the mapping lives in
    /// them). Returns whether the file is gone.
    ///
    /// # Errors
    /// The unlink failed.
    pub fn destroy_when_unused(&self, now_ms: i64, interval_forcibly_ms: u64) -> Result<bool> {
        let r = &self.0;
        if r.available.swap(false, Ordering::SeqCst) {
            r.first_shutdown_ms.store(now_ms, Ordering::Release);
        }
        let readers = r.readers.load(Ordering::SeqCst);
        let waited = now_ms.saturating_sub(r.first_shutdown_ms.load(Ordering::Acquire));
        if readers > 0 {
            if waited < i64::try_from(interval_forcibly_ms).unwrap_or(i64::MAX) {
                debug!(file = %r.path.display(), readers, "deletion waits for readers");
                return Ok(false);
            }
            warn!(
                file = %r.path.display(),
                readers,
                waited_ms = waited,
                "deleting a file that readers still hold (destroyMapedFileIntervalForcibly); their bytes stay valid until they drop them"
            );
        }
        self.destroy()?;
        Ok(true)
    }

    /// Whether the file still hands out read slices (deletion has not started).
    #[must_use]
    pub fn is_available(&self) -> bool {
        self.0.available.load(Ordering::SeqCst)
    }

    /// The file's modification time in ms since the epoch (what expiry ages files
    /// by, as RocketMQ does); 0 if unknown.
    #[must_use]
    pub fn last_modified_ms(&self) -> i64 {
        self.0
            .file
            .metadata()
            .and_then(|m| m.modified())
            .map_or(0, millis)
    }

    /// Sets the modification time (when the writer leaves a full file, so that its
    /// age counts from its last record rather than from the last page fault).
    pub fn set_modified_ms(&self, ms: i64) {
        let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
        if let Err(e) = self.0.file.set_modified(t) {
            debug!(file = %self.0.path.display(), error = %e, "cannot set modification time");
        }
    }

    /// Sets all positions (recovery of a file that is not the last one, or is done).
    pub(crate) fn set_positions(&self, pos: usize) {
        let r = &self.0;
        r.wrote.store(pos, Ordering::Release);
        r.committed.store(pos, Ordering::Release);
        r.flushed.store(pos, Ordering::Release);
    }

    /// Live read slices (tests, diagnostics).
    #[must_use]
    pub fn reader_count(&self) -> usize {
        self.0.readers.load(Ordering::SeqCst)
    }
}

/// Keeps the region alive while a [`Bytes`] slice of it exists.
struct SliceOwner {
    region: Arc<Region>,
    pos: usize,
    len: usize,
}

impl AsRef<[u8]> for SliceOwner {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `slice` checked pos + len <= committed position, a range the writer
        // never writes again; `truncate_to` waits for `readers` (which counts this
        // owner) to reach zero before it rewrites anything. The Arc keeps the mapping.
        unsafe { std::slice::from_raw_parts(self.region.mmap.as_ptr().add(self.pos), self.len) }
    }
}

impl Drop for SliceOwner {
    fn drop(&mut self) {
        self.region.readers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The single writer of a [`MappedFile`]: appends at its position and publishes.
#[derive(Debug)]
pub struct FileWriter {
    file: MappedFile,
    /// Mapping or pool buffer base.
    target: *mut u8,
    pos: usize,
    pooled: bool,
}

// SAFETY: `target` points into the file's mapping or its pool buffer, both kept alive
// by `file` (the pool buffer's Arc lives in the region or the pool, which outlive the
// writer's use of it: a buffer only returns to the pool once the file is full, after
// which this writer has no room to write). Moving the writer between threads moves the
// exclusive right to write; nothing is tied to a thread.
unsafe impl Send for FileWriter {}

impl FileWriter {
    /// The file written.
    #[must_use]
    pub fn file(&self) -> &MappedFile {
        &self.file
    }

    /// Write position (relative).
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left in the file.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.file.0.size - self.pos
    }

    /// The `len` bytes at the write position, to be filled and then [`publish`]ed.
    ///
    /// # Panics
    /// If `len > remaining()`.
    ///
    /// [`publish`]: FileWriter::publish
    pub fn reserve(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.remaining(), "reserve past the end of the file");
        // SAFETY: [pos, pos + len) lies inside the mapping/pool buffer (checked above).
        // It is at or past the published write position, so no reader slice, commit or
        // other writer can observe it (this is the file's only writer), and the
        // returned borrow is tied to `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.target.add(self.pos), len) }
    }

    /// Publishes `len` more bytes (written through [`reserve`]) with the store timestamp
    /// of the last record in them.
    ///
    /// [`reserve`]: FileWriter::reserve
    pub fn publish(&mut self, len: usize, store_timestamp: i64) {
        debug_assert!(len <= self.remaining());
        self.pos += len;
        let r = &self.file.0;
        r.store_timestamp.store(store_timestamp, Ordering::Release);
        r.wrote.store(self.pos, Ordering::Release);
        if !self.pooled {
            r.committed.store(self.pos, Ordering::Release);
        }
    }

    /// Copies `data` in at the write position and publishes it.
    ///
    /// # Panics
    /// If it does not fit.
    pub fn append(&mut self, data: &[u8], store_timestamp: i64) {
        self.reserve(data.len()).copy_from_slice(data);
        self.publish(data.len(), store_timestamp);
    }

    /// Cuts the file back to `pos`: lowers the positions, waits (up to `wait`) for
    /// reader slices of the file to be dropped, zero-fills the data in `[pos, zero_end)`
    /// through the mapping and syncs it, so nothing stale past the new end can come back after a
    /// crash. A pool buffer still in use is committed and released first; the file is
    /// written through the mapping from then on.
    ///
    /// # Errors
    /// Readers still hold slices after `wait`, or the sync failed.
    pub fn truncate_to(&mut self, pos: usize, zero_end: usize, wait: Duration) -> Result<()> {
        let r = &self.file.0;
        let zero_end = zero_end.clamp(pos, r.size);
        if self.pooled {
            self.file.commit(0)?;
            if let Some((buf, pool)) = r.pool.lock().take() {
                pool.give_back(buf);
            }
            self.pooled = false;
            self.target = r.mmap.as_mut_ptr();
        }
        r.committed.fetch_min(pos, Ordering::SeqCst);
        r.wrote.fetch_min(pos, Ordering::SeqCst);
        r.flushed.fetch_min(pos, Ordering::SeqCst);
        let deadline = Instant::now() + wait;
        while r.readers.load(Ordering::SeqCst) > 0 {
            if Instant::now() >= deadline {
                return Err(StoreError::ReadersActive {
                    offset: r.from + pos as u64,
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if zero_end > pos {
            // Holes read as zeroes already: only the data extents are written (zeroing a
            // reserved, never-written GiB through the mapping would fault it all in).
            for extent in self.file.data_extents(pos) {
                let (start, end) = (extent.start, extent.end.min(zero_end));
                if start >= end {
                    break;
                }
                // SAFETY: positions are at `pos` and no reader slice exists (checked
                // after lowering them, see `slice`), and we are the only writer; so
                // nobody else reads or writes [pos, zero_end) of the mapping, and
                // [start, end) lies inside it.
                let tail = unsafe {
                    std::slice::from_raw_parts_mut(r.mmap.as_mut_ptr().add(start), end - start)
                };
                tail.fill(0);
            }
            let start = pos - pos % OS_PAGE_SIZE;
            r.mmap
                .flush_range(start, zero_end - start)
                .map_err(|e| StoreError::io("msync", &r.path, e))?;
        }
        self.pos = pos;
        r.wrote.store(pos, Ordering::SeqCst);
        r.committed.store(pos, Ordering::SeqCst);
        r.flushed.store(pos, Ordering::SeqCst);
        Ok(())
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        self.file.0.writer_taken.store(false, Ordering::Release);
    }
}

/// A mapped file accessed only through aligned atomic 32- and 64-bit words holding
/// big-endian values (the index file: the dispatch thread writes slots and entries at
/// random positions while queries read them). No slices are ever handed out, so no
/// non-atomic access can race with the atomic ones.
#[derive(Debug, Clone)]
pub struct MappedWords(Arc<WordsRegion>);

#[derive(Debug)]
struct WordsRegion {
    mmap: MmapRaw,
    file: File,
    path: PathBuf,
    size: usize,
    unlinked: AtomicBool,
}

impl MappedWords {
    /// Creates `dir/name` of `size` bytes, sparse, with `[0, reserve)` reserved.
    ///
    /// # Errors
    /// The file exists, the disk is full, or mapping fails.
    pub fn create(dir: &Path, name: &str, size: usize, reserve: usize) -> Result<Self> {
        let path = dir.join(name);
        let file = create_file(dir, &path, size, false)?;
        let w = Self::map(file, path, size)?;
        w.reserve(0, reserve)?;
        debug!(file = %w.path().display(), size, "created word-mapped file");
        Ok(w)
    }

    /// Maps an existing file of exactly `size` bytes.
    ///
    /// # Errors
    /// The file cannot be opened or mapped, or its length is not `size`.
    pub fn open(path: &Path, size: usize) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| StoreError::io("open", path, e))?;
        let actual = file
            .metadata()
            .map_err(|e| StoreError::io("stat", path, e))?
            .len();
        if actual != size as u64 {
            return Err(StoreError::FileSize {
                file: path.to_owned(),
                actual,
                expected: size as u64,
            });
        }
        Self::map(file, path.to_owned(), size)
    }

    fn map(file: File, path: PathBuf, size: usize) -> Result<Self> {
        let mmap = MmapOptions::new()
            .len(size)
            .map_raw(&file)
            .map_err(|e| StoreError::io("mmap", &path, e))?;
        // Slots are hit at random: no fault readahead (see `MappedFile::advise_random`).
        if let Err(e) = mmap.advise(Advice::Random) {
            debug!(file = %path.display(), error = %e, "madvise failed");
        }
        Ok(MappedWords(Arc::new(WordsRegion {
            mmap,
            file,
            path,
            size,
            unlinked: AtomicBool::new(false),
        })))
    }

    /// Path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// Size in bytes.
    #[must_use]
    pub fn size(&self) -> usize {
        self.0.size
    }

    fn word<T>(&self, pos: usize, width: usize) -> Option<*const T> {
        (pos % width == 0 && pos.checked_add(width)? <= self.0.size)
            // SAFETY: pos + width <= size, so the pointer stays inside the mapping.
            .then(|| unsafe { self.0.mmap.as_ptr().add(pos) }.cast::<T>())
    }

    /// The big-endian u32 at `pos` (a multiple of 4); `None` if out of bounds or
    /// misaligned.
    #[must_use]
    pub fn load_u32(&self, pos: usize, order: Ordering) -> Option<u32> {
        let p = self.word::<AtomicU32>(pos, 4)?;
        // SAFETY: `p` is 4-aligned (the mapping is page-aligned and pos % 4 == 0) and
        // inside the mapping, which `self` keeps alive; every access to this mapping
        // goes through atomics of this module (no slices exist), so the atomic view
        // cannot race with non-atomic accesses.
        Some(u32::from_be(unsafe { &*p }.load(order)))
    }

    /// Stores `v` big-endian at `pos` (a multiple of 4); `false` if out of bounds or
    /// misaligned.
    pub fn store_u32(&self, pos: usize, v: u32, order: Ordering) -> bool {
        let Some(p) = self.word::<AtomicU32>(pos, 4) else {
            return false;
        };
        // SAFETY: as in `load_u32`.
        unsafe { &*p }.store(v.to_be(), order);
        true
    }

    /// The big-endian u64 at `pos` (a multiple of 8).
    #[must_use]
    pub fn load_u64(&self, pos: usize, order: Ordering) -> Option<u64> {
        let p = self.word::<AtomicU64>(pos, 8)?;
        // SAFETY: as in `load_u32`, with 8-byte alignment.
        Some(u64::from_be(unsafe { &*p }.load(order)))
    }

    /// Stores `v` big-endian at `pos` (a multiple of 8).
    pub fn store_u64(&self, pos: usize, v: u64, order: Ordering) -> bool {
        let Some(p) = self.word::<AtomicU64>(pos, 8) else {
            return false;
        };
        // SAFETY: as in `load_u64`.
        unsafe { &*p }.store(v.to_be(), order);
        true
    }

    /// Reserves disk space for `[pos, pos + len)`; see [`MappedFile::reserve`].
    ///
    /// # Errors
    /// The disk is full or the call fails otherwise.
    pub fn reserve(&self, pos: usize, len: usize) -> Result<()> {
        let len = len.min(self.0.size.saturating_sub(pos));
        if len == 0 {
            return Ok(());
        }
        match fallocate(&self.0.file, &self.0.path, pos as u64, len as u64) {
            Err(StoreError::Io { source, .. })
                if source.raw_os_error() == Some(libc::EOPNOTSUPP) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    /// Syncs the whole mapping (`msync(MS_SYNC)`).
    ///
    /// # Errors
    /// The sync failed.
    pub fn flush(&self) -> Result<()> {
        self.0
            .mmap
            .flush()
            .map_err(|e| StoreError::io("msync", &self.0.path, e))
    }

    /// Deletes the file; the mapping lives until the last clone is dropped. Idempotent.
    ///
    /// # Errors
    /// The unlink failed.
    pub fn destroy(&self) -> Result<()> {
        if self.0.unlinked.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        match fs::remove_file(&self.0.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                self.0.unlinked.store(false, Ordering::Release);
                return Err(StoreError::io("unlink", &self.0.path, e));
            }
        }
        info!(file = %self.0.path.display(), "deleted index file");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        assert_eq!(file_name(1_073_741_824), "00000000001073741824");
        assert_eq!(parse_file_name("00000000001073741824"), Some(1_073_741_824));
        assert_eq!(parse_file_name("0000000000107374182"), None);
        assert_eq!(parse_file_name("0000000000107374182x"), None);
    }

    #[test]
    fn residency_is_read_from_the_page_tables() {
        let dir = tempfile::tempdir().unwrap();
        let size = 16 * OS_PAGE_SIZE;
        let mf = MappedFile::create_sparse(dir.path(), 0, size).unwrap();
        // No readahead of the holes around the page written.
        mf.advise_random(true);
        let mut w = mf.writer().unwrap();
        w.append(&[7u8; 100], 1);
        assert_eq!(mf.is_resident(0, 100), Some(true));
        assert_eq!(
            mf.is_resident(10 * OS_PAGE_SIZE, 100),
            Some(false),
            "a hole"
        );
        assert_eq!(
            mf.is_resident(OS_PAGE_SIZE - 50, 100),
            Some(false),
            "a range is resident only if all its pages are"
        );
        assert_eq!(mf.is_resident(size - 10, 11), None, "past the end");
        assert_eq!(mf.is_resident(usize::MAX, 2), None);
    }

    #[test]
    fn create_append_read_flush_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mf = MappedFile::create(dir.path(), 8192, 8192, None).unwrap();
        assert!(
            MappedFile::create(dir.path(), 8192, 8192, None).is_err(),
            "no overwrite"
        );
        assert_eq!(mf.path().file_name().unwrap(), "00000000000000008192");
        let mut w = mf.writer().unwrap();
        assert!(mf.writer().is_none(), "one writer at a time");
        w.append(b"hello", 1);
        let s = mf.slice(0, 5).unwrap();
        assert_eq!(&s[..], b"hello");
        assert!(mf.slice(0, 6).is_none());
        assert_eq!(mf.reader_count(), 1);
        assert_eq!(mf.flush(0).unwrap(), 5);
        drop(w);
        assert!(mf.writer().is_some());
        drop(s);
        assert_eq!(mf.reader_count(), 0);
        let again = MappedFile::open(mf.path(), 8192, 8192).unwrap();
        again.with_raw(|b| assert_eq!(&b[..5], b"hello"));
        assert!(matches!(
            MappedFile::open(mf.path(), 8192, 4096),
            Err(StoreError::FileSize { .. })
        ));
    }

    #[test]
    fn deleted_file_stays_readable_while_sliced() {
        let dir = tempfile::tempdir().unwrap();
        let mf = MappedFile::create(dir.path(), 0, 4096, None).unwrap();
        mf.writer().unwrap().append(b"abc", 1);
        let s = mf.slice(0, 3).unwrap();
        mf.destroy().unwrap();
        drop(mf);
        assert!(!dir.path().join(file_name(0)).exists());
        assert_eq!(&s[..], b"abc");
    }

    #[test]
    fn truncate_waits_for_readers_and_zero_fills() {
        let dir = tempfile::tempdir().unwrap();
        let mf = MappedFile::create(dir.path(), 0, 4096, None).unwrap();
        let mut w = mf.writer().unwrap();
        w.append(b"0123456789", 1);
        let s = mf.slice(0, 10).unwrap();
        assert!(matches!(
            w.truncate_to(4, 10, Duration::from_millis(5)),
            Err(StoreError::ReadersActive { offset: 4 })
        ));
        drop(s);
        w.truncate_to(4, 10, Duration::from_millis(5)).unwrap();
        assert_eq!(mf.read_position(), 4);
        drop(w);
        mf.with_raw(|b| assert_eq!(&b[..10], b"0123\0\0\0\0\0\0"));
    }

    #[test]
    fn deletion_waits_for_readers_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let mf = MappedFile::create(dir.path(), 0, 4096, None).unwrap();
        mf.writer().unwrap().append(b"abc", 1);
        let held = mf.slice(0, 3).unwrap();
        assert!(
            !mf.destroy_when_unused(1_000, 500).unwrap(),
            "a reader holds it"
        );
        assert!(!mf.is_available());
        assert!(mf.slice(0, 1).is_none(), "no new readers");
        assert!(mf.read_with(0, 1, |_| ()).is_none());
        assert!(dir.path().join(file_name(0)).exists());
        assert!(
            mf.destroy_when_unused(1_500, 500).unwrap(),
            "forced after the interval"
        );
        assert!(!dir.path().join(file_name(0)).exists());
        assert_eq!(&held[..], b"abc", "the reader's bytes stay valid");

        let mf = MappedFile::create(dir.path(), 4096, 4096, None).unwrap();
        let held = mf.slice(0, 0).unwrap();
        assert!(!mf.destroy_when_unused(0, 500).unwrap());
        drop(held);
        assert!(mf.destroy_when_unused(1, 500).unwrap(), "readers gone");
    }

    #[test]
    fn sparse_files_reserve_on_demand_and_read_with() {
        let dir = tempfile::tempdir().unwrap();
        let mf = MappedFile::create_sparse(dir.path(), 6_000, 6_000).unwrap();
        mf.reserve(0, 4096).unwrap();
        mf.reserve(4096, 1 << 20).unwrap();
        let mut w = mf.writer().unwrap();
        w.append(&[9u8; 20], 1);
        assert_eq!(mf.read_with(0, 20, <[u8]>::to_vec).unwrap(), vec![9u8; 20]);
        assert!(mf.read_with(0, 21, |_| ()).is_none());
        mf.set_modified_ms(1_000_000);
        assert_eq!(mf.last_modified_ms(), 1_000_000);
    }

    #[test]
    fn words_are_big_endian_aligned_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let w = MappedWords::create(dir.path(), "20240101000000000", 64, 16).unwrap();
        assert!(w.store_u32(4, 0x0102_0304, Ordering::Release));
        assert!(w.store_u64(8, 0x1122_3344_5566_7788, Ordering::Release));
        assert!(!w.store_u32(2, 1, Ordering::Release), "misaligned");
        assert!(!w.store_u32(64, 1, Ordering::Release), "out of bounds");
        assert_eq!(w.load_u32(4, Ordering::Acquire), Some(0x0102_0304));
        assert_eq!(
            w.load_u64(8, Ordering::Acquire),
            Some(0x1122_3344_5566_7788)
        );
        assert_eq!(w.load_u64(4, Ordering::Acquire), None);
        w.flush().unwrap();
        let raw = std::fs::read(w.path()).unwrap();
        assert_eq!(
            &raw[4..16],
            &[1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        let again = MappedWords::open(w.path(), 64).unwrap();
        assert_eq!(again.load_u32(4, Ordering::Acquire), Some(0x0102_0304));
        w.destroy().unwrap();
        w.destroy().unwrap();
        assert!(!dir.path().join("20240101000000000").exists());
    }

    #[test]
    fn pool_buffer_is_committed_then_returned() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Arc::new(TransientStorePool::new(1, 8192).unwrap());
        let mf = MappedFile::create(dir.path(), 0, 8192, Some(&pool)).unwrap();
        assert_eq!(pool.available(), 0);
        let mut w = mf.writer().unwrap();
        w.append(&[7u8; 100], 1);
        assert_eq!(mf.read_position(), 0, "not visible before commit");
        assert_eq!(mf.commit(1).unwrap(), 0, "below least pages");
        assert_eq!(mf.commit(0).unwrap(), 100);
        assert_eq!(&mf.slice(0, 100).unwrap()[..], &[7u8; 100][..]);
        w.append(&vec![8u8; 8092], 2);
        assert_eq!(
            mf.commit(4).unwrap(),
            8192,
            "a full file commits regardless"
        );
        assert_eq!(pool.available(), 1);
        assert_eq!(mf.flush(0).unwrap(), 8192);
    }
}
