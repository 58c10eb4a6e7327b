//! The logs of [`SqlRows`]: a thread's records (`agentflow_thread_records`) and a run's
//! journal (`agentflow_journal`), one row per entry keyed by `(key, seq)`. An append checks
//! the log's length and inserts its entries in one transaction holding the log's lock
//! (`thread:ID`, `journal:RUN`; SQLite's journal appends are committed in groups instead,
//! `sqlite_journal.rs`); the key refuses a second entry at one position even without the
//! lock. A read takes the length, then the rows of the window the front picks from it.

use std::ops::Range;
use std::sync::Arc;

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::keeper::{same, unkept};
use super::{db_error, int, SqlDatabase, SqlRows};
use crate::store::backend::{clamp, Listed, Log, Table};
use crate::store::records::check_size;
use crate::store::{JournalError, StoreError, StoredStep};

/// A thread's version: its number of records (0 for none).
pub(crate) const THREAD_VERSION: &str = "SELECT COALESCE(MAX(seq) + 1, 0) AS len
    FROM agentflow_thread_records WHERE thread = $1";

/// A thread's last two records (bytes only if at most `$2` bytes), the last first: its length,
/// and what a read of its head or of its last turn wants, in one statement.
pub(crate) const THREAD_LAST: &str =
    "SELECT seq, turn, size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_thread_records WHERE thread = $1 ORDER BY seq DESC LIMIT 2";

/// The records `$2 <= seq < $3` (bytes only if at most `$4` bytes).
pub(crate) const THREAD_WINDOW: &str =
    "SELECT seq, turn, size, CASE WHEN size <= $4 THEN bytes END AS bytes
    FROM agentflow_thread_records WHERE thread = $1 AND seq >= $2 AND seq < $3 ORDER BY seq";

pub(crate) const THREAD_INSERT: &str =
    "INSERT INTO agentflow_thread_records (thread, seq, turn, size, bytes)
    VALUES ($1, $2, $3, $4, $5)";

pub(crate) const THREAD_DELETE: &str = "DELETE FROM agentflow_thread_records WHERE thread = $1";

/// Every thread with its length and last record (its bytes only if at most `$1` bytes).
pub(crate) const THREAD_LOGS: &str = "SELECT r.thread AS key, r.seq, r.turn, r.size,
    CASE WHEN r.size <= $1 THEN r.bytes END AS bytes
    FROM agentflow_thread_records r JOIN (SELECT thread, MAX(seq) AS seq
        FROM agentflow_thread_records GROUP BY thread) m ON r.thread = m.thread AND r.seq = m.seq";

/// A journal's length: its number of steps.
pub(crate) const JOURNAL_LEN: &str =
    "SELECT COALESCE(MAX(seq) + 1, 0) AS len FROM agentflow_journal WHERE run = $1";

pub(crate) const JOURNAL_INSERT: &str =
    "INSERT INTO agentflow_journal (run, seq, at_ms, kind, size, bytes)
    VALUES ($1, $2, $3, $4, $5, $6)";

/// The steps `$2 <= seq < $3` (bytes only if at most `$4` bytes).
pub(crate) const JOURNAL_WINDOW: &str =
    "SELECT seq, at_ms, kind, size, CASE WHEN size <= $4 THEN bytes END AS bytes
    FROM agentflow_journal WHERE run = $1 AND seq >= $2 AND seq < $3 ORDER BY seq";

pub(crate) const JOURNAL_TRUNCATE: &str =
    "DELETE FROM agentflow_journal WHERE run = $1 AND seq >= $2";

pub(crate) const JOURNAL_DELETE: &str = "DELETE FROM agentflow_journal WHERE run = $1";

/// Every journal with its length and last step (its bytes only if at most `$1` bytes).
pub(crate) const JOURNAL_LOGS: &str = "SELECT j.run AS key, j.seq, j.at_ms, j.kind, j.size,
    CASE WHEN j.size <= $1 THEN j.bytes END AS bytes
    FROM agentflow_journal j JOIN (SELECT run, MAX(seq) AS seq
        FROM agentflow_journal GROUP BY run) m ON j.run = m.run AND j.seq = m.seq";

/// A thread's records as the front reads them: each one's turn and bytes.
type Records = Vec<(Option<u64>, Arc<[u8]>)>;

