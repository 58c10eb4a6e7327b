//! [`FileStore`]: each run's checkpoint history in a directory guarded by a lock file, and one
//! directory per thread.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use rustix::fs::{flock, FlockOperation};

use super::memory::lost;
use super::records::{check_size, Records};
use super::thread::validate_thread_id;
use super::{
    from_millis, millis, unique_token, validate_id, CheckpointMeta, CheckpointStore, Claim,
    Completion, PendingCheckpoint, SaveMode, StoreError, ThreadError, ThreadHead, ThreadRecord,
    ThreadStore, DEFAULT_MAX_CHECKPOINT_BYTES,
};

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
/// use flow_runtime::FileStore;
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

/// The directory of the runs' checkpoint histories, under the store's directory.
const RUNS: &str = "runs";
const INDEX: &str = "records.json";
const LOCK: &str = "lock";
const TMP_PREFIX: &str = ".tmp-";

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
}

fn io_error<'a>(operation: &'static str, id: &'a str) -> impl Fn(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        operation,
        id: id.to_owned(),
        source: Arc::new(source),
    }
}

/// Removes `.tmp-` files left by crashed writers: at the top of `dir` (older versions wrote
/// there) and in each run directory whose lock is free (temporary files are only made under
/// the lock).
fn remove_stale_temps(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX)
            && entry.file_type()?.is_file()
        {
            remove_if_present(&entry.path())?;
        }
    }
    for entry in fs::read_dir(dir.join(RUNS))? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type()?;
        if kind.is_dir() && validate_id(&name).is_ok() {
            let run_dir = entry.path();
            let Ok(lock) = open_nofollow(&run_dir.join(LOCK), false) else {
                continue;
            };
            if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
                continue; // in use: its writer cleans up after itself
            }
            for inner in fs::read_dir(&run_dir)? {
                let inner = inner?;
                if inner.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                    remove_if_present(&inner.path())?;
                }
            }
        }
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Opens `path` for reading (or creates it, mode 0600, with `create`), refusing symlinks.
fn open_nofollow(path: &Path, create: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// A run directory locked by this process; the lock is released on drop (and by the kernel if
/// the process dies).
struct Locked {
    dir: PathBuf,
    _lock: File,
}

/// Locks `run_dir` (exclusively, or shared for reads). `None` if it does not exist and
/// `create` is false.
fn lock_run(run_dir: &Path, create: bool, exclusive: bool) -> io::Result<Option<Locked>> {
    loop {
        if create {
            match fs::DirBuilder::new().mode(0o700).create(run_dir) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
            if !fs::symlink_metadata(run_dir)?.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is not a directory",
                    run_dir.display()
                )));
            }
        }
        let path = run_dir.join(LOCK);
        let lock = match open_nofollow(&path, create) {
            Ok(lock) => lock,
            Err(e) if !create && e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        flock(&lock, op)?;
        // A delete may have removed the run while this process waited: then the lock file
        // it holds is no longer the one at `path`, and it tries again.
        let held = lock.metadata()?;
        match fs::symlink_metadata(&path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                return Ok(Some(Locked {
                    dir: run_dir.to_path_buf(),
                    _lock: lock,
                }))
            }
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if create {
                    continue;
                }
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
}

impl Locked {
    fn read_index(&self) -> io::Result<Records> {
        match read_limited(&self.dir.join(INDEX), u64::MAX).map(|r| r.unwrap_or_default()) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{INDEX} of {} is corrupt: {e}", self.dir.display()),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Records::default()),
            Err(e) => Err(e),
        }
    }

    fn write_index(&self, records: &Records) -> io::Result<()> {
        let bytes = serde_json::to_vec(records).map_err(io::Error::other)?;
        write_atomically(&self.dir, INDEX, &bytes)
    }

    fn record_path(&self, version: u64) -> PathBuf {
        self.dir.join(format!("{version}.ckpt"))
    }

    /// Reads record `version`, refusing more than `limit` bytes.
    fn read_record(&self, id: &str, version: u64, limit: u64) -> Result<Vec<u8>, StoreError> {
        match read_limited(&self.record_path(version), limit) {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(size)) => Err(StoreError::TooLarge {
                id: id.to_owned(),
                size,
                limit,
            }),
            Err(e) => Err(io_error("read", id)(e)),
        }
    }
}

