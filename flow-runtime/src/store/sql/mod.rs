//! The SQL stores: one implementation of the checkpoint, thread and journal contracts for
//! SQLite and PostgreSQL, [`SqlStore<DB>`] ([`SqliteStore`](super::SqliteStore) is
//! `SqlStore<Sqlite>`, [`PostgresStore`](super::PostgresStore) `SqlStore<Postgres>`).
//!
//! The code is written once, generic over sqlx's [`Database`]; what differs between the two
//! databases is data, a [`Dialect`]: the clock (`{NOW}` in the statements), the batch claim's
//! `FOR UPDATE SKIP LOCKED`, the column types of the schema, how a write takes a run's lock,
//! and PostgreSQL's one-statement save and completion. Ids and bytes are always bound parameters
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
//! # Rules
//!
//! Every rule of the three contracts is the front's
//! ([`KeyValueStore`](super::backend::KeyValueStore)), as for the in-memory and File stores:
//! a [`SqlStore`] is the front over [`SqlRows`], the keeper that keeps what the rules decide
//! in rows (`keeper.rs`: a claim, renewal, release or completion is one conditional
//! `UPDATE` of the head on what the front's rule decided, as [`SqlRows`] describes; any
//! other change of a run or a turn lease runs in a write transaction holding its lock,
//! SQLite's `BEGIN IMMEDIATE` or a PostgreSQL advisory lock on the id;
//! `logs.rs`: threads and journals, appended under a compare-and-swap on their length). The
//! listings of runs (pending, claimable, finished) read the partial indexes of the heads.
//!
//! # Files
//!
//! - this file: [`SqlStore`], [`SqlDatabase`] (what a database brings: its [`Dialect`]) and
//!   [`Statements`];
//! - `schema.rs`: the tables, their migrations, and the code that applies them on open;
//! - `keeper.rs`: [`SqlRows`], runs and turn leases as rows; `logs.rs`: threads' records and
//!   journals' steps as rows.

mod keeper;
mod logs;
mod schema;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use sqlx::{
    ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Transaction, Type,
};

use super::backend::{Front, KeyValueStore};
use super::{JournalError, StoreError, StoredStep, DEFAULT_MAX_CHECKPOINT_BYTES};
pub use keeper::SqlRows;
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
    /// Whether a change that adds a record is one statement (`RUN_SWAP_APPEND`: data-modifying
    /// `WITH`).
    pub(crate) swap_append_in_one: bool,
    /// The statement that opens a write transaction.
    pub(crate) begin: &'static str,
    /// Takes a named lock for the transaction (`$1` the name, `$2` a seed), if the database
    /// locks by name; without it `begin` holds the database's one write lock.
    pub(crate) lock: Option<&'static str>,
    /// Takes a lock by number (`$1`) for the transaction, if the database locks by name.
    pub(crate) lock_key: Option<&'static str>,
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
        store: &SqlRows<Self>,
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
/// say how each opens and what it guarantees. Every rule is the key-value front's, over
/// the rows of [`SqlRows`].
pub struct SqlStore<DB: SqlDatabase>(KeyValueStore<SqlRows<DB>>);

impl<DB: SqlDatabase> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        SqlStore(self.0.clone())
    }
}

impl<DB: SqlDatabase> std::fmt::Debug for SqlStore<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SqlStore").field(self.0.backend()).finish()
    }
}

impl<DB: SqlDatabase> SqlStore<DB> {
    /// A store over `pool` (migrated), with `leases` for its leases.
    pub(crate) fn new(pool: Pool<DB>, leases: Pool<DB>, shown: &str, extra: DB::Extra) -> Self {
        SqlStore(KeyValueStore::over(SqlRows {
            pool,
            leases,
            sql: Statements::of::<DB>(),
            limit: DEFAULT_MAX_CHECKPOINT_BYTES,
            shown: shown.into(),
            skew_ms: 0,
            extra,
        }))
    }

    /// The same store, refusing checkpoints (and threads' records and journal steps) over
    /// `limit` bytes, written or read ([`StoreError::TooLarge`]); the default is
    /// [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn max_checkpoint_bytes(self, limit: u64) -> Self {
        let rows = self.0.backend().with_limit(limit);
        SqlStore(KeyValueStore::over(rows).max_checkpoint_bytes(limit))
    }

    /// The same store, its rules measuring time on the database's clock: this machine's,
    /// corrected by `skew_ms`.
    #[cfg(any(feature = "postgres", test))]
    pub(crate) fn with_skew(self, skew_ms: i64) -> Self {
        let rows = SqlRows {
            skew_ms,
            ..self.rows().clone()
        };
        let max = self.0.max_bytes();
        SqlStore(KeyValueStore::over(rows).max_checkpoint_bytes(max))
    }

    /// The store's rows.
    pub(crate) fn rows(&self) -> &SqlRows<DB> {
        self.0.backend()
    }

    /// The store's connections (the memory store shares them: `memory_items`).
    pub(crate) fn pool(&self) -> &Pool<DB> {
        &self.rows().pool
    }
}

