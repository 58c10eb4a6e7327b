//! The [`JournalStore`] contract of the [`FileStore`]: each run's journal is one append-only
//! file, `journals/RUN/steps.log`, changed under the directory's `flock`.
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
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::disk::sync_dir;
use super::locks::{for_each_run, lock_run, remove_run};
use super::FileStore;
use crate::store::rules::{journal_append, journal_expected};
use crate::store::{
    validate_id, JournalError, JournalStore, JournalSummary, StoreError, StoredStep,
};

const MAGIC: &[u8; 4] = b"AFJ1";
const STEPS: &str = "steps.log";
/// Magic, seq, at_ms, kind length, body length.
const HEAD: usize = 4 + 8 + 8 + 1 + 4;
/// Checksum and frame length.
const TAIL: usize = 8 + 4;

fn io<'a>(operation: &'static str, run: &'a str) -> impl Fn(io::Error) -> JournalError + 'a {
    move |source| {
        JournalError::Store(StoreError::Io {
            operation,
            id: run.to_owned(),
            source: std::sync::Arc::new(source),
        })
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
                    return Err(JournalError::Corrupt {
                        run: run.to_owned(),
                        seq: count,
                        reason: format!("it says it is step {}", step.seq),
                    });
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
                    return Err(JournalError::Corrupt {
                        run: run.to_owned(),
                        seq: count,
                        reason,
                    });
                }
                break;
            }
        }
    }
    Ok((out, count, at))
}

/// The number of whole steps of the journal file, where they end, and when the last was
/// appended: from its last frame if it checks (constant time), else by a scan.
fn tail(run: &str, file: &mut File) -> Result<(u64, u64, u64), JournalError> {
    let err = io("read the journal of", run);
    let size = file.metadata().map_err(&err)?.len();
    if size == 0 {
        return Ok((0, 0, 0));
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
                    return Ok((step.seq + 1, size, step.at_ms));
                }
            }
        }
    }
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0)).map_err(&err)?;
    file.read_to_end(&mut bytes).map_err(&err)?;
    let (steps, count, end) = scan(run, &bytes, 0)?;
    let last_at_ms = steps.last().map_or(0, |s| s.at_ms);
    Ok((count, end as u64, last_at_ms))
}

impl FileStore {
    fn journal_dir(&self, run: &str) -> Result<PathBuf, JournalError> {
        validate_id(run)?;
        Ok(self.dir().join("journals").join(run))
    }

    /// Runs `f` on a blocking thread.
    async fn journal_blocking<T: Send + 'static>(
        operation: &'static str,
        run: &str,
        f: impl FnOnce() -> Result<T, JournalError> + Send + 'static,
    ) -> Result<T, JournalError> {
        match tokio::task::spawn_blocking(f).await {
            Ok(result) => result,
            Err(join) => Err(io(operation, run)(io::Error::other(join.to_string()))),
        }
    }
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

#[async_trait]
impl JournalStore for FileStore {
    async fn append_steps(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        journal_append(run, &steps, self.max_bytes)?;
        let dir = self.journal_dir(run)?;
        let run = run.to_owned();
        Self::journal_blocking("append to the journal of", &run.clone(), move || {
            let err = io("append to the journal of", &run);
            let root = dir.parent().expect("journals/RUN");
            let new_root = !root.exists();
            fs::create_dir_all(root).map_err(&err)?;
            if new_root {
                sync_dir(root.parent().expect("the store")).map_err(&err)?;
            }
            let locked = lock_run(&dir, true, true)
                .map_err(&err)?
                .ok_or_else(|| err(io::Error::other("the journal directory vanished")))?;
            let mut file = open_steps(&locked.dir, true)
                .map_err(&err)?
                .expect("created");
            let (found, end, _) = tail(&run, &mut file)?;
            journal_expected(&run, expected, found)?;
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
            Ok(expected + steps.len() as u64)
        })
        .await
    }

    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError> {
        let dir = self.journal_dir(run)?;
        let run = run.to_owned();
        Self::journal_blocking("read the journal of", &run.clone(), move || {
            let err = io("read the journal of", &run);
            let Some(locked) = lock_run(&dir, false, false).map_err(&err)? else {
                return Ok(Vec::new());
            };
            let Some(mut file) = open_steps(&locked.dir, false).map_err(&err)? else {
                return Ok(Vec::new());
            };
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(&err)?;
            Ok(scan(&run, &bytes, from)?.0)
        })
        .await
    }

    async fn journal_len(&self, run: &str) -> Result<u64, JournalError> {
        let dir = self.journal_dir(run)?;
        let run = run.to_owned();
        Self::journal_blocking("read the journal of", &run.clone(), move || {
            let err = io("read the journal of", &run);
            let Some(locked) = lock_run(&dir, false, false).map_err(&err)? else {
                return Ok(0);
            };
            let Some(mut file) = open_steps(&locked.dir, false).map_err(&err)? else {
                return Ok(0);
            };
            Ok(tail(&run, &mut file)?.0)
        })
        .await
    }

    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError> {
        let dir = self.journal_dir(run)?;
        let run = run.to_owned();
        Self::journal_blocking("truncate the journal of", &run.clone(), move || {
            let err = io("truncate the journal of", &run);
            let Some(locked) = lock_run(&dir, false, true).map_err(&err)? else {
                return Ok(());
            };
            let Some(mut file) = open_steps(&locked.dir, false).map_err(&err)? else {
                return Ok(());
            };
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(&err)?;
            let mut at = 0usize;
            let mut count = 0u64;
            while count < len {
                match parse(&bytes[at..]) {
                    Parsed::Step(_, n) => {
                        at += n;
                        count += 1;
                    }
                    _ => break,
                }
            }
            if (at as u64) < bytes.len() as u64 {
                file.set_len(at as u64).map_err(&err)?;
                file.sync_data().map_err(&err)?;
            }
            Ok(())
        })
        .await
    }

    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError> {
        let dir = self.journal_dir(run)?;
        let run = run.to_owned();
        Self::journal_blocking("delete the journal of", &run.clone(), move || {
            let err = io("delete the journal of", &run);
            let Some(locked) = lock_run(&dir, false, true).map_err(&err)? else {
                return Ok(false);
            };
            let had = fs::metadata(locked.dir.join(STEPS)).is_ok_and(|m| m.len() > 0);
            remove_run(&locked).map_err(&err)?;
            Ok(had)
        })
        .await
    }

    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError> {
        let root = self.dir().join("journals");
        Self::journal_blocking("list the journals of", "*", move || {
            let err = io("list the journals of", "*");
            let mut idle = Vec::new();
            if !root.is_dir() {
                return Ok(idle);
            }
            for_each_run(&root, false, &err, |run, locked| {
                let Some(mut file) = open_steps(&locked.dir, false).map_err(&err)? else {
                    return Ok(());
                };
                let (steps, _, last_at_ms) = tail(&run, &mut file)?;
                if steps > 0 && last_at_ms <= at_ms {
                    idle.push(JournalSummary {
                        run,
                        steps,
                        last_at_ms,
                    });
                }
                Ok(())
            })?;
            idle.sort_by(|a, b| a.run.cmp(&b.run));
            Ok(idle)
        })
        .await
    }
}
