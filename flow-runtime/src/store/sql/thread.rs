//! The [`ThreadStore`] contract and the turn leases as SQL statements, and their
//! implementation for [`SqlStore`]. An append runs in a transaction holding the thread's lock
//! (`begin("thread:ID")`: `:` never occurs in a checkpoint id), reads the thread's version and
//! inserts the record only if it is the expected one; the `(thread, seq)` key refuses a second
//! record at one position even without the lock. The lease is one conditional upsert of the
//! thread's lease row.

use std::ops::Range;
use std::time::Duration;

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::{db_error, int, millis_i64, SqlDatabase, SqlStore};
use crate::store::records::check_size;
use crate::store::thread::{check_version, validate_thread_id};
use crate::store::{ThreadError, ThreadHead, ThreadRecord, ThreadStore};

/// A thread's version: its number of records (0 for none).
pub(crate) const THREAD_VERSION: &str = "SELECT COALESCE(MAX(seq) + 1, 0) AS version
    FROM agentflow_thread_records WHERE thread = $1";

/// A thread's last record (its bytes only if at most `$2` bytes).
pub(crate) const THREAD_HEAD: &str =
    "SELECT seq, turn, size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_thread_records WHERE thread = $1 ORDER BY seq DESC LIMIT 1";

/// The records of turns `$2 <= turn < $3` (bytes only if at most `$4` bytes).
pub(crate) const THREAD_READ: &str =
    "SELECT seq, size, CASE WHEN size <= $4 THEN bytes END AS bytes
    FROM agentflow_thread_records WHERE thread = $1 AND turn >= $2 AND turn < $3 ORDER BY seq";

pub(crate) const THREAD_INSERT: &str =
    "INSERT INTO agentflow_thread_records (thread, seq, turn, size, bytes)
    VALUES ($1, $2, $3, $4, $5)";

pub(crate) const THREAD_LIST: &str =
    "SELECT DISTINCT thread FROM agentflow_thread_records ORDER BY thread";

pub(crate) const THREAD_DELETE: &str = "DELETE FROM agentflow_thread_records WHERE thread = $1";

/// Takes a thread's lease for owner `$2` for `$3` ms: inserts the lease row, or takes it over
/// if its lease ran out. Returns a row only if `$2` now holds it.
pub(crate) const LEASE_TAKE: &str =
    "INSERT INTO agentflow_thread_leases (thread, owner, lease_until_ms)
    VALUES ($1, $2, {NOW} + $3)
    ON CONFLICT (thread) DO UPDATE
    SET owner = excluded.owner, lease_until_ms = excluded.lease_until_ms
    WHERE agentflow_thread_leases.lease_until_ms <= {NOW}
    RETURNING owner";

/// Extends owner `$2`'s lease to `$3` ms from now; a row only if `$2` holds it.
pub(crate) const LEASE_RENEW: &str =
    "UPDATE agentflow_thread_leases SET lease_until_ms = {NOW} + $3
    WHERE thread = $1 AND owner = $2
    RETURNING owner";

pub(crate) const LEASE_RELEASE: &str =
    "DELETE FROM agentflow_thread_leases WHERE thread = $1 AND owner = $2";

fn thread_error<'a>(
    operation: &'static str,
    id: &'a str,
) -> impl Fn(sqlx::Error) -> ThreadError + 'a {
    move |e| ThreadError::Store(db_error(operation, id)(e))
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
    /// Runs a lease statement (`$1` thread, `$2` owner, `$3` lease in ms) that returns a row
    /// if `owner` holds the lease afterwards.
    async fn lease_row(
        &self,
        statement: &str,
        operation: &'static str,
        (id, owner): (&str, &str),
        lease: Duration,
    ) -> Result<bool, ThreadError> {
        validate_thread_id(id)?;
        let lease = sqlx::query(statement)
            .bind(id)
            .bind(owner)
            .bind(millis_i64(lease));
        let row = lease.fetch_optional(&self.leases).await;
        Ok(row.map_err(thread_error(operation, id))?.is_some())
    }

    /// Decodes a record row (`seq`, `size`, `bytes`), refusing one over the limit.
    fn thread_record(&self, id: &str, row: &DB::Row) -> Result<ThreadRecord, ThreadError> {
        let err = thread_error("read", id);
        let seq: i64 = row.try_get("seq").map_err(&err)?;
        let size: i64 = row.try_get("size").map_err(&err)?;
        check_size(id, size as u64, self.max_bytes)?;
        let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
        ThreadRecord::decode(id, seq as u64, &bytes.unwrap_or_default())
    }
}

