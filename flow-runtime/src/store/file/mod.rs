//! [`FileStore`]: the key-value front over a directory ([`FileDir`]), shared safely by the
//! processes of one machine. Every rule of the checkpoint, thread and journal contracts is
//! the front's; this folder is the disk layer only.
//!
//! - `disk.rs`: the file primitives (atomic writes, reads with a size limit, opening without
//!   following symlinks, syncing a directory);
//! - `locks.rs`: a directory locked with `flock`, a run's index of records, removing a
//!   directory or the temporary files a crashed writer left;
//! - `keeper.rs`: [`FileDir`], the front's keeper: a run's history and a thread's turn lease
//!   changed under their directory's lock, threads and journals as logs;
//! - `thread.rs`: a thread's records, one file per record published by hard link;
//! - `journal.rs`: a run's journal, one append-only file of checksummed frames.

mod disk;
mod journal;
mod keeper;
mod locks;
mod thread;

use std::io;
use std::path::Path;

use super::backend::{Front, KeyValueStore};
use super::DEFAULT_MAX_CHECKPOINT_BYTES;
pub(crate) use disk::read_head;
pub use keeper::FileDir;

/// Checkpoints, threads and journals in a directory, shared safely by the processes of one
/// machine.
///
/// Each run (checkpoint id) has a directory `runs/ID/` holding one file per record of its
/// history (`1.ckpt`, `2.ckpt`, ...), an index `records.json` (each record's parent, state,
/// claim and lease) and a lock file `lock`. Every change takes an exclusive `flock` on the
/// lock file, reads the index, checks the transition (a claim, a completion, ...), and
/// writes:
///
/// - each file goes to a new temporary file (`.tmp-` and a random name, created exclusively,
///   never through a symlink, mode 0600), is flushed to disk (`fsync`), and renamed into place;
///   then the directory is synced; a failing sync is an error, not ignored;
/// - the record's bytes are written before the index that names them, so a crash at any point
///   leaves the index as it was or as it is meant to be.
///
/// A thread is a directory `threads/ID/` of one file per record
/// (`00000000000000000007.json`), each published with a hard link that fails if the name
/// exists (of two writers of one position exactly one wins); its turn lease is
/// `thread-leases/ID/lease.json`, changed under that directory's lock. A run's journal is
/// `journals/RUN/steps.log`, an append-only file of checksummed frames (a torn last frame, left
/// by a crash during an append, is ignored and cut off by the next append).
///
/// The kernel drops a dead process's `flock`, so a crash never leaves a run locked; a claim
/// it held is a lease that expires. Temporary files left by a crash are removed when a store
/// is opened on the directory. Every rule (ids, sizes, claims, leases, the compare-and-swap of
/// appends) is the [`KeyValueStore`] front's, as for [`InMemoryStore`](super::InMemoryStore).
///
/// ```no_run
/// use agentweave_runtime::FileStore;
/// let store = FileStore::new("checkpoints").unwrap();
/// # let _ = store;
/// ```
#[derive(Debug, Clone)]
pub struct FileStore(KeyValueStore<FileDir>);

/// The directory [`FileStore::open_default`] uses when `AGENTFLOW_CHECKPOINT_DIR` is not set.
pub const DEFAULT_CHECKPOINT_DIR: &str = ".agentflow/checkpoints";

impl FileStore {
    /// A store in `dir`, created if it does not exist (mode 0700). Temporary files that a
    /// crashed writer left behind are removed.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let files = FileDir::open(dir.as_ref(), DEFAULT_MAX_CHECKPOINT_BYTES)?;
        Ok(FileStore(KeyValueStore::over(files)))
    }

    /// The store in `$AGENTFLOW_CHECKPOINT_DIR`, or in [`DEFAULT_CHECKPOINT_DIR`] under the
    /// current directory.
    pub fn open_default() -> io::Result<Self> {
        match std::env::var_os("AGENTFLOW_CHECKPOINT_DIR") {
            Some(dir) => Self::new(dir),
            None => Self::new(DEFAULT_CHECKPOINT_DIR),
        }
    }

    /// The same store, refusing checkpoints, thread records and journal steps over `limit`
    /// bytes, written or read ([`StoreError::TooLarge`](super::StoreError::TooLarge)); the
    /// default is [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn max_checkpoint_bytes(self, limit: u64) -> Self {
        let files = self.0.backend().with_limit(limit);
        FileStore(KeyValueStore::over(files).max_checkpoint_bytes(limit))
    }

    /// The directory the checkpoints are in.
    pub fn dir(&self) -> &Path {
        self.0.backend().dir()
    }
}

impl Front for FileStore {
    type Keep = FileDir;

    #[inline]
    fn front(&self) -> &KeyValueStore<FileDir> {
        &self.0
    }
}
