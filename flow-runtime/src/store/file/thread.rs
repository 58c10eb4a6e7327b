//! The [`ThreadStore`] contract of the [`FileStore`]: one directory per thread, one file per
//! record, published with a hard link.

use std::fs;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use super::disk::{read_limited, thread_io};
use super::FileStore;
use crate::store::backend::Lease;
use crate::store::rules::thread_append;
use crate::store::thread::validate_thread_id;
use crate::store::{StoreError, ThreadError, ThreadHead, ThreadRecord, ThreadStore};

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Threads live under `DIR/threads/THREAD/`, one file per record named by its position
/// (`00000000000000000007.json`). A record is written to a temporary file, synced, then
/// published with a hard link, which fails if the name exists: of two writers of one position
/// exactly one wins (the compare-and-swap of [`ThreadStore::append`]), and a reader never sees
/// a half-written record.
impl FileStore {
    pub(super) fn thread_dir(&self, id: &str) -> Result<PathBuf, ThreadError> {
        validate_thread_id(id)?;
        Ok(self.dir.join("threads").join(id))
    }
}

pub(super) fn record_name(seq: u64) -> String {
    format!("{seq:020}.json")
}

/// The number of records in a thread directory (0 if it does not exist).
pub(super) fn record_count(dir: &Path) -> io::Result<u64> {
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
pub(super) fn read_record(
    id: &str,
    dir: &Path,
    seq: u64,
    limit: u64,
) -> Result<ThreadRecord, ThreadError> {
    let bytes = read_limited(&dir.join(record_name(seq)), limit)
        .map_err(|e| thread_io("read", id, e))?
        .map_err(|size| StoreError::TooLarge {
            id: id.to_owned(),
            size,
            limit,
        })?;
    ThreadRecord::decode(id, seq, &bytes)
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
        let bytes = thread_append(id, expected_version, &mut record, self.max_bytes)?;
        let dir = self.thread_dir(id)?;
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
        let (owner, shown) = (owner.to_owned(), id.to_owned());
        self.change_lease("lease", id, move |held| {
            Lease::take(held, &shown, &owner, lease)
        })
        .await
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        let (owner, shown) = (owner.to_owned(), id.to_owned());
        self.change_lease("renew the lease of", id, move |held| {
            Lease::renew(held, &shown, &owner, lease)
        })
        .await
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        let owner = owner.to_owned();
        self.change_lease("release the lease of", id, move |held| {
            Ok(((), Lease::release(held, &owner)))
        })
        .await
    }
}