#[async_trait::async_trait]
impl<DB: SqlDatabase> ThreadStore for SqlStore<DB>
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
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        validate_thread_id(id)?;
        let head = sqlx::query(&self.sql.thread_head)
            .bind(id)
            .bind(int(self.max_bytes));
        let row = head.fetch_optional(&self.pool).await;
        let Some(row) = row.map_err(thread_error("read", id))? else {
            return Ok(None);
        };
        let last = self.thread_record(id, &row)?;
        let turn: i64 = row.try_get("turn").map_err(thread_error("read", id))?;
        Ok(Some(ThreadHead {
            id: id.to_owned(),
            version: last.seq + 1,
            turns: turn as u64 + 1,
            last,
        }))
    }

    async fn read(&self, id: &str, turns: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        validate_thread_id(id)?;
        let read = sqlx::query(&self.sql.thread_read).bind(id);
        let read = read
            .bind(int(turns.start))
            .bind(int(turns.end))
            .bind(int(self.max_bytes));
        let rows = read
            .fetch_all(&self.pool)
            .await
            .map_err(thread_error("read", id))?;
        rows.iter().map(|row| self.thread_record(id, row)).collect()
    }

    async fn append(
        &self,
        id: &str,
        expected_version: u64,
        mut record: ThreadRecord,
    ) -> Result<u64, ThreadError> {
        validate_thread_id(id)?;
        record.seq = expected_version;
        let bytes = record.encode();
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        let err = thread_error("write", id);
        let mut tx = self.begin(&format!("thread:{id}")).await?;
        let version = sqlx::query(&self.sql.thread_version).bind(id);
        let row = version.fetch_one(&mut *tx).await.map_err(&err)?;
        let found: i64 = row.try_get("version").map_err(&err)?;
        check_version(id, expected_version, found as u64)?;
        let insert = sqlx::query(&self.sql.thread_insert).bind(id);
        let insert = insert.bind(int(expected_version)).bind(int(record.turn));
        let inserted = insert
            .bind(bytes.len() as i64)
            .bind(&bytes[..])
            .execute(&mut *tx)
            .await;
        match inserted {
            Ok(_) => {}
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Err(ThreadError::Conflict {
                    id: id.to_owned(),
                    expected: expected_version,
                    found: expected_version + 1,
                })
            }
            Err(e) => return Err(err(e)),
        }
        tx.commit().await.map_err(&err)?;
        Ok(expected_version + 1)
    }

    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        let err = thread_error("list", "threads");
        let rows = sqlx::query(&self.sql.thread_list)
            .fetch_all(&self.pool)
            .await;
        let rows = rows.map_err(&err)?;
        rows.iter()
            .map(|row| row.try_get("thread").map_err(&err))
            .collect()
    }

    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        validate_thread_id(id)?;
        let done = sqlx::query(&self.sql.thread_delete)
            .bind(id)
            .execute(&self.pool)
            .await;
        Ok(DB::rows_affected(&done.map_err(thread_error("delete", id))?) > 0)
    }

    async fn lease_thread(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        let taken = self
            .lease_row(&self.sql.lease_take, "lease", (id, owner), lease)
            .await?;
        taken
            .then_some(())
            .ok_or_else(|| ThreadError::Busy { id: id.to_owned() })
    }

    async fn renew_thread_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<(), ThreadError> {
        let operation = "renew the lease of";
        let held = self
            .lease_row(&self.sql.lease_renew, operation, (id, owner), lease)
            .await?;
        held.then_some(())
            .ok_or_else(|| ThreadError::LeaseLost { id: id.to_owned() })
    }

    async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
        validate_thread_id(id)?;
        let release = sqlx::query(&self.sql.lease_release).bind(id).bind(owner);
        let done = release.execute(&self.leases).await;
        done.map_err(thread_error("release the lease of", id))?;
        Ok(())
    }
}
