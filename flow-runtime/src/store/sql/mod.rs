//! The SQL stores: one implementation of the checkpoint, thread and journal contracts for
//! SQLite and PostgreSQL, [`SqlStore<DB>`] ([`SqliteStore`](super::SqliteStore) is
//! `SqlStore<Sqlite>`, [`PostgresStore`](super::PostgresStore) `SqlStore<Postgres>`).
//!
//! The code is written once, generic over sqlx's [`Database`]; what differs between the two
//! databases is data, a [`Dialect`]: the clock (`{NOW}` in the statements), the batch claim's
//! `FOR UPDATE SKIP LOCKED`, the column types of the schema, how a write takes a run's lock,
//! and PostgreSQL's one-statement completion. Ids and bytes are always bound parameters
//! (`$1`, `$2`, ... on both databases). The test `sql_statements_prepare_on_both` prepares every
//! statement of [`Statements`] on both.
//!
//! # Schema
//!
//! `agentflow_schema(id = 1, version)` holds the schema version; `agentflow_checkpoints` one
//! row per record of a run's history: `(id, version)` is the key, `parent` the record it
//! continues, `state` one of `pending claimed resumed finished replaced`, `attempt` and
//! `lease_until_ms` the claim, `is_head` 1 on the run's latest record.
//! `agentflow_thread_records` and `agentflow_thread_leases` hold threads and their turn leases;
//! `agentflow_journal` one row per step of a run's journal, keyed by `(run, seq)`.
//!
//! # Claims
//!
//! A claim is one `UPDATE ... WHERE state = 'pending' OR (state = 'claimed' AND the lease ran
//! out) RETURNING ...` on the head row: the database's row lock makes exactly one of any
//! number of concurrent claimants see the row match. Renewing, releasing and completing match
//! the claim's `(version, attempt)`, so a claim that was taken over changes nothing. A batch
//! claim (`claim_pending`) is one `UPDATE ... WHERE (id, version) IN (SELECT ... ORDER BY
//! created_ms, id LIMIT n)` over the waiting rows' partial index; on PostgreSQL the select is
//! `FOR UPDATE SKIP LOCKED`, so concurrent workers take disjoint batches without waiting for
//! each other. Changes that append a record run in a transaction that holds the run's lock
//! (SQLite: the database's write lock, `BEGIN IMMEDIATE`; PostgreSQL: an advisory lock on the
//! id).
//!
//! # Files
//!
//! - this file: [`SqlStore`], [`SqlDatabase`] (what a database brings: its [`Dialect`]) and
//!   [`Statements`];
//! - `schema.rs`: the tables, their migrations, and the code that applies them on open;
//! - `checkpoint.rs`, `thread.rs`, `journal.rs`: each contract's statements and its
//!   implementation.

mod checkpoint;
mod journal;
mod schema;
#[cfg(test)]
mod tests;
mod thread;

use std::sync::Arc;

use sqlx::{Database, Encode, Executor, IntoArguments, Pool, Transaction, Type};

use super::{JournalError, StoreError, StoredStep, DEFAULT_MAX_CHECKPOINT_BYTES};
pub(crate) use schema::migrate;

/// What differs between the SQL databases, as data: every SQL store (checkpoints, threads,
/// journals, the run queue with its schedules and spending, memory items) reads its
/// differences from here.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// The database's clock in milliseconds since the Unix epoch, as an SQL expression.
    pub(crate) now: &'static str,
    /// What follows a claim's choice of rows (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
    pub(crate) skip_locked: &'static str,
    /// What follows a read of rows a transaction then changes (PostgreSQL: `FOR UPDATE`).
    pub(crate) for_update: &'static str,
    /// The schema's 64-bit integer column type.
    pub(crate) int: &'static str,
    /// The schema's byte string column type.
    pub(crate) blob: &'static str,
    /// The statement that opens a write transaction.
    pub(crate) begin: &'static str,
    /// Takes a named lock for the transaction (`$1` the name, `$2` a seed), if the database
    /// locks by name; without it `begin` holds the database's one write lock.
    pub(crate) lock: Option<&'static str>,
    /// Takes a lock by number (`$1`) for the transaction, if the database locks by name.
    pub(crate) lock_key: Option<&'static str>,
    /// Whether a completion is one statement (`COMPLETE_ONE`: data-modifying `WITH`).
    pub(crate) complete_in_one: bool,
    /// The run queue's `seq` column: its place, numbered by the database.
    pub(crate) queue_seq: &'static str,
    /// The names (`name`) of the run queue table's columns.
    pub(crate) queue_columns: &'static str,
    /// The texts of the JSON array of strings in `$3`, as a subquery.
    pub(crate) json_texts: &'static str,
    /// The memory items' tables and full-text search.
    pub(crate) memory: &'static super::memory_items::sql::MemoryDialect,
}

