//! [`PostgresStore`]: one store shared by workers on many machines (feature `postgres`).

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, Postgres};

use super::memory::lost;
use super::records::{check_size, Record};
use super::sql::{sql_checkpoint_store, sql_journal_store, sql_thread_store, Backend, Statements};
use super::{
    from_millis, validate_id, CheckpointMeta, CheckpointStore, Claim, Completion,
    PendingCheckpoint, SaveMode, StoreError, DEFAULT_MAX_CHECKPOINT_BYTES,
};
use super::{
    thread::{check_version, validate_thread_id},
    ThreadError, ThreadHead, ThreadRecord, ThreadStore,
};

/// The server's clock in milliseconds since the Unix epoch: every worker's leases are measured
/// on one clock, whatever the workers' own clocks say.
const NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// How errors name the database (never its URL, which may hold a password).
const DATABASE: &str = "the PostgreSQL database";

/// The advisory lock key under which the schema is migrated (`agentweave` in ASCII, folded).
const MIGRATION_LOCK: i64 = 0x6167_656e_7466_6c6f;

/// Checkpoints in a PostgreSQL database: for many workers, on many machines, sharing one
/// store.
///
/// A claim is a single `UPDATE` of the run's head row: PostgreSQL's row lock makes exactly one
/// of any number of concurrent claimants match it. Leases are measured on the server's clock.
/// Appending a record (a save, a completion) runs in a transaction holding a transaction-level
/// advisory lock on the checkpoint id (a completion in one statement: one round trip). A
/// worker claims batches with one `UPDATE` whose rows are picked `FOR UPDATE SKIP LOCKED`
/// ([`CheckpointStore::claim_pending`]): concurrent workers take disjoint batches without
/// waiting for each other. The schema is created or migrated when the store opens
/// (under an advisory lock, so many workers starting at once migrate it once), and a database
/// migrated by a newer build is refused ([`StoreError::Schema`]).
///
/// ```no_run
/// # async fn demo() -> Result<(), agentweave_runtime::StoreError> {
/// use agentweave_runtime::store::PostgresStore;
/// let store = PostgresStore::connect("postgres://agentflow@localhost/agentflow").await?;
/// # let _ = store;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    sql: Arc<Statements>,
    max_bytes: u64,
}

/// How a [`PostgresStore`] connects.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// Connections in the pool (default 8).
    pub max_connections: u32,
    /// How long to wait for a connection (default 30 s).
    pub acquire_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(30),
        }
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`, or
    /// `postgres:///database?host=/run/postgresql` for a Unix socket), and creates or
    /// migrates its schema.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Like [`connect`](PostgresStore::connect), with options.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let connect: PgConnectOptions = url.parse().map_err(|e| database("parse the URL of", e))?;
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| database("connect to", e))?;
        migrate(&pool).await?;
        Ok(PostgresStore {
            pool,
            sql: Arc::new(Statements::with_clock(NOW).for_postgres(NOW)),
            max_bytes: DEFAULT_MAX_CHECKPOINT_BYTES,
        })
    }

    /// The same store, refusing checkpoints over `limit` bytes ([`StoreError::TooLarge`]);
    /// the default is [`DEFAULT_MAX_CHECKPOINT_BYTES`].
    pub fn max_checkpoint_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = limit;
        self
    }

    /// The store's connections (the memory store shares them: `memory_items`).
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// How errors name the database.
    fn shown(&self) -> String {
        DATABASE.to_owned()
    }

    /// Where claims and leases are written: the pool (every commit is durable).
    fn lease_pool(&self) -> &sqlx::PgPool {
        &self.pool
    }

    /// Appends to a journal in a transaction of its own (every commit is durable).
    async fn append_journal_unsynced(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<super::StoredStep>,
    ) -> Result<u64, super::JournalError> {
        self.append_in_tx(run, expected, steps).await
    }

    /// Appends to a journal in a transaction of its own.
    async fn append_journal(
        &self,
        run: &str,
        expected: u64,
        steps: Vec<super::StoredStep>,
    ) -> Result<u64, super::JournalError> {
        self.append_in_tx(run, expected, steps).await
    }

    /// A transaction holding the advisory lock of run `id`.
    async fn begin(&self, id: &str) -> Result<sqlx::Transaction<'static, Postgres>, StoreError> {
        let err = Self::db_error("lock", id);
        let mut tx = self.pool.begin().await.map_err(&err)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        Ok(tx)
    }
}

fn database(operation: &'static str, e: sqlx::Error) -> StoreError {
    StoreError::Database {
        operation,
        id: DATABASE.to_owned(),
        source: Arc::new(e),
    }
}

/// Creates or migrates the schema in one transaction, under an advisory lock.
async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let err = |e| database("migrate", e);
    let mut tx = pool.begin().await.map_err(err)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
    PostgresStore::migrate_in(&mut tx, Backend::Postgres, DATABASE).await?;
    tx.commit().await.map_err(err)
}

sql_checkpoint_store!(PostgresStore, Postgres);
sql_thread_store!(PostgresStore, sqlx::postgres::PgRow);
sql_journal_store!(PostgresStore, sqlx::postgres::PgRow);
