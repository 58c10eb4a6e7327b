//! [`SqliteMemoryStore`]: memory items in a SQLite database, searched with FTS5 (feature
//! `sqlite`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::Sqlite;

use super::sql::SqlMemoryStore;
use super::{database, MemoryError};

/// Memory items in a SQLite database: the embedded default. Full text search is FTS5's (BM25
/// ranking, the `unicode61` tokenizer), vectors are kept in the item's row and compared
/// exactly. It can share the database (and the connections) of a
/// [`SqliteStore`](crate::store::SqliteStore) ([`SqliteMemoryStore::beside`]) or open a file
/// of its own. Its tables are created when it opens, and a memory schema written by a newer
/// build is refused ([`MemoryError::Schema`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agentweave_runtime::store::memory_items::MemoryError> {
/// use agentweave_runtime::store::memory_items::{Memory, SqliteMemoryStore};
/// # let dir = std::env::temp_dir().join(format!("agentflow-memdoc-{}", std::process::id()));
/// let memory = Memory::new(SqliteMemoryStore::open(dir.join("memory.db")).await?);
/// # let _ = memory;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
pub type SqliteMemoryStore = SqlMemoryStore<Sqlite>;

impl SqliteMemoryStore {
    /// Opens (or creates, with its directory) the database at `path` and its memory tables.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| MemoryError::Database {
                operation: "create the database's directory",
                source: Arc::new(e),
            })?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(connect)
            .await
            .map_err(database("open the database"))?;
        Self::on_pool(pool).await
    }
}
