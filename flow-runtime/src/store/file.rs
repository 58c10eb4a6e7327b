//! [`FileStore`]: one file per checkpoint, and one directory per thread, in a directory.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use std::ops::Range;

use super::thread::validate_thread_id;
use super::{
    validate_id, CheckpointStore, StoreError, ThreadError, ThreadHead, ThreadRecord, ThreadStore,
};

/// The durable default: one file per checkpoint in a directory.
///
/// A write goes to a temporary file in the same directory, is flushed to disk (`fsync`), then
/// renamed over the old file, and the directory is synced: a checkpoint is either wholly
/// written or not at all, even if the process dies half-way.
///
/// ```no_run
/// use flow_runtime::FileStore;
/// let store = FileStore::new("checkpoints").unwrap();
/// # let _ = store;
/// ```
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: Arc<PathBuf>,
}

/// The directory [`FileStore::open_default`] uses when `AGENTFLOW_CHECKPOINT_DIR` is not set.
pub const DEFAULT_CHECKPOINT_DIR: &str = ".agentflow/checkpoints";

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FileStore {
    /// A store in `dir`, created if it does not exist.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        Ok(FileStore { dir: Arc::new(dir) })
    }

    /// The store in `$AGENTFLOW_CHECKPOINT_DIR`, or in [`DEFAULT_CHECKPOINT_DIR`] under the
    /// current directory.
    pub fn open_default() -> io::Result<Self> {
        match std::env::var_os("AGENTFLOW_CHECKPOINT_DIR") {
            Some(dir) => Self::new(dir),
            None => Self::new(DEFAULT_CHECKPOINT_DIR),
        }
    }

    /// The directory the checkpoints are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, id: &str) -> Result<PathBuf, StoreError> {
        validate_id(id)?;
        Ok(self.dir.join(format!("{id}.ckpt")))
    }

    async fn blocking<T: Send + 'static>(
        operation: &'static str,
        id: &str,
        f: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let io_error = |source: io::Error| StoreError::Io {
            operation,
            id: id.to_owned(),
            source: Arc::new(source),
        };
        match tokio::task::spawn_blocking(f).await {
            Ok(result) => result.map_err(io_error),
            Err(join) => Err(io_error(io::Error::other(join.to_string()))),
        }
    }
}

fn write_atomically(dir: &Path, target: &Path, bytes: &[u8]) -> io::Result<()> {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, target)?;
        // Make the rename itself durable.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[async_trait]
impl CheckpointStore for FileStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path_of(id)?;
        Self::blocking("read", id, move || match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        })
        .await
    }

    async fn set(&self, id: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        let path = self.path_of(id)?;
        let dir = Arc::clone(&self.dir);
        Self::blocking("write", id, move || write_atomically(&dir, &path, &bytes)).await
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let path = self.path_of(id)?;
        Self::blocking("delete", id, move || match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await
    }
}

/// Threads live under `DIR/threads/THREAD/`, one file per record named by its position
/// (`00000000000000000007.json`). A record is written to a temporary file, synced, then
/// published with a hard link, which fails if the name exists: of two writers of one position
/// exactly one wins (the compare-and-swap of [`ThreadStore::append`]), and a reader never sees
/// a half-written record.
impl FileStore {
    fn thread_dir(&self, id: &str) -> Result<PathBuf, ThreadError> {
        validate_thread_id(id)?;
        Ok(self.dir.join("threads").join(id))
    }

    async fn thread_blocking<T: Send + 'static>(
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

fn thread_io(operation: &'static str, id: &str, source: io::Error) -> ThreadError {
    ThreadError::Store(StoreError::Io {
        operation,
        id: id.to_owned(),
        source: Arc::new(source),
    })
}

fn record_name(seq: u64) -> String {
    format!("{seq:020}.json")
}

/// The number of records in a thread directory (0 if it does not exist).
fn record_count(dir: &Path) -> io::Result<u64> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut count = 0;
    for entry in entries {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if let Some(stem) = name.strip_suffix(".json") {
            if stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()) {
                count += 1;
            }
        }
    }
    Ok(count)
}