impl Dialect {
    /// `statement` with this dialect's clock, lock clause and column types filled in.
    pub(crate) fn fill(&self, statement: &str) -> String {
        statement
            .replace("{NOW}", self.now)
            .replace("{SKIP_LOCKED}", self.skip_locked)
            .replace("{FOR_UPDATE}", self.for_update)
            .replace("{INT}", self.int)
            .replace("{BLOB}", self.blob)
            .replace("{FLOWS}", self.json_texts)
    }
}

/// A lock a write transaction holds until it ends (PostgreSQL's advisory locks; on SQLite
/// the transaction's `BEGIN IMMEDIATE` holds the database's one write lock, which covers
/// every lock).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lock<'a> {
    /// A name, hashed with a seed (each kind of name its own seed).
    Name(&'a str, i64),
    /// A fixed number.
    Key(i64),
}

/// A write transaction on `pool` holding `locks`, taken in order.
pub(crate) async fn write_tx<DB: SqlDatabase>(
    pool: &Pool<DB>,
    locks: &[Lock<'_>],
) -> Result<Transaction<'static, DB>, sqlx::Error>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
{
    let dialect = DB::DIALECT;
    let mut tx = pool.begin_with(dialect.begin).await?;
    for lock in locks {
        let take = match (lock, dialect.lock, dialect.lock_key) {
            (Lock::Name(name, seed), Some(statement), _) => {
                sqlx::query(statement).bind(*name).bind(*seed)
            }
            (Lock::Key(key), _, Some(statement)) => sqlx::query(statement).bind(*key),
            _ => continue,
        };
        take.execute(&mut *tx).await?;
    }
    Ok(tx)
}

/// A database the SQL stores run on: SQLite or PostgreSQL (implemented for sqlx's
/// `Sqlite` and `Postgres`; sealed).
pub trait SqlDatabase: Database + sealed::Sealed {
    /// The database's SQL differences.
    const DIALECT: Dialect;
    /// What a store on this database keeps beside its pools (SQLite: its file and journal
    /// writer).
    type Extra: std::fmt::Debug + Clone + Send + Sync + 'static;
    /// The rows a statement changed.
    #[doc(hidden)]
    fn rows_affected(result: &Self::QueryResult) -> u64;
    /// Appends `steps` to `run`'s journal if it holds `expected` steps (its length after, or
    /// [`JournalError::Conflict`]); `synced`: durable when it returns. SQLite commits the
    /// appends waiting at once together; PostgreSQL in a transaction of their own.
    #[doc(hidden)]
    fn append_journal(
        store: &SqlStore<Self>,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
        synced: bool,
    ) -> impl std::future::Future<Output = Result<u64, JournalError>> + Send;
}

pub(crate) mod sealed {
    /// Keeps [`SqlDatabase`](super::SqlDatabase) to the databases of this crate.
    pub trait Sealed {}
}

/// A SQL store of checkpoints, threads and journals on database `DB`: use it as
/// [`SqliteStore`](super::SqliteStore) or [`PostgresStore`](super::PostgresStore), whose pages
/// say how each opens and what it guarantees.
#[derive(Debug)]
pub struct SqlStore<DB: SqlDatabase> {
    pub(crate) pool: Pool<DB>,
    /// Where claims, renewals, releases and turn leases are written: SQLite's connections that
    /// do not sync each commit; PostgreSQL's pool.
    pub(crate) leases: Pool<DB>,
    pub(crate) sql: Arc<Statements>,
    pub(crate) max_bytes: u64,
    /// How errors name the database (never a URL, which may hold a password).
    pub(crate) shown: Arc<str>,
    pub(crate) extra: DB::Extra,
}

impl<DB: SqlDatabase> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        SqlStore {
            pool: self.pool.clone(),
            leases: self.leases.clone(),
            sql: Arc::clone(&self.sql),
            max_bytes: self.max_bytes,
            shown: Arc::clone(&self.shown),
            extra: self.extra.clone(),
        }
    }
}