/// Reads `path` (never through a symlink); `Err(size)` inside if it holds more than `limit`
/// bytes (then at most `limit + 1` bytes were read).
fn read_limited(path: &Path, limit: u64) -> io::Result<Result<Vec<u8>, u64>> {
    let file = open_nofollow(path, false)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Ok(Err(size));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Writes `bytes` to `dir/name`: a new temporary file (exclusive, 0600, no symlinks), fsync,
/// rename, directory fsync. On failure the old file stays and the temporary one is removed.
fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!("{TMP_PREFIX}{}", unique_token()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)
        {
            Ok(file) => break (tmp, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, dir.join(name))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes renames and removals in `dir` durable; its errors are reported.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn now_ms() -> u64 {
    millis(SystemTime::now())
}

#[async_trait]
impl CheckpointStore for FileStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let owned = id.to_owned();
        self.blocking("read", id, move |run_dir, limit| {
            let id = &owned[..];
            let Some(run) = lock_run(run_dir, false, false).map_err(io_error("read", id))? else {
                return Ok(None);
            };
            let records = run.read_index().map_err(io_error("read", id))?;
            match records.head() {
                Some(head) => run.read_record(id, head.version, limit).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        let owned = id.to_owned();
        self.blocking("write", id, move |run_dir, _| {
            let id = &owned[..];
            let err = io_error("write", id);
            let run = lock_run(run_dir, true, true)
                .map_err(&err)?
                .expect("created");
            let mut records = run.read_index().map_err(&err)?;
            let version = records.save(id, mode, now_ms(), bytes.len() as u64)?;
            write_atomically(&run.dir, &format!("{version}.ckpt"), &bytes).map_err(&err)?;
            run.write_index(&records).map_err(&err)?;
            Ok(version)
        })
        .await
    }

    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        let owned = id.to_owned();
        self.blocking("claim", id, move |run_dir, limit| {
            let id = &owned[..];
            let err = io_error("claim", id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Err(StoreError::NotFound { id: id.to_owned() });
            };
            let mut records = run.read_index().map_err(&err)?;
            if let Some(head) = records.waiting_head() {
                check_size(id, head.size, limit)?;
            }
            let (version, attempt) = records.claim(id, now_ms(), lease)?;
            let bytes = run.read_record(id, version, limit)?;
            run.write_index(&records).map_err(&err)?;
            Ok(Claim {
                id: id.to_owned(),
                version,
                attempt,
                bytes,
            })
        })
        .await
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        let claim = claim.clone();
        self.blocking("renew", &claim.id.clone(), move |run_dir, _| {
            let err = io_error("renew", &claim.id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Err(lost(&claim));
            };
            let mut records = run.read_index().map_err(&err)?;
            records.renew(&claim, now_ms(), lease)?;
            run.write_index(&records).map_err(&err)
        })
        .await
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        let claim = claim.clone();
        self.blocking("release", &claim.id.clone(), move |run_dir, _| {
            let err = io_error("release", &claim.id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Ok(());
            };
            let mut records = run.read_index().map_err(&err)?;
            if records.release(&claim) {
                run.write_index(&records).map_err(&err)?;
            }
            Ok(())
        })
        .await
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let (finished, bytes) = match completion {
            Completion::Finished(b) => (true, b),
            Completion::Interrupted(b) => (false, b),
        };
        check_size(&claim.id, bytes.len() as u64, self.max_bytes)?;
        let claim = claim.clone();
        self.blocking("complete", &claim.id.clone(), move |run_dir, _| {
            let err = io_error("complete", &claim.id);
            let Some(run) = lock_run(run_dir, false, true).map_err(&err)? else {
                return Err(lost(&claim));
            };
            let mut records = run.read_index().map_err(&err)?;
            let version = records.complete(&claim, finished, now_ms(), bytes.len() as u64)?;
            write_atomically(&run.dir, &format!("{version}.ckpt"), &bytes).map_err(&err)?;
            run.write_index(&records).map_err(&err)?;
            Ok(version)
        })
        .await
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        let owned = id.to_owned();
        self.blocking("read", id, move |run_dir, _| {
            let id = &owned[..];
            let Some(run) = lock_run(run_dir, false, false).map_err(io_error("read", id))? else {
                return Ok(Vec::new());
            };
            Ok(run.read_index().map_err(io_error("read", id))?.meta(id))
        })
        .await
    }

    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        let dir = Arc::new(self.dir.join(RUNS));
        let max = self.max_bytes;
        let shown = dir.display().to_string();
        let list = tokio::task::spawn_blocking(move || -> Result<_, StoreError> {
            let err = |e: io::Error| io_error("list", &shown)(e);
            let mut waiting = Vec::new();
            for entry in fs::read_dir(&*dir).map_err(err)? {
                let entry = entry.map_err(err)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if validate_id(&name).is_err() || !entry.file_type().map_err(err)?.is_dir() {
                    continue;
                }
                let Some(run) = lock_run(&entry.path(), false, false).map_err(err)? else {
                    continue;
                };
                let records = run.read_index().map_err(err)?;
                if let Some(head) = records.waiting_head() {
                    waiting.push((head.created_ms, name, head.version));
                }
            }
            waiting.sort();
            let mut out = Vec::new();
            for (created, id, version) in waiting.into_iter().take(limit) {
                let Some(run) = lock_run(&dir.join(&id), false, false).map_err(err)? else {
                    continue;
                };
                let bytes = match run.read_record(&id, version, max) {
                    Ok(bytes) => bytes,
                    // Resumed or deleted since it was listed.
                    Err(StoreError::Io { source, .. })
                        if source.kind() == io::ErrorKind::NotFound =>
                    {
                        continue
                    }
                    Err(e) => return Err(e),
                };
                out.push(PendingCheckpoint {
                    id,
                    version,
                    created_at: from_millis(created),
                    bytes,
                });
            }
            Ok(out)
        })
        .await;
        list.unwrap_or_else(|join| Err(io_error("list", "")(io::Error::other(join.to_string()))))
    }

    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        let dir = Arc::new(self.dir.join(RUNS));
        let shown = dir.display().to_string();
        let purged = tokio::task::spawn_blocking(move || -> Result<usize, StoreError> {
            let err = |e: io::Error| io_error("purge", &shown)(e);
            let cutoff = now_ms().saturating_sub(age.as_millis() as u64);
            let mut n = 0;
            for entry in fs::read_dir(&*dir).map_err(err)? {
                let entry = entry.map_err(err)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if validate_id(&name).is_err() || !entry.file_type().map_err(err)?.is_dir() {
                    continue;
                }
                let Some(run) = lock_run(&entry.path(), false, true).map_err(err)? else {
                    continue;
                };
                if run.read_index().map_err(err)?.finished_by(cutoff) {
                    remove_run(&run).map_err(err)?;
                    n += 1;
                }
            }
            Ok(n)
        })
        .await;
        purged.unwrap_or_else(|join| Err(io_error("purge", "")(io::Error::other(join.to_string()))))
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let owned = id.to_owned();
        self.blocking("delete", id, move |run_dir, _| {
            let err = io_error("delete", &owned);
            match lock_run(run_dir, false, true).map_err(&err)? {
                Some(run) => remove_run(&run).map_err(&err),
                None => Ok(()),
            }
        })
        .await
    }
}

