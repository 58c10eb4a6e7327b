//! [`FileStore`]: each run's checkpoint history in a directory guarded by a lock file, and one
//! directory per thread.
//!
//! - `disk.rs`: the file primitives every part uses (atomic writes, reads with a size limit,
//!   opening without following symlinks, syncing a directory);
//! - `locks.rs`: a run directory locked with `flock`, its index of records, and removing a
//!   run or the temporary files a crashed writer left;
//! - `checkpoint.rs`: the [`CheckpointStore`](super::CheckpointStore) contract on run
//!   directories;
//! - `thread.rs`: the [`ThreadStore`](super::ThreadStore) contract, one file per record;
//! - `lease.rs`: a thread's turn lease file;
//! - `journal.rs`: the [`JournalStore`](super::JournalStore) contract, one append-only file of
//!   checksummed frames per run.

mod checkpoint;
mod disk;
mod journal;
mod lease;
mod locks;
mod thread;

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{validate_id, StoreError, ThreadError, DEFAULT_MAX_CHECKPOINT_BYTES};
use disk::{io_error, thread_io};
use locks::{remove_stale_temps, RUNS};

/// Checkpoints in a directory, shared safely by the processes of one machine.
///
/// Each run (checkpoint id) has a directory `runs/ID/` holding one file per record of its history
/// (`1.ckpt`, `2.ckpt`, ...), an index `records.json` (each record's parent, state, claim and
/// lease) and a lock file `lock`. Every change takes an exclusive `flock` on the lock file,
/// reads the index, checks the transition (a claim, a completion, ...), and writes:
///
/// - each file goes to a new temporary file (`.tmp-` and a random name, created exclusively,
///   never through a symlink, mode 0600), is flushed to disk (`fsync`), and renamed into place;
///   then the directory is synced; a failing sync is an error, not ignored;
/// - the record's bytes are written before the index that names them, so a crash at any point
///   leaves the index as it was or as it is meant to be.
///
/// The kernel drops a dead process's `flock`, so a crash never leaves a run locked; a claim
/// it held is a lease that expires. Temporary files left by a crash are removed when a store
/// is opened on the directory.
///
/// ```no_run
/// use agentweave_runtime::FileStore;
/// let store = FileStore::new("checkpoints").unwrap();
/// # let _ = store;
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: Arc<PathBuf>,
    max_bytes: u64,
}

/// The directory [`FileStore::open_default`] uses when `AGENTFLOW_CHECKPOINT_DIR` is not set.
pub const DEFAULT_CHECKPOINT_DIR: &str = ".agentflow/checkpoints";

impl FileStore {
    /// A store in `dir`, created if it does not exist (mode 0700). Temporary files that a
    /// crashed writer left behind are removed.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir.join(RUNS))?;
        remove_stale_temps(&dir)?;
        Ok(FileStore {
            dir: Arc::new(dir),
            max_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
        })
    }

    /// The store in `$AGENTFLOW_CHECKPOINT_DIR`, or in [`DEFAULT_CHECKPOINT_DIR`] under the
    /// current directory.
    pub fn open_default() -> io::Result<Self> {
        match std::env::var_os("AGENTFLOW_CHECKPOINT_DIR") {
            Some(dir) => Self::new(dir),
            None => Self::new(DEFAULT_CHECKPOINT_DIR),
        }
    }

    /// The same store, refusing checkpoints over `limit` bytes ([`StoreError::TooLarge`]);
    /// the default is [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn max_checkpoint_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = limit;
        self
    }

    /// The directory the checkpoints are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `f` on a blocking thread with the store's directory and id's run directory.
    async fn blocking<T: Send + 'static>(
        &self,
        operation: &'static str,
        id: &str,
        f: impl FnOnce(&Path, u64) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        validate_id(id)?;
        let run_dir = self.dir.join(RUNS).join(id);
        let limit = self.max_bytes;
        match tokio::task::spawn_blocking(move || f(&run_dir, limit)).await {
            Ok(result) => result,
            Err(join) => Err(io_error(operation, id)(io::Error::other(join.to_string()))),
        }
    }

    /// Runs `f` (a thread operation) on a blocking thread.
    pub(super) async fn thread_blocking<T: Send + 'static>(
        operation: &'static str,
        id: &str,
        f: impl FnOnce() -> Result<T, ThreadError> + Send + 'static,
    ) -> Result<T, ThreadError> {
        match tokio::task::spawn_blocking(f).await {
            Ok(result) => result,
            Err(join) => Err(thread_io(operation, id, io::Error::other(join.to_string()))),
        }
    }
}
