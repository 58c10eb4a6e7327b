//! [`SqliteRunQueue`]: the run queue in a SQLite database file (feature `sqlite`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::Sqlite;

use super::sql::{db, SqlRunQueue};
use super::QueueError;

/// The run queue in a SQLite database (usually the [`SqliteStore`](crate::store::SqliteStore)'s
/// file: `SqliteRunQueue::open(store.path())`), shared safely by the processes of one machine.
///
/// Every change runs in a `BEGIN IMMEDIATE` transaction, which holds the database's single
/// write lock: a claim is one `UPDATE ... RETURNING` in it, so of any number of processes
/// claiming, each run goes to exactly one; an enqueue within a
/// [`QueueCap`](crate::store::QueueCap) counts and inserts in one. The table is created, if missing, when the queue
/// opens.
pub type SqliteRunQueue = SqlRunQueue<Sqlite>;

impl SqliteRunQueue {
    /// Opens (or creates) the queue in the database at `path` (WAL mode, `synchronous=FULL`,
    /// a 30 s busy timeout), and creates its table if missing.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, QueueError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| QueueError::Io {
                operation: "create the directory of its database",
                source: Arc::new(e),
            })?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(connect)
            .await
            .map_err(db("open its database"))?;
        Self::on_pool(pool).await
    }
}
