//! A run's journal in the [`FileStore`](super::FileStore): one append-only file,
//! `journals/RUN/steps.log`, changed under the directory's `flock`.
//!
//! A step is one frame:
//!
//! ```text
//! "AFJ1" | seq u64 | at_ms u64 | kind length u8 | body length u32 | kind | body
//!        | FNV-1a 64 of all the above | frame length u32          (integers little-endian)
//! ```
//!
//! An append writes its frames at the end of the file and syncs it (one `fsync` for any
//! number of steps). The trailing frame length lets the last frame be found from the end, so
//! an append costs the same however long the journal is. A crash during an append leaves a
//! torn last frame (it runs past the end of the file, or its checksum fails with nothing after
//! it): it was never acknowledged, reads ignore it, and the next append cuts it off. A frame
//! that fails its checks with whole frames after it is [`JournalError::Corrupt`].

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;

use super::disk::{io_error, sync_dir};
use super::keeper::FileDir;
use super::locks::{for_each_run, lock_run, remove_run, Locked};
use crate::store::backend::{clamp, Listed, Table};
use crate::store::{JournalError, StoredStep};

const MAGIC: &[u8; 4] = b"AFJ1";
const STEPS: &str = "steps.log";
/// Magic, seq, at_ms, kind length, body length.
const HEAD: usize = 4 + 8 + 8 + 1 + 4;
/// Checksum and frame length.
const TAIL: usize = 8 + 4;

/// The error of a frame that fails its checks with whole frames after it.
fn damaged(run: &str, seq: u64, reason: String) -> JournalError {
    JournalError::Corrupt {
        run: run.to_owned(),
        seq,
        reason,
    }
}