fn read_record(id: &str, dir: &Path, seq: u64) -> Result<ThreadRecord, ThreadError> {
    let bytes = fs::read(dir.join(record_name(seq))).map_err(|e| thread_io("read", id, e))?;
    ThreadRecord::decode(id, seq, &bytes)
}

#[async_trait]
impl ThreadStore for FileStore {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        let dir = self.thread_dir(id)?;
        let id = id.to_owned();
        Self::thread_blocking("read", &id.clone(), move || {
            let version = record_count(&dir).map_err(|e| thread_io("read", &id, e))?;
            if version == 0 {
                return Ok(None);
            }
            let last = read_record(&id, &dir, version - 1)?;
            Ok(Some(ThreadHead {
                turns: last.turn + 1,
                id,
                version,
                last,
            }))
        })
        .await
    }

    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        let dir = self.thread_dir(id)?;
        let id = id.to_owned();
        Self::thread_blocking("read", &id.clone(), move || {
            let version = record_count(&dir).map_err(|e| thread_io("read", &id, e))?;
            // Records are in turn order: read back from the end until the window starts.
            let mut out = Vec::new();
            for seq in (0..version).rev() {
                let record = read_record(&id, &dir, seq)?;
                if record.turn < turns.start {
                    break;
                }
                if record.turn < turns.end {
                    out.push(record);
                }
            }
            out.reverse();
            Ok(out)
        })
        .await
    }

    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        mut record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        let dir = self.thread_dir(id)?;
        record.seq = expected_version;
        let bytes = record.encode();
        let id = id.to_owned();
        Self::thread_blocking("write", &id.clone(), move || {
            let io_err = |e| thread_io("write", &id, e);
            fs::create_dir_all(&dir).map_err(io_err)?;
            // No gap: the record before this one must exist.
            if expected_version > 0 && !dir.join(record_name(expected_version - 1)).exists() {
                let found = record_count(&dir).map_err(io_err)?;
                return Err(ThreadError::Conflict {
                    id: id.clone(),
                    expected: expected_version,
                    found,
                });
            }
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let tmp = dir.join(format!(".tmp-{}-{nanos}-{n}", std::process::id()));
            let target = dir.join(record_name(expected_version));
            let written = (|| {
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)?;
                file.write_all(&bytes)?;
                file.sync_all()?;
                drop(file);
                fs::hard_link(&tmp, &target)
            })();
            let _ = fs::remove_file(&tmp);
            match written {
                Ok(()) => {
                    fs::File::open(&dir)
                        .and_then(|d| d.sync_all())
                        .map_err(io_err)?;
                    Ok(expected_version + 1)
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let found = record_count(&dir).map_err(io_err)?;
                    Err(ThreadError::Conflict {
                        id: id.clone(),
                        expected: expected_version,
                        found,
                    })
                }
                Err(e) => Err(io_err(e)),
            }
        })
        .await
    }

    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        let root = self.dir.join("threads");
        Self::thread_blocking("read", "threads", move || {
            let entries = match fs::read_dir(&root) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(thread_io("read", "threads", e)),
            };
            let mut ids = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| thread_io("read", "threads", e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if validate_thread_id(&name).is_ok()
                    && record_count(&entry.path()).is_ok_and(|n| n > 0)
                {
                    ids.push(name);
                }
            }
            ids.sort();
            Ok(ids)
        })
        .await
    }

    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        let dir = self.thread_dir(id)?;
        let root = self.dir.join("threads");
        let id = id.to_owned();
        Self::thread_blocking("delete", &id.clone(), move || {
            // Renamed away first, so readers see the whole thread or none of it.
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let gone = root.join(format!(".deleted-{}-{n}-{id}", std::process::id()));
            match fs::rename(&dir, &gone) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(thread_io("delete", &id, e)),
            }
            let existed = record_count(&gone).is_ok_and(|n| n > 0);
            fs::remove_dir_all(&gone).map_err(|e| thread_io("delete", &id, e))?;
            Ok(existed)
        })
        .await
    }
}
