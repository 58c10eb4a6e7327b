//! The [`JournalStore`] contract as SQL statements, and its implementation for [`SqlStore`]:
//! one row per step, keyed by `(run, seq)`. An append is the dialect's
//! ([`SqlDatabase::append_journal`]): PostgreSQL's is [`SqlStore::append_in_tx`], one
//! transaction holding the journal's lock (`begin("journal:RUN")`) that checks the length and
//! inserts its steps; SQLite's commits the appends waiting at once in one transaction
//! (`sqlite_journal.rs`). The `(run, seq)` key refuses a second step at one position even
//! without the lock.

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::{db_error, int, SqlDatabase, SqlStore};
use crate::store::records::check_size;
use crate::store::{
    journal_check_kind, validate_id, JournalError, JournalStore, JournalSummary, StoredStep,
};

/// A journal's length: its number of steps.
pub(crate) const JOURNAL_LEN: &str =
    "SELECT COALESCE(MAX(seq) + 1, 0) AS len FROM agentflow_journal WHERE run = $1";

pub(crate) const JOURNAL_INSERT: &str =
    "INSERT INTO agentflow_journal (run, seq, at_ms, kind, size, bytes)
    VALUES ($1, $2, $3, $4, $5, $6)";

/// The steps from `$2` on (bytes only if at most `$3` bytes).
pub(crate) const JOURNAL_READ: &str =
    "SELECT seq, at_ms, kind, size, CASE WHEN size <= $3 THEN bytes END AS bytes
    FROM agentflow_journal WHERE run = $1 AND seq >= $2 ORDER BY seq";

pub(crate) const JOURNAL_TRUNCATE: &str =
    "DELETE FROM agentflow_journal WHERE run = $1 AND seq >= $2";

pub(crate) const JOURNAL_DELETE: &str = "DELETE FROM agentflow_journal WHERE run = $1";

/// The journals whose last step was appended at or before `$1`, with their lengths.
pub(crate) const JOURNAL_IDLE: &str = "SELECT run, MAX(seq) + 1 AS len, MAX(at_ms) AS last_at_ms
    FROM agentflow_journal GROUP BY run HAVING MAX(at_ms) <= $1 ORDER BY run";

fn journal_error<'a>(
    operation: &'static str,
    run: &'a str,
) -> impl Fn(sqlx::Error) -> JournalError + 'a {
    move |e| JournalError::Store(db_error(operation, run)(e))
}

impl<DB: SqlDatabase> SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    /// What every append checks before it writes: the run id, each step's kind and size.
    fn check_steps(&self, run: &str, steps: &[StoredStep]) -> Result<(), JournalError> {
        validate_id(run)?;
        for step in steps {
            journal_check_kind(&step.kind)?;
            check_size(run, step.bytes.len() as u64, self.max_bytes)?;
        }
        Ok(())
    }

    /// Appends in one transaction holding the journal's lock: reads its length, and inserts
    /// the steps if it is `expected` (one commit for any number of steps).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) async fn append_in_tx(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        let err = journal_error("append to the journal of", run);
        let mut tx = self.begin(&format!("journal:{run}")).await?;
        let len = sqlx::query(&self.sql.journal_len).bind(run);
        let found: i64 = len
            .fetch_one(&mut *tx)
            .await
            .map_err(&err)?
            .try_get("len")
            .map_err(&err)?;
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
                Err(e) => return Err(err(e)),
            }
        }
        tx.commit().await.map_err(&err)?;
        Ok(expected + steps.len() as u64)
    }
}

#[async_trait::async_trait]
impl<DB: SqlDatabase> JournalStore for SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    async fn append_steps(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        self.check_steps(run, &steps)?;
        DB::append_journal(self, run, expected, steps, true).await
    }

    async fn append_steps_unsynced(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
    ) -> Result<u64, JournalError> {
        self.check_steps(run, &steps)?;
        DB::append_journal(self, run, expected, steps, false).await
    }

    async fn read_steps(&self, run: &str, from: u64) -> Result<Vec<StoredStep>, JournalError> {
        validate_id(run)?;
        let err = journal_error("read the journal of", run);
        let read = sqlx::query(&self.sql.journal_read).bind(run);
        let read = read.bind(int(from)).bind(int(self.max_bytes));
        let mut out = Vec::new();
        for row in read.fetch_all(&self.pool).await.map_err(&err)? {
            let size: i64 = row.try_get("size").map_err(&err)?;
            check_size(run, size as u64, self.max_bytes)?;
            let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
            out.push(StoredStep {
                seq: row.try_get::<i64, _>("seq").map_err(&err)? as u64,
                at_ms: row.try_get::<i64, _>("at_ms").map_err(&err)? as u64,
                kind: row.try_get("kind").map_err(&err)?,
                bytes: bytes.unwrap_or_default(),
            });
        }
        Ok(out)
    }

    async fn journal_len(&self, run: &str) -> Result<u64, JournalError> {
        validate_id(run)?;
        let err = journal_error("read the journal of", run);
        let len = sqlx::query(&self.sql.journal_len)
            .bind(run)
            .fetch_one(&self.pool)
            .await;
        let len: i64 = len.map_err(&err)?.try_get("len").map_err(&err)?;
        Ok(len as u64)
    }

    async fn truncate_steps(&self, run: &str, len: u64) -> Result<(), JournalError> {
        validate_id(run)?;
        let truncate = sqlx::query(&self.sql.journal_truncate)
            .bind(run)
            .bind(int(len));
        let done = truncate.execute(&self.pool).await;
        done.map_err(journal_error("truncate the journal of", run))?;
        Ok(())
    }

    async fn delete_journal(&self, run: &str) -> Result<bool, JournalError> {
        validate_id(run)?;
        let done = sqlx::query(&self.sql.journal_delete)
            .bind(run)
            .execute(&self.pool)
            .await;
        let done = done.map_err(journal_error("delete the journal of", run))?;
        Ok(DB::rows_affected(&done) > 0)
    }

    async fn idle_journals(&self, at_ms: u64) -> Result<Vec<JournalSummary>, JournalError> {
        let err = journal_error("list the journals of", "*");
        let idle = sqlx::query(&self.sql.journal_idle).bind(int(at_ms));
        let mut out = Vec::new();
        for row in idle.fetch_all(&self.pool).await.map_err(&err)? {
            out.push(JournalSummary {
                run: row.try_get("run").map_err(&err)?,
                steps: row.try_get::<i64, _>("len").map_err(&err)? as u64,
                last_at_ms: row.try_get::<i64, _>("last_at_ms").map_err(&err)? as u64,
            });
        }
        Ok(out)
    }
}