impl<DB: SqlDatabase> SqlStore<DB> {
    /// A store over `pool` (migrated), with `leases` for its leases.
    pub(crate) fn new(pool: Pool<DB>, leases: Pool<DB>, shown: &str, extra: DB::Extra) -> Self {
        SqlStore {
            pool,
            leases,
            sql: Arc::new(Statements::new(&DB::DIALECT)),
            max_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
            shown: shown.into(),
            extra,
        }
    }

    /// The same store, refusing checkpoints (and threads' records and journal steps) over
    /// `limit` bytes ([`StoreError::TooLarge`]); the default is
    /// [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn max_checkpoint_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = limit;
        self
    }

    /// The store's connections (the memory store shares them: `memory_items`).
    pub(crate) fn pool(&self) -> &Pool<DB> {
        &self.pool
    }
}

/// A database error of `operation` on `id`.
pub(crate) fn db_error<'a>(
    operation: &'static str,
    id: &'a str,
) -> impl Fn(sqlx::Error) -> StoreError + 'a {
    move |e| StoreError::Database {
        operation,
        id: id.to_owned(),
        source: Arc::new(e),
    }
}

/// A duration in milliseconds, as the SQL stores bind it (saturating).
pub(crate) fn millis_i64(d: std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// A count or position as the SQL stores bind it (saturating).
pub(crate) fn int(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

/// Every statement of the SQL stores, with a dialect filled in (serialised, a map of names to
/// statements: what the tests prepare on each database).
#[derive(Debug, serde::Serialize)]
pub(crate) struct Statements {
    pub get: String,
    pub head: String,
    pub retire_head: String,
    pub insert: String,
    pub claim: String,
    pub claim_refused: String,
    pub claim_batch: String,
    /// A completion in one statement, where the dialect runs one (see `COMPLETE_ONE`).
    pub complete_one: Option<String>,
    pub renew: String,
    pub release: String,
    pub end_claim: String,
    pub history: String,
    pub pending: String,
    pub purge: String,
    pub delete: String,
    pub thread_version: String,
    pub thread_head: String,
    pub thread_read: String,
    pub thread_insert: String,
    pub thread_list: String,
    pub thread_delete: String,
    pub lease_take: String,
    pub lease_renew: String,
    pub lease_release: String,
    pub journal_len: String,
    pub journal_insert: String,
    pub journal_read: String,
    pub journal_truncate: String,
    pub journal_delete: String,
    pub journal_idle: String,
}

impl Statements {
    /// The statements of `dialect`.
    pub fn new(dialect: &Dialect) -> Self {
        use checkpoint::*;
        use journal::*;
        use thread::*;
        let f = |s: &str| dialect.fill(s);
        Statements {
            get: f(GET),
            head: f(HEAD),
            retire_head: f(RETIRE_HEAD),
            insert: f(INSERT),
            claim: f(CLAIM),
            claim_refused: f(CLAIM_REFUSED),
            claim_batch: f(CLAIM_BATCH),
            complete_one: dialect.complete_in_one.then(|| f(COMPLETE_ONE)),
            renew: f(RENEW),
            release: f(RELEASE),
            end_claim: f(END_CLAIM),
            history: f(HISTORY),
            pending: f(PENDING),
            purge: f(PURGE),
            delete: f(DELETE),
            thread_version: f(THREAD_VERSION),
            thread_head: f(THREAD_HEAD),
            thread_read: f(THREAD_READ),
            thread_insert: f(THREAD_INSERT),
            thread_list: f(THREAD_LIST),
            thread_delete: f(THREAD_DELETE),
            lease_take: f(LEASE_TAKE),
            lease_renew: f(LEASE_RENEW),
            lease_release: f(LEASE_RELEASE),
            journal_len: f(JOURNAL_LEN),
            journal_insert: f(JOURNAL_INSERT),
            journal_read: f(JOURNAL_READ),
            journal_truncate: f(JOURNAL_TRUNCATE),
            journal_delete: f(JOURNAL_DELETE),
            journal_idle: f(JOURNAL_IDLE),
        }
    }
}