impl<DB: SqlDatabase> Front for SqlStore<DB>
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
    type Keep = SqlRows<DB>;

    #[inline]
    fn front(&self) -> &KeyValueStore<SqlRows<DB>> {
        &self.0
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

/// A count or position as the SQL stores bind it (saturating).
pub(crate) fn int(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

/// Every statement of the SQL stores' rows, with a dialect filled in (serialised, a map of
/// names to statements: what the tests prepare on each database).
#[derive(Debug, serde::Serialize)]
pub(crate) struct Statements {
    pub run_rows: String,
    pub run_head: String,
    pub run_bytes: String,
    pub run_head_locked: String,
    /// The swaps of a head, each by the columns it writes ([`keeper::swap_sql`]).
    pub head_claim: Vec<String>,
    pub head_held: Vec<String>,
    /// A held head's change and the record it adds in one statement, where the dialect runs
    /// one.
    pub head_held_append: Option<Vec<String>>,
    /// A change that adds a record in one statement, where the dialect runs one.
    pub run_swap_append: Option<String>,
    pub heads_waiting: String,
    pub heads_claimable: String,
    pub heads_claim: Vec<String>,
    pub heads_finished: String,
    pub heads_all: String,
    pub run_update: String,
    pub run_insert: String,
    pub run_delete: String,
    pub lease_read: String,
    pub leases_all: String,
    pub lease_write: String,
    pub lease_delete: String,
    pub thread_version: String,
    pub thread_last: String,
    pub thread_window: String,
    pub thread_insert: String,
    pub thread_delete: String,
    pub thread_logs: String,
    pub journal_len: String,
    pub journal_insert: String,
    pub journal_window: String,
    pub journal_truncate: String,
    pub journal_delete: String,
    pub journal_logs: String,
}

impl Statements {
    /// The statements of `DB`, made once a process.
    fn of<DB: SqlDatabase>() -> Arc<Statements> {
        use std::any::TypeId;
        use std::collections::HashMap;
        use std::sync::{Mutex, OnceLock};
        static MADE: OnceLock<Mutex<HashMap<TypeId, Arc<Statements>>>> = OnceLock::new();
        let made = MADE.get_or_init(Mutex::default).lock();
        let mut made = made.unwrap_or_else(|poisoned| poisoned.into_inner());
        let statements = made.entry(TypeId::of::<DB>());
        Arc::clone(statements.or_insert_with(|| Arc::new(Statements::new(&DB::DIALECT))))
    }

    /// The statements of `dialect`.
    pub fn new(dialect: &Dialect) -> Self {
        use keeper::*;
        use logs::*;
        let f = |s: &str| dialect.fill(s);
        let swaps = |s: &str| (0..SETS).map(|n| f(&swap_sql(s, n))).collect();
        Statements {
            run_rows: f(RUN_ROWS),
            run_head: f(RUN_HEAD),
            run_bytes: f(RUN_BYTES),
            run_head_locked: f(RUN_HEAD_LOCKED),
            head_claim: swaps(HEAD_CLAIM),
            head_held: swaps(HEAD_HELD),
            head_held_append: dialect.swap_append_in_one.then(|| swaps(HEAD_HELD_APPEND)),
            run_swap_append: dialect.swap_append_in_one.then(|| f(RUN_SWAP_APPEND)),
            heads_waiting: f(HEADS_WAITING),
            heads_claimable: f(HEADS_CLAIMABLE),
            heads_claim: swaps(HEADS_CLAIM),
            heads_finished: f(HEADS_FINISHED),
            heads_all: f(HEADS_ALL),
            run_update: f(RUN_UPDATE),
            run_insert: f(RUN_INSERT),
            run_delete: f(RUN_DELETE),
            lease_read: f(LEASE_READ),
            leases_all: f(LEASES_ALL),
            lease_write: f(LEASE_WRITE),
            lease_delete: f(LEASE_DELETE),
            thread_version: f(THREAD_VERSION),
            thread_last: f(THREAD_LAST),
            thread_window: f(THREAD_WINDOW),
            thread_insert: f(THREAD_INSERT),
            thread_delete: f(THREAD_DELETE),
            thread_logs: f(THREAD_LOGS),
            journal_len: f(JOURNAL_LEN),
            journal_insert: f(JOURNAL_INSERT),
            journal_window: f(JOURNAL_WINDOW),
            journal_truncate: f(JOURNAL_TRUNCATE),
            journal_delete: f(JOURNAL_DELETE),
            journal_logs: f(JOURNAL_LOGS),
        }
    }
}
