//! [`FileDir`]: the front's keeper for a [`FileStore`](super::FileStore). A run's history and
//! a thread's turn lease are values, each changed under its directory's `flock` (read, the
//! front's rule, write); a thread's records and a run's journal are logs, appended to one
//! entry at a time (a file per record, a frame per step) without reading the rest.

use std::any::Any;
use std::fs;
use std::io;
use std::ops::Range;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::runtime::{Handle, RuntimeFlavor};

use super::disk::{io_error, read_limited, remove_if_present, sync_dir, write_atomically};
use super::locks::{for_each_run, lock_run, remove_run, remove_stale_temps, Locked, RUNS};
use super::{journal, thread};
use crate::store::backend::{Changed, Head, Keep, Lease, Listed, Log, Run, Table, Value};
use crate::store::StoreError;

/// Where a [`FileStore`](super::FileStore) keeps its data: a directory (`runs/`, `threads/`,
/// `thread-leases/`, `journals/`), read within a size limit. The front's keeper for the File
/// store; not for use on its own.
#[derive(Debug)]
pub struct FileDir {
    dir: Arc<PathBuf>,
    limit: u64,
}

/// The directory of each table, under the store's directory.
fn root(table: Table) -> &'static str {
    match table {
        Table::Checkpoints => RUNS,
        Table::Threads => "threads",
        Table::ThreadLeases => "thread-leases",
        Table::Journals => "journals",
    }
}

impl FileDir {
    /// The directory `dir` (created, mode 0700, with its `runs/`; the other tables' are made
    /// when first written), its temporary files left by a crashed writer removed.
    pub(super) fn open(dir: &Path, limit: u64) -> io::Result<FileDir> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir.join(RUNS))?;
        remove_stale_temps(dir)?;
        Ok(FileDir {
            dir: Arc::new(dir.to_path_buf()),
            limit,
        })
    }

    /// The same directory, read within `limit` bytes.
    pub(super) fn with_limit(&self, limit: u64) -> FileDir {
        FileDir {
            dir: Arc::clone(&self.dir),
            limit,
        }
    }

    /// The store's directory.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of `key` in `table`.
    pub(super) fn path(&self, table: Table, key: &str) -> PathBuf {
        self.dir.join(root(table)).join(key)
    }

    /// The directory of `table`.
    pub(super) fn root(&self, table: Table) -> PathBuf {
        self.dir.join(root(table))
    }

    /// The size limit of what is read.
    pub(super) fn limit(&self) -> u64 {
        self.limit
    }
}

/// Runs `f`, which blocks on the disk and on locks: on a multi-threaded runtime the worker
/// hands its other tasks over first; elsewhere (a current-thread runtime, another executor)
/// it runs as it is (no change holds a lock across an `.await`, so no task waits on another
/// of its thread).
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// How a kind of value is kept in its directory (under the directory's lock).
trait OnDisk: Sized + 'static {
    /// The value in `dir`, if any.
    fn load(dir: &Locked, limit: u64) -> io::Result<Option<Self>>;

    /// Writes `value` to `dir`, or removes it (`None`).
    fn store(dir: &Locked, value: Option<&Self>) -> io::Result<()>;
}

/// A run: its index `records.json`, and its head's bytes `VERSION.ckpt`, read when a rule
/// asks for them. A new head is written before the index that names it.
impl OnDisk for Run {
    fn load(dir: &Locked, limit: u64) -> io::Result<Option<Run>> {
        let records = dir.read_index()?;
        let Some(head) = records.head() else {
            return Ok(None);
        };
        let path = Arc::from(dir.record_path(head.version));
        Ok(Some(Run {
            records,
            head: Head::File { path, limit },
        }))
    }

    fn store(dir: &Locked, run: Option<&Run>) -> io::Result<()> {
        let Some(run) = run else {
            return remove_run(dir);
        };
        if let (Head::Bytes(bytes), Some(head)) = (&run.head, run.records.head()) {
            write_atomically(&dir.dir, &format!("{}.ckpt", head.version), bytes)?;
        }
        dir.write_index(&run.records)
    }
}

