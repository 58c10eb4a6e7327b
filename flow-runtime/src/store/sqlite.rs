//! [`SqliteStore`]: the durable embedded store, one SQLite database file (feature `sqlite`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};
use sqlx::Sqlite;

#[path = "sqlite_journal.rs"]
mod group_commit;

use super::sql::{sealed::Sealed, Dialect, SqlDatabase, SqlRows, SqlStore};
use super::{JournalError, StoreError, StoredStep};

/// The database file [`SqliteStore::open_default`] uses when `AGENTFLOW_DB` is not set.
pub const DEFAULT_SQLITE_PATH: &str = ".agentflow/agentflow.db";

/// The SQLite clock in milliseconds since the Unix epoch.
const NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";

/// The durable embedded default: checkpoints in one SQLite database file, shared safely by the
/// processes of one machine (it is not for network file systems: use
/// [`PostgresStore`](super::PostgresStore) for workers on several machines).
///
/// The database runs in WAL mode (readers do not block the writer) with `synchronous=FULL`
/// (a commit is on disk when it returns; journal appends that wait at the same time share one
/// commit) and waits up to the busy timeout for another
/// process's write (opening, too: processes that open one new file at the same moment each
/// wait for the one that switches it to WAL and creates the schema). Every rule is the
/// key-value front's ([`SqlStore`]). A claim is one `UPDATE ... RETURNING` of the run's head
/// on the values the front's claim rule decides, which only a claimable head matches, so of
/// any number of processes claiming one checkpoint exactly one wins; a renewal, a release or
/// a completion changes the head only while the claim still holds it (a completion in a
/// `BEGIN IMMEDIATE` transaction with the insert of its child), and a save runs in a
/// `BEGIN IMMEDIATE` transaction, which holds the file's one write lock from its read of the
/// run's head to its commit. The schema is created or migrated when the store opens, and a database
/// written by a newer build is refused ([`StoreError::Schema`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentweave_runtime::StoreError> {
/// use agentweave_runtime::store::{CheckpointStore, SaveMode, SqliteStore};
/// # let dir = std::env::temp_dir().join(format!("agentflow-doc-{}", std::process::id()));
/// let store = SqliteStore::open(dir.join("checkpoints.db")).await?;
/// store.save("order-7", b"...".to_vec(), SaveMode::Create).await?;
/// assert_eq!(store.history("order-7").await?.len(), 1);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
pub type SqliteStore = SqlStore<Sqlite>;

/// What a [`SqliteStore`] keeps beside its pools.
#[derive(Debug, Clone)]
pub struct SqliteFile {
    path: Arc<PathBuf>,
    /// The journal's group writer, shared by the store's clones (`sqlite_journal.rs`).
    group: Arc<group_commit::GroupCommit>,
}

impl Sealed for Sqlite {}

impl SqlDatabase for Sqlite {
    const DIALECT: Dialect = Dialect {
        now: NOW,
        skip_locked: "",
        int: "INTEGER",
        blob: "BLOB",
        for_update: "",
        begin: "BEGIN IMMEDIATE",
        swap_append_in_one: false,
        lock: None,
        lock_key: None,
        queue_seq: "seq INTEGER PRIMARY KEY AUTOINCREMENT",
        queue_columns: "SELECT name FROM pragma_table_info('agentflow_run_queue')",
        json_texts: "SELECT value FROM json_each($3)",
        memory: &super::memory_items::sql::SQLITE,
    };
    type Extra = SqliteFile;

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    async fn append_journal(
        store: &SqlRows<Sqlite>,
        run: &str,
        expected: u64,
        steps: Vec<StoredStep>,
        synced: bool,
    ) -> Result<u64, JournalError> {
        match synced {
            true => store.append_grouped(run, expected, steps).await,
            false => store.append_unsynced(run, expected, steps).await,
        }
    }
}

impl SqliteStore {
    /// Opens (or creates, with its directory) the database at `path`, and creates or migrates
    /// its schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// Like [`open`](SqliteStore::open), with options.
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let shown = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Io {
                operation: "create the directory of",
                id: shown.clone(),
                source: Arc::new(e),
            })?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(options.busy_timeout)
            .foreign_keys(true);
        // Processes that open one new file at the same moment race to switch it to WAL and
        // create the schema; SQLite refuses some of those steps at once with "database is
        // locked" instead of waiting for the busy timeout, so opening retries them until then.
        let deadline = Instant::now() + options.busy_timeout;
        let mut pause = Duration::from_millis(1);
        let pool = loop {
            match connect_and_migrate(&connect, options.max_connections, &shown).await {
                Ok(pool) => break pool,
                Err(e) if is_busy(&e) && Instant::now() + pause < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        };
        // Claims of checkpoints, their renewals and releases, and threads' turn leases commit
        // on one or two connections that do not sync (`synchronous=NORMAL` in WAL mode),
        // opened when first used (the file is in WAL mode by now, with its schema). Each
        // reaches the disk with the next synced commit of the file (the WAL is written in
        // order), and other connections see it at once. A power loss can thus forget a lease
        // taken since the last synced commit, never a record; every worker that could hold it
        // died with the machine, so a forgotten lease only lets the run be claimed again, as a
        // lease that ran out does. A checkpoint round trip pays two syncs, not three.
        let leases = SqlitePoolOptions::new()
            .max_connections(options.max_connections.clamp(1, 2))
            .connect_lazy_with(connect.clone().synchronous(SqliteSynchronous::Normal));
        let extra = SqliteFile {
            path: Arc::new(path),
            group: Arc::default(),
        };
        Ok(SqlStore::new(pool, leases, &shown, extra))
    }

    /// The store in `$AGENTFLOW_DB`, or in [`DEFAULT_SQLITE_PATH`] under the current
    /// directory.
    pub async fn open_default() -> Result<Self, StoreError> {
        match std::env::var_os("AGENTFLOW_DB") {
            Some(path) => Self::open(path).await,
            None => Self::open(DEFAULT_SQLITE_PATH).await,
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.rows().extra.path
    }
}

/// How a [`SqliteStore`] connects.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// How long a write waits for another connection's (default 30 s).
    pub busy_timeout: Duration,
    /// Connections in the pool (default 4).
    pub max_connections: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            busy_timeout: Duration::from_secs(30),
            max_connections: 4,
        }
    }
}

/// A pool on the database of `connect`, with its schema created or migrated (in one write
/// transaction, so two processes opening a new database at once migrate it once).
async fn connect_and_migrate(
    connect: &SqliteConnectOptions,
    max_connections: u32,
    shown: &str,
) -> Result<SqlitePool, StoreError> {
    let pool = SqlitePoolOptions::new()
        .max_connections(max_connections)
        .connect_with(connect.clone())
        .await
        .map_err(|e| StoreError::Database {
            operation: "open",
            id: shown.to_owned(),
            source: Arc::new(e),
        })?;
    match super::sql::migrate(&pool, shown).await {
        Ok(()) => Ok(pool),
        Err(e) => {
            pool.close().await;
            Err(e)
        }
    }
}

/// Whether `error` is SQLite's "database is locked" or "table is locked" (`SQLITE_BUSY`,
/// `SQLITE_LOCKED` and their extended codes): another connection held the lock.
fn is_busy(error: &StoreError) -> bool {
    let StoreError::Database { source, .. } = error else {
        return false;
    };
    let Some(sqlx::Error::Database(db)) = source.downcast_ref::<sqlx::Error>() else {
        return false;
    };
    db.code()
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| matches!(code & 0xff, 5 | 6))
}