/// One step as a frame.
fn frame(seq: u64, step: &StoredStep) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD + step.kind.len() + step.bytes.len() + TAIL);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&step.at_ms.to_le_bytes());
    out.push(step.kind.len() as u8);
    out.extend_from_slice(&(step.bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(step.kind.as_bytes());
    out.extend_from_slice(&step.bytes);
    let sum = crate::ids::fnv1a_extend(crate::ids::FNV_OFFSET, &out);
    out.extend_from_slice(&sum.to_le_bytes());
    let len = (out.len() + 4) as u32;
    out.extend_from_slice(&len.to_le_bytes());
    out
}

/// What parsing a frame at the start of `bytes` found.
enum Parsed {
    /// A whole frame of `len` bytes.
    Step(StoredStep, usize),
    /// The bytes end before the frame does (a torn append).
    Short,
    /// The frame is whole but does not check.
    Bad(String),
}

fn parse(bytes: &[u8]) -> Parsed {
    if bytes.len() < HEAD {
        return Parsed::Short;
    }
    if &bytes[..4] != MAGIC {
        return Parsed::Bad("it does not start a step".into());
    }
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    let seq = u64_at(4);
    let at_ms = u64_at(12);
    let kind_len = bytes[20] as usize;
    let body_len = u32::from_le_bytes(bytes[21..25].try_into().expect("4 bytes")) as usize;
    let len = HEAD + kind_len + body_len + TAIL;
    if bytes.len() < len {
        return Parsed::Short;
    }
    let summed = HEAD + kind_len + body_len;
    let sum = crate::ids::fnv1a_extend(crate::ids::FNV_OFFSET, &bytes[..summed]);
    if sum != u64_at(summed) {
        return Parsed::Bad("its checksum does not match".into());
    }
    let stated = u32::from_le_bytes(bytes[summed + 8..len].try_into().expect("4 bytes"));
    if stated as usize != len {
        return Parsed::Bad("its length does not match".into());
    }
    let Ok(kind) = std::str::from_utf8(&bytes[HEAD..HEAD + kind_len]) else {
        return Parsed::Bad("its kind is not text".into());
    };
    Parsed::Step(
        StoredStep {
            seq,
            at_ms,
            kind: kind.to_owned(),
            bytes: bytes[HEAD + kind_len..summed].to_vec(),
        },
        len,
    )
}

/// The whole steps of a journal file's bytes from `from` on, and where the whole steps end (a
/// torn last frame is left out).
fn scan(run: &str, bytes: &[u8], from: u64) -> Result<(Vec<StoredStep>, u64, usize), JournalError> {
    let mut at = 0;
    let mut count = 0u64;
    let mut out = Vec::new();
    while at < bytes.len() {
        match parse(&bytes[at..]) {
            Parsed::Step(step, len) => {
                if step.seq != count {
                    let reason = format!("it says it is step {}", step.seq);
                    return Err(damaged(run, count, reason));
                }
                if count >= from {
                    out.push(step);
                }
                count += 1;
                at += len;
            }
            Parsed::Short => break,
            Parsed::Bad(reason) => {
                // Torn if nothing whole follows it; else the journal was damaged.
                let rest = &bytes[at..];
                let whole_after = (1..rest.len()).any(|k| {
                    rest[k..].starts_with(MAGIC) && matches!(parse(&rest[k..]), Parsed::Step(..))
                });
                if whole_after {
                    return Err(damaged(run, count, reason));
                }
                break;
            }
        }
    }
    Ok((out, count, at))
}

/// The number of whole steps of the journal file, where they end, and its last step: from its
/// last frame if it checks (constant time), else by a scan.
fn tail(run: &str, file: &mut File) -> Result<(u64, u64, Option<StoredStep>), JournalError> {
    let err = io_error("read the journal of", run);
    let size = file.metadata().map_err(&err)?.len();
    if size == 0 {
        return Ok((0, 0, None));
    }
    if size >= 4 {
        let mut len = [0u8; 4];
        file.seek(SeekFrom::Start(size - 4)).map_err(&err)?;
        file.read_exact(&mut len).map_err(&err)?;
        let len = u32::from_le_bytes(len) as u64;
        if len >= (HEAD + TAIL) as u64 && len <= size {
            let mut last = vec![0u8; len as usize];
            file.seek(SeekFrom::Start(size - len)).map_err(&err)?;
            file.read_exact(&mut last).map_err(&err)?;
            if let Parsed::Step(step, n) = parse(&last) {
                if n as u64 == len {
                    return Ok((step.seq + 1, size, Some(step)));
                }
            }
        }
    }
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0)).map_err(&err)?;
    file.read_to_end(&mut bytes).map_err(&err)?;
    let (mut steps, count, end) = scan(run, &bytes, 0)?;
    Ok((count, end as u64, steps.pop()))
}

/// Opens the journal file of the locked directory `dir` for reading and writing (`None` if it
/// does not exist and `create` is false).
fn open_steps(dir: &Path, create: bool) -> io::Result<Option<File>> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(dir.join(STEPS))
    {
        Ok(file) => Ok(Some(file)),
        Err(e) if !create && e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Appends `steps` to run `run`'s journal if it holds `expected` steps (`Err(found)` if not).
pub(super) fn append(
    files: &FileDir,
    operation: &'static str,
    run: &str,
    expected: u64,
    steps: Vec<StoredStep>,
) -> Result<Result<u64, u64>, JournalError> {
    let err = io_error(operation, run);
    let root = files.root(Table::Journals);
    if !root.is_dir() {
        fs::create_dir_all(&root).map_err(&err)?;
        sync_dir(files.dir()).map_err(&err)?;
    }
    let locked = lock_run(&files.path(Table::Journals, run), true, true)
        .map_err(&err)?
        .ok_or_else(|| err(io::Error::other("the journal directory vanished")))?;
    let mut file = open_steps(&locked.dir, true)
        .map_err(&err)?
        .expect("created");
    let (found, end, _) = tail(run, &mut file)?;
    if found != expected {
        return Ok(Err(found));
    }
    // A torn frame a crash left is cut off first (it was never acknowledged).
    if file.metadata().map_err(&err)?.len() != end {
        file.set_len(end).map_err(&err)?;
    }
    let mut bytes = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        bytes.extend_from_slice(&frame(expected + k as u64, step));
    }
    file.seek(SeekFrom::Start(end)).map_err(&err)?;
    file.write_all(&bytes).map_err(&err)?;
    file.sync_data().map_err(&err)?;
    if end == 0 {
        sync_dir(&locked.dir).map_err(&err)?;
    }
    Ok(Ok(expected + steps.len() as u64))
}

