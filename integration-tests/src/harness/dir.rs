//! A test's working directory: where a child runs and logs, and where a test keeps its
//! files. Deleted when dropped, kept (and its path printed) when the test is failing, so
//! what a failed test ran can be read afterwards.

use std::fmt;
use std::path::{Path, PathBuf};
use std::thread;

use tempfile::TempDir;

/// Set to `1` to keep every test directory, passing or not.
pub const KEEP_ENV: &str = "SLUICE_KEEP_TEST_DIRS";

/// A fresh directory under the temp dir: deleted when dropped, kept (and its path printed)
/// when the thread is panicking, [`KEEP_ENV`] is `1`, or [`keep`](Self::keep) was called.
pub struct TestDir {
    dir: Option<TempDir>,
    path: PathBuf,
    keep: bool,
}

impl fmt::Debug for TestDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TestDir").field(&self.path).finish()
    }
}

impl TestDir {
    /// A fresh directory named `sluice-<prefix>-XXXX` under the temp dir.
    ///
    /// # Panics
    /// When it cannot be created.
    #[must_use]
    pub fn new(prefix: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(&format!("sluice-{prefix}-"))
            .tempdir()
            .expect("create a temp dir");
        let path = dir.path().to_owned();
        TestDir {
            dir: Some(dir),
            path,
            keep: false,
        }
    }

    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps it when dropped, whatever happens.
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let keep = self.keep
            || thread::panicking()
            || std::env::var_os(KEEP_ENV).is_some_and(|v| v == "1");
        if let (true, Some(dir)) = (keep, self.dir.take()) {
            let path = dir.keep();
            eprintln!("kept test dir {}", path.display());
        }
    }
}
