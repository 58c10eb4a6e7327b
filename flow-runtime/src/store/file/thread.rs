//! A thread's records in the [`FileStore`](super::FileStore): `threads/ID/`, one file per
//! record named by its position (`00000000000000000007.json`). A record is written to a
//! temporary file, synced, then published with a hard link, which fails if the name exists:
//! of two writers of one position exactly one wins (the compare-and-swap of an append), and a
//! reader never sees a half-written record.

use std::fs;
use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::disk::{io_error, read_limited, sync_dir, TMP_PREFIX};
use super::keeper::FileDir;
use crate::store::backend::{clamp, Listed, Table};
use crate::store::thread::validate_thread_id;
use crate::store::StoreError;

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Records' bytes, in order.
type Records = Vec<Arc<[u8]>>;

fn record_name(seq: usize) -> String {
    format!("{seq:020}.json")
}

/// A name no other writer (thread or process) uses at the same time.
fn unique(prefix: &str) -> String {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}{}-{nanos}-{n}", std::process::id())
}

/// The number of records in a thread directory (0 if it does not exist).
fn record_count(dir: &Path) -> io::Result<usize> {
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

/// Reads record `seq` of thread `id`, refusing more than `limit` bytes.
fn read_record(id: &str, dir: &Path, seq: usize, limit: u64) -> Result<Arc<[u8]>, StoreError> {
    match read_limited(&dir.join(record_name(seq)), limit).map_err(io_error("read", id))? {
        Ok(bytes) => Ok(bytes.into()),
        Err(size) => Err(StoreError::TooLarge {
            id: id.to_owned(),
            size,
            limit,
        }),
    }
}

/// Appends `records` to thread `id` at position `expected`: `Err(found)` if the thread does
/// not hold `expected` records (the record before is missing, or another writer published
/// this position first).
pub(super) fn append(
    files: &FileDir,
    operation: &'static str,
    id: &str,
    expected: u64,
    records: Vec<Arc<[u8]>>,
) -> Result<Result<u64, u64>, StoreError> {
    let err = io_error(operation, id);
    let dir = files.path(Table::Threads, id);
    fs::create_dir_all(&dir).map_err(&err)?;
    let found = || record_count(&dir).map(|n| Err(n as u64)).map_err(&err);
    let expected = expected as usize;
    // No gap: the record before this one must exist.
    if expected > 0 && !dir.join(record_name(expected - 1)).exists() {
        return found();
    }
    for (k, bytes) in records.iter().enumerate() {
        let tmp = dir.join(unique(TMP_PREFIX));
        let written = (|| {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            drop(file);
            fs::hard_link(&tmp, dir.join(record_name(expected + k)))
        })();
        let _ = fs::remove_file(&tmp);
        match written {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return found(),
            Err(e) => return Err(err(e)),
        }
    }
    sync_dir(&dir).map_err(&err)?;
    Ok(Ok((expected + records.len()) as u64))
}

/// How many records thread `id` holds, and the records of the window `window` picks.
pub(super) fn read(
    files: &FileDir,
    id: &str,
    window: impl FnOnce(usize) -> Range<usize>,
) -> Result<(usize, Records), StoreError> {
    let dir = files.path(Table::Threads, id);
    let len = record_count(&dir).map_err(io_error("read", id))?;
    let records = clamp(window(len), len)
        .map(|seq| read_record(id, &dir, seq, files.limit()))
        .collect::<Result<_, _>>()?;
    Ok((len, records))
}

/// Removes thread `id`; how many records it held. Renamed away first, so readers see the
/// whole thread or none of it.
pub(super) fn remove(
    files: &FileDir,
    operation: &'static str,
    id: &str,
) -> Result<usize, StoreError> {
    let err = io_error(operation, id);
    let gone = files.root(Table::Threads).join(unique(".deleted-"));
    match fs::rename(files.path(Table::Threads, id), &gone) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(err(e)),
    }
    let held = record_count(&gone).unwrap_or(0);
    fs::remove_dir_all(&gone).map_err(&err)?;
    Ok(held)
}

/// Every thread: its id, how many records it holds, and its last record.
pub(super) fn logs(files: &FileDir) -> Result<Vec<Listed<Records>>, StoreError> {
    let root = files.root(Table::Threads);
    let err = io_error("read", "threads");
    let mut threads = Vec::new();
    let entries = match fs::read_dir(&root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(threads),
        entries => entries.map_err(&err)?,
    };
    for entry in entries {
        let entry = entry.map_err(&err)?;
        let id = entry.file_name().to_string_lossy().into_owned();
        if validate_thread_id(&id).is_err() {
            continue;
        }
        match read(files, &id, |len| len.saturating_sub(1)..len) {
            Ok((len, last)) => threads.push((id, len, last)),
            // Deleted meanwhile.
            Err(_) if !entry.path().exists() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(threads)
}