/// Run `run`'s journal file, opened under its directory's lock (shared, or exclusive).
fn open_locked(
    files: &FileDir,
    run: &str,
    exclusive: bool,
) -> Result<Option<(Locked, File)>, JournalError> {
    let err = io_error("read the journal of", run);
    let dir = files.path(Table::Journals, run);
    let Some(locked) = lock_run(&dir, false, exclusive).map_err(&err)? else {
        return Ok(None);
    };
    let file = open_steps(&locked.dir, false).map_err(&err)?;
    Ok(file.map(|file| (locked, file)))
}

/// How many steps run `run`'s journal holds, and the steps of the window `window` picks: the
/// length and the last step from the last frame (constant time), others by a scan.
pub(super) fn read(
    files: &FileDir,
    run: &str,
    window: impl FnOnce(usize) -> Range<usize>,
) -> Result<(usize, Vec<StoredStep>), JournalError> {
    let Some((_locked, mut file)) = open_locked(files, run, false)? else {
        return Ok((0, Vec::new()));
    };
    let (count, _, last) = tail(run, &mut file)?;
    let len = count as usize;
    let window = clamp(window(len), len);
    match last {
        _ if window.is_empty() => return Ok((len, Vec::new())),
        Some(last) if window.start + 1 == len => return Ok((len, vec![last])),
        _ => {}
    }
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(io_error("read the journal of", run))?;
    let (mut steps, _, _) = scan(run, &bytes, window.start as u64)?;
    steps.truncate(window.len());
    Ok((len, steps))
}

/// Cuts run `run`'s journal to its first `len` steps.
pub(super) fn cut(
    files: &FileDir,
    operation: &'static str,
    run: &str,
    len: usize,
) -> Result<(), JournalError> {
    let err = io_error(operation, run);
    let Some((_locked, mut file)) = open_locked(files, run, true)? else {
        return Ok(());
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(&err)?;
    let (mut at, mut count) = (0, 0);
    while count < len {
        match parse(&bytes[at..]) {
            Parsed::Step(_, n) => {
                at += n;
                count += 1;
            }
            _ => break,
        }
    }
    if at < bytes.len() {
        file.set_len(at as u64).map_err(&err)?;
        file.sync_data().map_err(&err)?;
    }
    Ok(())
}

/// Removes run `run`'s journal; how many steps it held.
pub(super) fn remove(
    files: &FileDir,
    operation: &'static str,
    run: &str,
) -> Result<usize, JournalError> {
    let err = io_error(operation, run);
    let Some(locked) = lock_run(&files.path(Table::Journals, run), false, true).map_err(&err)?
    else {
        return Ok(0);
    };
    let held = match open_steps(&locked.dir, false).map_err(&err)? {
        Some(mut file) => tail(run, &mut file)?.0 as usize,
        None => 0,
    };
    remove_run(&locked).map_err(&err)?;
    Ok(held)
}

/// Every journal: its run, how many steps it holds, and its last step.
pub(super) fn logs(files: &FileDir) -> Result<Vec<Listed<Vec<StoredStep>>>, JournalError> {
    let err = |e| JournalError::from(io_error("list the journals of", "*")(e));
    let mut journals = Vec::new();
    if !files.root(Table::Journals).is_dir() {
        return Ok(journals);
    }
    for_each_run(&files.root(Table::Journals), false, err, |run, locked| {
        let Some(mut file) = open_steps(&locked.dir, false).map_err(&err)? else {
            return Ok(());
        };
        let (steps, _, last) = tail(&run, &mut file)?;
        journals.push((run, steps as usize, last.into_iter().collect()));
        Ok(())
    })?;
    Ok(journals)
}
