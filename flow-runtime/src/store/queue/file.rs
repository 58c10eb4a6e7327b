//! [`FileRunQueue`]: the run queue in one JSON file, changed under a `flock`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rustix::fs::{flock, FlockOperation};
use serde_json::Value;

use super::rows::Rows;
use super::{
    check_run_id, check_thread, Enqueue, NewRun, QueueClaim, QueueError, QueuedRun, RunQueue,
};
use crate::store::{now_ms, unique_token};

/// The queue's file, in its directory.
const ROWS: &str = "queue.json";
/// The lock every change takes.
const LOCK: &str = "lock";

/// A run queue in a directory, shared safely by the processes of one machine: `queue.json`
/// holds every run; each change takes an exclusive `flock` on `lock`, reads the file, changes
/// it, and writes it back atomically (a new temporary file, `fsync`, rename, directory
/// `fsync`). The kernel drops a dead process's lock; a claim it held is a lease that runs out.
///
/// Every operation reads and writes the whole file: it suits the queues of one machine (a few
/// thousand runs); use `SqliteRunQueue` or `PostgresRunQueue` beyond that.
#[derive(Debug, Clone)]
pub struct FileRunQueue {
    dir: Arc<PathBuf>,
}

impl FileRunQueue {
    /// The queue in `dir` (created, mode 0700, if it does not exist). Give it a directory of
    /// its own, e.g. `queue/` inside a [`FileStore`](crate::FileStore)'s directory.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        Ok(FileRunQueue { dir: Arc::new(dir) })
    }

    /// Runs `f` on the rows under the lock, on a blocking thread; writes them back if `f`
    /// says they changed.
    async fn with_rows<T: Send + 'static>(
        &self,
        operation: &'static str,
        f: impl FnOnce(&mut Rows) -> Result<(T, bool), QueueError> + Send + 'static,
    ) -> Result<T, QueueError> {
        let dir = self.dir.clone();
        let io_err = move |e: io::Error| QueueError::Io {
            operation,
            source: Arc::new(e),
        };
        tokio::task::spawn_blocking(move || {
            let lock = open_nofollow(&dir.join(LOCK)).map_err(io_err)?;
            flock(&lock, FlockOperation::LockExclusive).map_err(|e| io_err(e.into()))?;
            let mut rows = read_rows(&dir).map_err(|e| match e {
                ReadError::Io(e) => io_err(e),
                ReadError::Json(message) => QueueError::Corrupt {
                    run_id: ROWS.to_owned(),
                    message,
                },
            })?;
            let (out, changed) = f(&mut rows)?;
            if changed {
                let bytes = serde_json::to_vec(&rows).map_err(|e| io_err(io::Error::other(e)))?;
                write_atomically(&dir, &bytes).map_err(io_err)?;
            }
            drop(lock);
            Ok(out)
        })
        .await
        .map_err(|e| QueueError::Io {
            operation,
            source: Arc::new(io::Error::other(e)),
        })?
    }
}

enum ReadError {
    Io(io::Error),
    Json(String),
}

fn open_nofollow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

fn read_rows(dir: &Path) -> Result<Rows, ReadError> {
    let mut bytes = Vec::new();
    match OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(dir.join(ROWS))
    {
        Ok(mut file) => file.read_to_end(&mut bytes).map_err(ReadError::Io)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Rows::default()),
        Err(e) => return Err(ReadError::Io(e)),
    };
    serde_json::from_slice(&bytes).map_err(|e| ReadError::Json(e.to_string()))
}

fn write_atomically(dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!(".tmp-{}", unique_token()));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&tmp)?;
    let result = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, dir.join(ROWS))?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[async_trait]
impl RunQueue for FileRunQueue {
    async fn enqueue(&self, run: NewRun, mode: Enqueue) -> Result<QueuedRun, QueueError> {
        super::check_new(&run)?;
        self.with_rows("enqueue a run", move |rows| {
            rows.enqueue(run, mode, now_ms()).map(|r| (r, true))
        })
        .await
    }

    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<QueueClaim>, QueueError> {
        super::check_name("worker name", worker)?;
        let worker = worker.to_owned();
        self.with_rows("claim a run", move |rows| {
            let claim = rows.claim(&worker, lease, now_ms())?;
            let changed = claim.is_some();
            Ok((claim, changed))
        })
        .await
    }

    async fn renew(&self, claim: &QueueClaim, lease: Duration) -> Result<(), QueueError> {
        let claim = claim.clone();
        self.with_rows("renew a lease", move |rows| {
            rows.renew(&claim, lease, now_ms()).map(|()| ((), true))
        })
        .await
    }

    async fn note(&self, claim: &QueueClaim, note: Value) -> Result<(), QueueError> {
        let claim = claim.clone();
        self.with_rows("note on a run", move |rows| {
            rows.note(&claim, note).map(|()| ((), true))
        })
        .await
    }

    async fn release(&self, claim: &QueueClaim) -> Result<(), QueueError> {
        let claim = claim.clone();
        self.with_rows("release a run", move |rows| {
            rows.release(&claim);
            Ok(((), true))
        })
        .await
    }

    async fn complete(&self, claim: &QueueClaim, outcome: Value) -> Result<(), QueueError> {
        let claim = claim.clone();
        self.with_rows("complete a run", move |rows| {
            rows.complete(&claim, outcome, now_ms())
                .map(|()| ((), true))
        })
        .await
    }

    async fn get(&self, run_id: &str) -> Result<Option<QueuedRun>, QueueError> {
        check_run_id(run_id)?;
        let run_id = run_id.to_owned();
        self.with_rows("read a run", move |rows| Ok((rows.get(&run_id), false)))
            .await
    }

    async fn thread_runs(&self, thread: &str) -> Result<Vec<QueuedRun>, QueueError> {
        check_thread(thread)?;
        let thread = thread.to_owned();
        self.with_rows("list a thread's runs", move |rows| {
            Ok((rows.thread_runs(&thread), false))
        })
        .await
    }
}