/// A thread's turn lease: `lease.json`.
const LEASE: &str = "lease.json";

impl OnDisk for Lease {
    fn load(dir: &Locked, _: u64) -> io::Result<Option<Lease>> {
        match read_limited(&dir.dir.join(LEASE), 64 * 1024) {
            // A lease that does not read back holds nothing.
            Ok(Ok(bytes)) => Ok(Lease::decode("", &bytes).ok()),
            Ok(Err(_)) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn store(dir: &Locked, lease: Option<&Lease>) -> io::Result<()> {
        match lease {
            Some(lease) => write_atomically(&dir.dir, LEASE, &lease.encode()),
            None => remove_if_present(&dir.dir.join(LEASE)).and_then(|()| sync_dir(&dir.dir)),
        }
    }
}

/// `value` as the type it is (the value kept in its table is of one type).
fn cast<A: 'static, B: 'static>(value: &mut Option<A>) -> &mut Option<B> {
    (value as &mut dyn Any)
        .downcast_mut()
        .expect("each table keeps one kind of value")
}

/// `value` as the type it is.
fn kind<A: 'static, B: 'static>(value: &A) -> &B {
    (value as &dyn Any)
        .downcast_ref()
        .expect("each table keeps one kind of value")
}

/// `logs` with their entries as the type they are.
fn typed<A: 'static, B: 'static>(logs: Vec<Listed<Vec<A>>>) -> Vec<Listed<Vec<B>>> {
    logs.into_iter().map(|(k, n, e)| (k, n, same(e))).collect()
}

/// `value` as the type it is (a log's entries, or its contract's error: one type per log).
fn same<A: 'static, B: 'static>(value: A) -> B {
    *(Box::new(value) as Box<dyn Any>)
        .downcast()
        .expect("each log keeps one kind of entry and has one contract")
}

/// The error of a value asked for whole in a table of logs.
fn logs_only(table: Table, key: &str) -> StoreError {
    StoreError::Other {
        id: key.to_owned(),
        message: format!(
            "the File store keeps {} as logs, not as values to change whole",
            table.name()
        ),
    }
}

impl FileDir {
    fn view_in<W: OnDisk, T>(
        &self,
        table: Table,
        key: &str,
        f: impl FnOnce(Option<&W>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let err = io_error("read", key);
        let Some(locked) = lock_run(&self.path(table, key), false, false).map_err(&err)? else {
            return f(None);
        };
        f(W::load(&locked, self.limit).map_err(&err)?.as_ref())
    }

    fn update_in<W: OnDisk, T, E: From<StoreError>>(
        &self,
        table: Table,
        operation: &'static str,
        key: &str,
        mut f: impl FnMut(&mut Option<W>) -> Result<Changed<T>, E>,
    ) -> Result<T, E> {
        let err = io_error(operation, key);
        let dir = self.path(table, key);
        // A directory is made only for a change that leaves a value.
        let mut create = false;
        loop {
            let Some(locked) = lock_run(&dir, create, true).map_err(&err)? else {
                let mut value = None;
                let (answer, changed) = f(&mut value)?;
                if !changed || value.is_none() {
                    return Ok(answer);
                }
                fs::create_dir_all(self.root(table)).map_err(&err)?;
                create = true;
                continue;
            };
            let mut value = W::load(&locked, self.limit).map_err(&err)?;
            let existed = value.is_some();
            let (answer, changed) = f(&mut value)?;
            if changed && (existed || value.is_some()) {
                W::store(&locked, value.as_ref()).map_err(&err)?;
            }
            return Ok(answer);
        }
    }

    fn each_in<W: OnDisk, T>(
        &self,
        table: Table,
        mut f: impl FnMut(&str, &W) -> Result<Option<T>, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let root = self.root(table);
        let shown = root.display().to_string();
        let err = io_error("list", &shown);
        let mut picked = Vec::new();
        if !root.is_dir() {
            return Ok(picked);
        }
        for_each_run(&root, false, &err, |key, locked| {
            if let Some(value) = W::load(&locked, self.limit).map_err(&err)? {
                picked.extend(f(&key, &value)?);
            }
            Ok(())
        })?;
        Ok(picked)
    }
}

impl Keep for FileDir {
    const KEEPS_DEFERRED: bool = false;

    async fn view<V: Value, T: Send>(
        &self,
        key: &str,
        f: impl FnOnce(Option<&V>) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        blocking(|| match V::TABLE {
            t @ Table::Checkpoints => self.view_in(t, key, |r: Option<&Run>| f(r.map(kind))),
            t @ Table::ThreadLeases => self.view_in(t, key, |l: Option<&Lease>| f(l.map(kind))),
            t => Err(logs_only(t, key)),
        })
    }

    async fn update<V: Value, T: Send, E: From<StoreError> + Send>(
        &self,
        operation: &'static str,
        key: &str,
        mut f: impl FnMut(&mut Option<V>) -> Result<Changed<T>, E> + Send,
    ) -> Result<T, E> {
        blocking(|| match V::TABLE {
            t @ Table::Checkpoints => {
                self.update_in(t, operation, key, |r: &mut Option<Run>| f(cast(r)))
            }
            t @ Table::ThreadLeases => {
                self.update_in(t, operation, key, |l: &mut Option<Lease>| f(cast(l)))
            }
            t => Err(logs_only(t, key).into()),
        })
    }

    async fn each<V: Value, T: Send>(
        &self,
        mut f: impl FnMut(&str, &V) -> Result<Option<T>, StoreError> + Send,
    ) -> Result<Vec<T>, StoreError> {
        blocking(|| match V::TABLE {
            t @ Table::Checkpoints => self.each_in(t, |k, r: &Run| f(k, kind(r))),
            t @ Table::ThreadLeases => self.each_in(t, |k, l: &Lease| f(k, kind(l))),
            t => Err(logs_only(t, t.name())),
        })
    }

    async fn append<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        expected: u64,
        _count: usize,
        batch: L::Batch,
    ) -> Result<Result<u64, u64>, L::Error> {
        let new = L::entries(&batch);
        blocking(|| match L::TABLE {
            Table::Threads => Ok(thread::append(self, operation, key, expected, same(new))?),
            Table::Journals => {
                journal::append(self, operation, key, expected, same(new)).map_err(same)
            }
            t => Err(logs_only(t, key).into()),
        })
    }

    async fn read<L: Log>(
        &self,
        key: &str,
        window: impl FnOnce(usize) -> Range<usize> + Send,
    ) -> Result<(usize, L::Part), L::Error> {
        let (len, read) = blocking(|| -> Result<_, L::Error> {
            match L::TABLE {
                Table::Threads => match thread::read(self, key, window) {
                    Ok((n, read)) => Ok((n, same(read))),
                    Err(e) => Err(e.into()),
                },
                Table::Journals => match journal::read(self, key, window) {
                    Ok((n, read)) => Ok((n, same(read))),
                    Err(e) => Err(same(e)),
                },
                t => Err(logs_only(t, key).into()),
            }
        })?;
        Ok((len, L::part_of(read)))
    }

    async fn cut<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        len: usize,
    ) -> Result<(), L::Error> {
        blocking(|| match L::TABLE {
            Table::Journals => journal::cut(self, operation, key, len).map_err(same),
            t => Err(logs_only(t, key).into()),
        })
    }

    async fn remove<L: Log>(&self, operation: &'static str, key: &str) -> Result<usize, L::Error> {
        blocking(|| match L::TABLE {
            Table::Threads => Ok(thread::remove(self, operation, key)?),
            Table::Journals => journal::remove(self, operation, key).map_err(same),
            t => Err(logs_only(t, key).into()),
        })
    }

    async fn logs<L: Log>(&self) -> Result<Vec<Listed<L::Part>>, L::Error> {
        let logs = blocking(|| -> Result<_, L::Error> {
            match L::TABLE {
                Table::Threads => Ok(typed(thread::logs(self)?)),
                Table::Journals => journal::logs(self).map(typed).map_err(same),
                t => Err(logs_only(t, t.name()).into()),
            }
        })?;
        Ok(logs
            .into_iter()
            .map(|(key, len, last)| (key, len, L::part_of(last)))
            .collect())
    }
}