impl<DB: SqlDatabase> SqlRows<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Decode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    /// The length of the log of `table` under `key`.
    async fn log_len(&self, table: Table, key: &str) -> Result<usize, StoreError> {
        let err = db_error("read", key);
        let sql = match table {
            Table::Threads => &self.sql.thread_version,
            _ => &self.sql.journal_len,
        };
        let row = sqlx::query(sql).bind(key).fetch_one(&self.pool).await;
        let len: i64 = row.map_err(&err)?.try_get("len").map_err(&err)?;
        Ok(len as usize)
    }

    /// An entry's bytes as read: refused over the limit.
    fn bytes(&self, key: &str, row: &DB::Row) -> Result<Vec<u8>, StoreError> {
        let err = db_error("read", key);
        let size: i64 = row.try_get("size").map_err(&err)?;
        check_size(key, size as u64, self.limit)?;
        let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
        Ok(bytes.unwrap_or_default())
    }

    /// A journal's step as its row reads.
    fn step(&self, run: &str, row: &DB::Row) -> Result<StoredStep, StoreError> {
        let err = db_error("read the journal of", run);
        Ok(StoredStep {
            seq: row.try_get::<i64, _>("seq").map_err(&err)? as u64,
            at_ms: row.try_get::<i64, _>("at_ms").map_err(&err)? as u64,
            kind: row.try_get("kind").map_err(&err)?,
            bytes: self.bytes(run, row)?,
        })
    }

    /// A thread's record as its row reads: its turn and bytes.
    fn thread_record(
        &self,
        id: &str,
        row: &DB::Row,
    ) -> Result<(Option<u64>, Arc<[u8]>), StoreError> {
        let turn: i64 = row.try_get("turn").map_err(db_error("read", id))?;
        Ok((Some(turn as u64), self.bytes(id, row)?.into()))
    }

    /// Appends a thread's record (`(turn, bytes)`) at `expected` if the thread holds that
    /// many: `Err(found)` otherwise.
    async fn append_record(
        &self,
        id: &str,
        expected: u64,
        (turn, bytes): (u64, Arc<[u8]>),
    ) -> Result<Result<u64, u64>, StoreError> {
        let err = db_error("append to", id);
        let mut tx = self.begin(&format!("thread:{id}"), false).await?;
        let version = sqlx::query(&self.sql.thread_version).bind(id);
        let row = version.fetch_one(&mut *tx).await.map_err(&err)?;
        let found: i64 = row.try_get("len").map_err(&err)?;
        if found as u64 != expected {
            return Ok(Err(found as u64));
        }
        let insert = sqlx::query(&self.sql.thread_insert).bind(id);
        let insert = insert.bind(int(expected)).bind(int(turn));
        let insert = insert.bind(bytes.len() as i64).bind(&bytes[..]);
        match insert.execute(&mut *tx).await {
            Ok(_) => {}
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Ok(Err(expected + 1))
            }
            Err(e) => return Err(err(e)),
        }
        tx.commit().await.map_err(&err)?;
        Ok(Ok(expected + 1))
    }

    /// Appends `steps` to `run`'s journal in one transaction holding the journal's lock:
    /// reads its length, and inserts the steps if it is `expected` (one commit for any number
    /// of steps).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) async fn append_in_tx(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        let err = db_error("append to the journal of", run);
        let mut tx = self.begin(&format!("journal:{run}"), false).await?;
        let len = sqlx::query(&self.sql.journal_len).bind(run);
        let row = len.fetch_one(&mut *tx).await.map_err(&err)?;
        let found: i64 = row.try_get("len").map_err(&err)?;
        let conflict = |found| JournalError::Conflict {
            run: run.to_owned(),
            expected,
            found,
        };
        if found as u64 != expected {
            return Err(conflict(found as u64));
        }
        for (k, step) in (expected..).zip(&steps) {
            let insert = sqlx::query(&self.sql.journal_insert).bind(run).bind(int(k));
            let insert = insert.bind(int(step.at_ms)).bind(&step.kind[..]);
            let insert = insert.bind(step.bytes.len() as i64).bind(&step.bytes[..]);
            match insert.execute(&mut *tx).await {
                Ok(_) => {}
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                    return Err(conflict(k + 1))
                }
                Err(e) => return Err(err(e).into()),
            }
        }
        tx.commit().await.map_err(&err)?;
        Ok(expected + steps.len() as u64)
    }

    /// [`Keep::append`](crate::store::backend::Keep::append) (`synced`: durable when it
    /// returns).
    pub(super) async fn append_log<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        expected: u64,
        batch: L::Batch,
        synced: bool,
    ) -> Result<Result<u64, u64>, L::Error> {
        match L::TABLE {
            Table::Threads => Ok(self.append_record(key, expected, same(batch)).await?),
            Table::Journals => {
                let steps: Vec<StoredStep> = same(L::entries(&batch));
                match DB::append_journal(self, key, expected, steps, synced).await {
                    Ok(len) => Ok(Ok(len)),
                    Err(JournalError::Conflict { found, .. }) => Ok(Err(found)),
                    Err(e) => Err(same(e)),
                }
            }
            t => Err(unkept(t, &format!("{operation} {key}")).into()),
        }
    }

    /// [`Keep::read`](crate::store::backend::Keep::read).
    pub(super) async fn read_log<L: Log>(
        &self,
        key: &str,
        window: impl FnOnce(usize) -> Range<usize>,
    ) -> Result<(usize, L::Part), L::Error> {
        let err = db_error("read", key);
        let (len, window) = if L::TABLE == Table::Threads {
            // The last two records tell the length, and are the window when it is within them.
            let last = sqlx::query(&self.sql.thread_last).bind(key);
            let last = last.bind(int(self.limit)).fetch_all(&self.pool).await;
            let last = last.map_err(&err)?;
            let seq = |row: &DB::Row| row.try_get::<i64, _>("seq").map(|s| s as usize);
            let len = match last.first() {
                Some(row) => seq(row).map_err(&err)? + 1,
                None => 0,
            };
            let window = clamp(window(len), len);
            if window.start >= len - last.len() {
                let mut rows: Vec<_> = last.into_iter().rev().collect();
                rows.drain(..window.start - (len - rows.len()));
                rows.truncate(window.len());
                return Ok((len, self.part::<L>(key, &rows)?));
            }
            (len, window)
        } else {
            let len = self.log_len(L::TABLE, key).await?;
            (len, clamp(window(len), len))
        };
        if window.is_empty() {
            return Ok((len, L::Part::default()));
        }
        let sql = match L::TABLE {
            Table::Threads => &self.sql.thread_window,
            Table::Journals => &self.sql.journal_window,
            t => return Err(unkept(t, key).into()),
        };
        let read = sqlx::query(sql).bind(key).bind(int(window.start as u64));
        let read = read.bind(int(window.end as u64)).bind(int(self.limit));
        let rows = read.fetch_all(&self.pool).await.map_err(&err)?;
        Ok((len, self.part::<L>(key, &rows)?))
    }

    /// The window of log `L` that `rows` hold.
    fn part<L: Log>(&self, key: &str, rows: &[DB::Row]) -> Result<L::Part, StoreError> {
        Ok(match L::TABLE {
            Table::Threads => {
                let records: Result<Records, StoreError> = rows
                    .iter()
                    .map(|row| self.thread_record(key, row))
                    .collect();
                same(records?)
            }
            _ => {
                let steps: Result<Vec<StoredStep>, StoreError> =
                    rows.iter().map(|row| self.step(key, row)).collect();
                L::part_of(same(steps?))
            }
        })
    }

    /// [`Keep::cut`](crate::store::backend::Keep::cut).
    pub(super) async fn cut_log<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
        len: usize,
    ) -> Result<(), L::Error> {
        if L::TABLE != Table::Journals {
            return Err(unkept(L::TABLE, key).into());
        }
        let cut = sqlx::query(&self.sql.journal_truncate).bind(key);
        let done = cut.bind(int(len as u64)).execute(&self.pool).await;
        done.map_err(db_error(operation, key))?;
        Ok(())
    }

    /// [`Keep::remove`](crate::store::backend::Keep::remove).
    pub(super) async fn remove_log<L: Log>(
        &self,
        operation: &'static str,
        key: &str,
    ) -> Result<usize, L::Error> {
        let sql = match L::TABLE {
            Table::Threads => &self.sql.thread_delete,
            Table::Journals => &self.sql.journal_delete,
            t => return Err(unkept(t, key).into()),
        };
        let done = sqlx::query(sql).bind(key).execute(&self.pool).await;
        let done = done.map_err(db_error(operation, key))?;
        Ok(DB::rows_affected(&done) as usize)
    }

    /// [`Keep::logs`](crate::store::backend::Keep::logs): a listed entry over the limit is
    /// listed without its bytes.
    pub(super) async fn list_logs<L: Log>(&self) -> Result<Vec<Listed<L::Part>>, L::Error> {
        let (table, err) = (L::TABLE, db_error("list", L::TABLE.name()));
        let sql = match table {
            Table::Threads => &self.sql.thread_logs,
            Table::Journals => &self.sql.journal_logs,
            t => return Err(unkept(t, t.name()).into()),
        };
        let read = sqlx::query(sql).bind(int(self.limit));
        let rows = read.fetch_all(&self.pool).await.map_err(&err)?;
        let mut logs = Vec::with_capacity(rows.len());
        for row in &rows {
            let key: String = row.try_get("key").map_err(&err)?;
            let seq: i64 = row.try_get("seq").map_err(&err)?;
            let last = match self.part::<L>(&key, std::slice::from_ref(row)) {
                Ok(last) => last,
                Err(StoreError::TooLarge { .. }) => L::Part::default(),
                Err(e) => return Err(e.into()),
            };
            logs.push((key, seq as usize + 1, last));
        }
        Ok(logs)
    }
}