/// Removes a locked run's files, then its lock file (so waiters retry and find it gone),
/// then its directory.
fn remove_run(run: &Locked) -> io::Result<()> {
    for entry in fs::read_dir(&run.dir)? {
        let entry = entry?;
        if entry.file_name() != LOCK {
            remove_if_present(&entry.path())?;
        }
    }
    remove_if_present(&run.dir.join(LOCK))?;
    match fs::remove_dir(&run.dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }?;
    if let Some(parent) = run.dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

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

/// Reads record `seq`, refusing more than `limit` bytes.
fn read_record(id: &str, dir: &Path, seq: u64, limit: u64) -> Result<ThreadRecord, ThreadError> {
    let bytes = read_limited(&dir.join(record_name(seq)), limit)
        .map_err(|e| thread_io("read", id, e))?
        .map_err(|size| StoreError::TooLarge {
            id: id.to_owned(),
            size,
            limit,
        })?;
    ThreadRecord::decode(id, seq, &bytes)
}

/// A thread's turn lease, as `thread-leases/ID/lease.json` holds it.
#[derive(serde::Serialize, serde::Deserialize)]
struct LeaseFile {
    owner: String,
    until_ms: u64,
}

const LEASE: &str = "lease.json";

impl FileStore {
    /// Runs `f` on a blocking thread with thread `id`'s lease directory locked exclusively
    /// (`thread-leases/ID/lock`, the same `flock` the checkpoint histories use) and its lease.
    async fn with_lease<T: Send + 'static>(
        &self,
        operation: &'static str,
        id: &str,
        f: impl FnOnce(&Path, Option<LeaseFile>) -> Result<T, ThreadError> + Send + 'static,
    ) -> Result<T, ThreadError> {
        validate_thread_id(id)?;
        let root = self.dir.join("thread-leases");
        let id = id.to_owned();
        Self::thread_blocking(operation, &id.clone(), move || {
            let io_err = |e| thread_io(operation, &id, e);
            fs::create_dir_all(&root).map_err(io_err)?;
            let locked = lock_run(&root.join(&id), true, true)
                .map_err(io_err)?
                .ok_or_else(|| io_err(io::Error::other("the lease directory vanished")))?;
            let current = match read_limited(&locked.dir.join(LEASE), 64 * 1024) {
                Ok(Ok(bytes)) => serde_json::from_slice(&bytes).ok(),
                Ok(Err(_)) => None,
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(io_err(e)),
            };
            f(&locked.dir, current)
        })
        .await
    }
}

