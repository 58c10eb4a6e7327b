//! [`PostgresStore`]: one store shared by workers on many machines (feature `postgres`).

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgQueryResult, Postgres};

use super::sql::{sealed::Sealed, Dialect, SqlDatabase, SqlRows, SqlStore};
use super::{JournalError, StoreError, StoredStep};

/// The server's clock in milliseconds since the Unix epoch: every worker's leases are measured
/// on one clock, whatever the workers' own clocks say.
const NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// How errors name the database (never its URL, which may hold a password).
const DATABASE: &str = "the PostgreSQL database";

/// Checkpoints in a PostgreSQL database: for many workers, on many machines, sharing one
/// store.
///
/// Every rule is the key-value front's ([`SqlStore`]): a claim is one `UPDATE ... RETURNING`
/// of the run's head on the values the front's claim rule decides, which only a claimable
/// head matches (the row lock makes concurrent claimants wait, then see the claim), so of
/// any number of concurrent claimants exactly one wins; a renewal, a release or a completion
/// changes the head only while the claim still holds it (a completion in one statement with
/// the insert of its child); a save is a read of the head and one statement that swaps it
/// only if it is still as read. Claims and leases are measured on the server's
/// clock (this machine's, corrected by the difference measured when the store connects), so
/// workers whose clocks differ agree on when a lease runs out. A worker's batch claim
/// ([`CheckpointStore::claim_pending`](super::CheckpointStore::claim_pending)) lists the
/// oldest claimable heads through their index and claims them in one statement; rows
/// another worker's batch is claiming are passed over (`SKIP LOCKED`), so concurrent
/// workers get disjoint batches. The schema is created or migrated when the store opens
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
pub type PostgresStore = SqlStore<Postgres>;

impl Sealed for Postgres {}

impl SqlDatabase for Postgres {
    const DIALECT: Dialect = Dialect {
        now: NOW,
        skip_locked: "FOR UPDATE SKIP LOCKED",
        int: "BIGINT",
        blob: "BYTEA",
        for_update: "FOR UPDATE",
        begin: "BEGIN",
        swap_append_in_one: true,
        lock: Some("SELECT pg_advisory_xact_lock(hashtextextended($1, $2))"),
        lock_key: Some("SELECT pg_advisory_xact_lock($1)"),
        queue_seq: "seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        queue_columns: "SELECT column_name::text AS name FROM information_schema.columns \
            WHERE table_name = 'agentflow_run_queue' AND table_schema = current_schema()",
        json_texts: "SELECT jsonb_array_elements_text($3::text::jsonb)",
        memory: &super::memory_items::sql::POSTGRES,
    };
    type Extra = ();

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    async fn append_journal(
        store: &SqlRows<Postgres>,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
        _synced: bool,
    ) -> Result<u64, JournalError> {
        // Every commit is durable: an unsynced append is a synced one.
        store.append_in_tx(run, expected, steps).await
    }
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
        super::sql::migrate(&pool, DATABASE).await?;
        let store = SqlStore::new(pool.clone(), pool, DATABASE, ());
        // Claims and leases are measured on the server's clock, whatever this machine's says.
        let skew = store.rows().clock_skew().await?;
        Ok(store.with_skew(skew))
    }
}

fn database(operation: &'static str, e: sqlx::Error) -> StoreError {
    StoreError::Database {
        operation,
        id: DATABASE.to_owned(),
        source: Arc::new(e),
    }
}
