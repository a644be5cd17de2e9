//! A page-sized file written in place: the checkpoints (`checkpoint`, `config/timercheck`)
//! are a few longs at the start of a 4 KiB file, as RocketMQ maps them, rewritten with
//! one `pwrite` (well below a sector, so never torn).

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::{Result, StoreError};

/// Size of a checkpoint file.
pub const PAGE_FILE_SIZE: u64 = 4096;

/// Opens `path` read-write (created, with its directory, if absent) and extends it to
/// [`PAGE_FILE_SIZE`]. Returns the file and whether it existed.
///
/// # Errors
/// I/O errors.
pub fn open(path: &Path) -> Result<(File, bool)> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("mkdir", dir, e))?;
    }
    let existed = path.exists();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| StoreError::io("stat", path, e))?
        .len();
    if len < PAGE_FILE_SIZE {
        file.set_len(PAGE_FILE_SIZE)
            .map_err(|e| StoreError::io("ftruncate", path, e))?;
    }
    Ok((file, existed))
}