/// Writes `owner`'s lease of `lease` from now into the locked lease directory `dir`.
fn write_lease(id: &str, dir: &Path, owner: &str, lease: Duration) -> Result<(), ThreadError> {
    let file = LeaseFile {
        owner: owner.to_owned(),
        until_ms: super::memory::lease_end(now_ms(), lease),
    };
    let bytes =
        serde_json::to_vec(&file).map_err(|e| thread_io("lease", id, io::Error::other(e)))?;
    write_atomically(dir, LEASE, &bytes).map_err(|e| thread_io("lease", id, e))
}

#[async_trait]
impl ThreadStore for FileStore {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        let dir = self.thread_dir(id)?;
        let id = id.to_owned();
        let limit = self.max_bytes;
        Self::thread_blocking("read", &id.clone(), move || {
            let version = record_count(&dir).map_err(|e| thread_io("read", &id, e))?;
            if version == 0 {
                return Ok(None);
            }
            let last = read_record(&id, &dir, version - 1, limit)?;
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
        let limit = self.max_bytes;
        Self::thread_blocking("read", &id.clone(), move || {
            let version = record_count(&dir).map_err(|e| thread_io("read", &id, e))?;
            // Records are in turn order: read back from the end until the window starts.
            let mut out = Vec::new();
            for seq in (0..version).rev() {
                let record = read_record(&id, &dir, seq, limit)?;
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
        check_size(id, bytes.len() as u64, self.max_bytes)?;
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

    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        let owner = owner.to_owned();
        let shown = id.to_owned();
        self.with_lease("lease", id, move |dir, current| match current {
            Some(held) if held.owner != owner && held.until_ms > now_ms() => {
                Err(ThreadError::Busy { id: shown })
            }
            _ => write_lease(&shown, dir, &owner, lease),
        })
        .await
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        let owner = owner.to_owned();
        let shown = id.to_owned();
        self.with_lease(
            "renew the lease of",
            id,
            move |dir, current| match current {
                Some(held) if held.owner == owner => write_lease(&shown, dir, &owner, lease),
                _ => Err(ThreadError::LeaseLost { id: shown }),
            },
        )
        .await
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        let owner = owner.to_owned();
        let shown = id.to_owned();
        self.with_lease("release the lease of", id, move |dir, current| {
            if current.is_some_and(|held| held.owner == owner) {
                remove_if_present(&dir.join(LEASE))
                    .and_then(|()| sync_dir(dir))
                    .map_err(|e| thread_io("release the lease of", &shown, e))?;
            }
            Ok(())
        })
        .await
    }
}
