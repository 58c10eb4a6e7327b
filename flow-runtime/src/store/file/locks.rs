//! A run directory locked with `flock` ([`Locked`]), its index of records, and removing a run
//! or the temporary files a crashed writer left.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

use super::disk::TMP_PREFIX;
use super::disk::{open_nofollow, read_limited, remove_if_present, sync_dir, write_atomically};
use crate::store::records::Records;
use crate::store::validate_id;

/// The directory of the runs' checkpoint histories, under the store's directory.
pub(super) const RUNS: &str = "runs";
/// A run directory's index of its records.
const INDEX: &str = "records.json";
/// A run directory's lock file.
const LOCK: &str = "lock";

/// Removes `.tmp-` files left by crashed writers: at the top of `dir` (older versions wrote
/// there) and in each run directory whose lock is free (temporary files are only made under
/// the lock).
pub(super) fn remove_stale_temps(dir: &Path) -> io::Result<()> {
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

/// A run directory locked by this process; the lock is released on drop (and by the kernel if
/// the process dies).
pub(super) struct Locked {
    pub(super) dir: PathBuf,
    _lock: File,
}

/// Calls `each` with the id and the locked directory of every run under `runs` (a shared
/// lock, or an exclusive one with `exclusive`), in directory order; a run removed meanwhile
/// is passed over. What `each` returns as an error ends the walk.
pub(super) fn for_each_run<E>(
    runs: &Path,
    exclusive: bool,
    err: impl Fn(io::Error) -> E,
    mut each: impl FnMut(String, Locked) -> Result<(), E>,
) -> Result<(), E> {
    for entry in fs::read_dir(runs).map_err(&err)? {
        let entry = entry.map_err(&err)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if validate_id(&name).is_err() || !entry.file_type().map_err(&err)?.is_dir() {
            continue;
        }
        if let Some(run) = lock_run(&entry.path(), false, exclusive).map_err(&err)? {
            each(name, run)?;
        }
    }
    Ok(())
}

/// Locks `run_dir` (exclusively, or shared for reads). `None` if it does not exist and
/// `create` is false.
pub(super) fn lock_run(
    run_dir: &Path,
    create: bool,
    exclusive: bool,
) -> io::Result<Option<Locked>> {
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
    pub(super) fn read_index(&self) -> io::Result<Records> {
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

    pub(super) fn write_index(&self, records: &Records) -> io::Result<()> {
        let bytes = serde_json::to_vec(records).map_err(io::Error::other)?;
        write_atomically(&self.dir, INDEX, &bytes)
    }

    pub(super) fn record_path(&self, version: u64) -> PathBuf {
        self.dir.join(format!("{version}.ckpt"))
    }
}

/// Removes a locked run's files, then its lock file (so waiters retry and find it gone),
/// then its directory.
pub(super) fn remove_run(run: &Locked) -> io::Result<()> {
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
