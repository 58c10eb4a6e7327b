//! [`FileRunQueue`]: the run queue in one JSON file, changed under a `flock`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rustix::fs::{flock, FlockOperation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rows::Rows;
use super::{
    check_run_id, check_thread, CancelState, Enqueue, NewRun, QueueCap, QueueClaim, QueueError,
    QueuedEvent, QueuedRun, RunQueue,
};
use crate::store::{now_ms, unique_token};

/// The queue's file, in its directory.
const ROWS: &str = "queue.json";
/// The lock every change takes.
const LOCK: &str = "lock";
/// The directory of the runs' events: `events/RUN_ID.jsonl`, one event a line.
const EVENTS: &str = "events";

/// A run queue in a directory, shared safely by the processes of one machine: `queue.json`
/// holds every run; each change takes an exclusive `flock` on `lock`, reads the file, changes
/// it, and writes it back atomically (a new temporary file, `fsync`, rename, directory
/// `fsync`). The kernel drops a dead process's lock; a claim it held is a lease that runs out.
///
/// Every operation reads and writes the whole file: it suits the queues of one machine (a few
/// thousand runs); use `SqliteRunQueue` or `PostgresRunQueue` beyond that. A run's events are
/// lines appended (under the same lock, then `fsync`ed) to `events/RUN_ID.jsonl`, after its
/// row counted them: a crash between the two leaves a gap in the numbers, never a number
/// given twice.
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
        self.with_rows_after(operation, f, |_, _| Ok(())).await
    }

    /// [`with_rows`](Self::with_rows), then `after` on `f`'s answer, still under the lock,
    /// once the rows are written.
    async fn with_rows_after<T: Send + 'static>(
        &self,
        operation: &'static str,
        f: impl FnOnce(&mut Rows) -> Result<(T, bool), QueueError> + Send + 'static,
        after: impl FnOnce(&Path, &T) -> Result<(), QueueError> + Send + 'static,
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
            after(&dir, &out)?;
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
            rows.enqueue(run, mode, now_ms(), None).map(|r| (r, true))
        })
        .await
    }

    async fn enqueue_within(
        &self,
        run: NewRun,
        mode: Enqueue,
        cap: &QueueCap,
    ) -> Result<QueuedRun, QueueError> {
        super::check_new(&run)?;
        cap.check(&run)?;
        let cap = cap.clone();
        // Counted and added under the file's one lock.
        self.with_rows("enqueue a run", move |rows| {
            rows.enqueue(run, mode, now_ms(), Some(&cap))
                .map(|r| (r, true))
        })
        .await
    }

    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<QueueClaim>, QueueError> {
        super::check_name("worker name", worker)?;
        let worker = worker.to_owned();
        self.with_rows("claim a run", move |rows| {
            let claim = rows.claim(&worker, lease, now_ms(), None)?;
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
        let run_id = claim.run.run_id.clone();
        let claim = claim.clone();
        let done = outcome.clone();
        self.with_rows_after(
            "complete a run",
            move |rows| {
                rows.complete(&claim, outcome, now_ms())
                    .map(|seq| (seq, true))
            },
            move |dir, seq| append_lines(dir, &run_id, *seq, vec![("done".to_owned(), done)]),
        )
        .await
        .map(|_| ())
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

    async fn unfinished_with_prefix(&self, prefix: &str) -> Result<usize, QueueError> {
        let prefix = prefix.to_owned();
        self.with_rows("count runs", move |rows| {
            Ok((rows.unfinished_with_prefix(&prefix), false))
        })
        .await
    }

    async fn claim_among(
        &self,
        worker: &str,
        lease: Duration,
        flows: &[String],
    ) -> Result<Option<QueueClaim>, QueueError> {
        super::check_name("worker name", worker)?;
        let (worker, flows) = (worker.to_owned(), flows.to_vec());
        self.with_rows("claim a run", move |rows| {
            let claim = rows.claim(&worker, lease, now_ms(), Some(&flows))?;
            let changed = claim.is_some();
            Ok((claim, changed))
        })
        .await
    }

    async fn append_events(
        &self,
        claim: &QueueClaim,
        events: Vec<(String, Value)>,
    ) -> Result<u64, QueueError> {
        let count = events.len() as u64;
        let run_id = claim.run.run_id.clone();
        let claim = claim.clone();
        let first = self
            .with_rows_after(
                "append a run's events",
                move |rows| {
                    rows.reserve_events(&claim, count)
                        .map(|first| (first, true))
                },
                move |dir, first| append_lines(dir, &run_id, *first, events),
            )
            .await?;
        Ok(first + count - 1)
    }

    async fn events_after(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<QueuedEvent>, QueueError> {
        check_run_id(run_id)?;
        let path = self.dir.join(EVENTS).join(format!("{run_id}.jsonl"));
        tokio::task::spawn_blocking(move || read_lines(&path, after, limit))
            .await
            .map_err(|e| QueueError::Io {
                operation: "read a run's events",
                source: Arc::new(io::Error::other(e)),
            })?
    }

    async fn trim_events(&self, ended_before_ms: u64) -> Result<usize, QueueError> {
        self.with_rows_after(
            "trim the runs' events",
            move |rows| {
                let trimmed = rows.trim(ended_before_ms);
                let changed = !trimmed.is_empty();
                Ok((trimmed, changed))
            },
            |dir, trimmed| {
                for id in trimmed {
                    match fs::remove_file(dir.join(EVENTS).join(format!("{id}.jsonl"))) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => {
                            return Err(QueueError::Io {
                                operation: "trim the runs' events",
                                source: Arc::new(e),
                            })
                        }
                        _ => {}
                    }
                }
                Ok(())
            },
        )
        .await
        .map(|trimmed| trimmed.len())
    }

    async fn cancel(
        &self,
        run_id: &str,
        request: Value,
        outcome: Value,
    ) -> Result<Option<CancelState>, QueueError> {
        check_run_id(run_id)?;
        let id = run_id.to_owned();
        let done = outcome.clone();
        self.with_rows_after(
            "cancel a run",
            move |rows| {
                let state = rows.cancel(&id, request, outcome, now_ms())?;
                let changed = state.is_some();
                Ok((state, changed))
            },
            move |dir, state| match state {
                Some(CancelState::Ended(row)) => append_lines(
                    dir,
                    &row.run_id,
                    row.events,
                    vec![("done".to_owned(), done)],
                ),
                _ => Ok(()),
            },
        )
        .await
    }

    async fn cancel_requested(&self, claim: &QueueClaim) -> Result<Option<Value>, QueueError> {
        let claim = claim.clone();
        self.with_rows("read a cancel request", move |rows| {
            Ok((rows.cancel_requested(&claim), false))
        })
        .await
    }
}

#[derive(Serialize, Deserialize)]
struct Line {
    seq: u64,
    kind: String,
    data: Value,
}

/// Appends `events`, numbered from `first`, to run `run_id`'s events file and `fsync`s it.
fn append_lines(
    dir: &Path,
    run_id: &str,
    first: u64,
    events: Vec<(String, Value)>,
) -> Result<(), QueueError> {
    let err = |e: io::Error| QueueError::Io {
        operation: "append a run's events",
        source: Arc::new(e),
    };
    let events_dir = dir.join(EVENTS);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&events_dir)
        .map_err(err)?;
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(events_dir.join(format!("{run_id}.jsonl")))
        .map_err(err)?;
    let mut out = Vec::new();
    // A line cut short by a crash is closed, so the next line starts clean.
    let len = file.metadata().map_err(err)?.len();
    if len > 0 {
        use std::io::{Seek, SeekFrom};
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1)).map_err(err)?;
        file.read_exact(&mut last).map_err(err)?;
        if last[0] != b'\n' {
            out.push(b'\n');
        }
    }
    for (i, (kind, data)) in events.into_iter().enumerate() {
        let line = Line {
            seq: first + i as u64,
            kind,
            data,
        };
        serde_json::to_writer(&mut out, &line).map_err(|e| err(io::Error::other(e)))?;
        out.push(b'\n');
    }
    file.write_all(&out).map_err(err)?;
    file.sync_data().map_err(err)
}

/// At most `limit` events after `after` from the events file at `path` (lines cut short by a
/// crash are skipped).
fn read_lines(path: &Path, after: u64, limit: usize) -> Result<Vec<QueuedEvent>, QueueError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(QueueError::Io {
                operation: "read a run's events",
                source: Arc::new(e),
            })
        }
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .filter(|l| l.seq > after)
        .take(limit)
        .map(|l| QueuedEvent {
            seq: l.seq,
            kind: l.kind,
            data: l.data,
        })
        .collect())
}
