//! [`PostgresMemoryStore`]: memory items in PostgreSQL, searched with a `tsvector` column
//! and its GIN index (feature `postgres`).

use sqlx::postgres::{PgPoolOptions, Postgres};

use super::sql::SqlMemoryStore;
use super::{database, MemoryError};

/// Memory items in a PostgreSQL database, for services of many workers. Full text search is
/// PostgreSQL's (`ts_rank` over a stored `tsvector` with a GIN index), vectors are kept in the
/// item's row (`BYTEA`) and compared exactly. It can share the connections of a
/// [`PostgresStore`](crate::store::PostgresStore) ([`PostgresMemoryStore::beside`]). Its
/// tables are created when it opens (under an advisory lock), and a memory schema written by a
/// newer build is refused ([`MemoryError::Schema`]).
///
/// ```no_run
/// # async fn demo() -> Result<(), agentweave_runtime::store::memory_items::MemoryError> {
/// use agentweave_runtime::store::memory_items::{Memory, PostgresMemoryStore};
/// let store = PostgresMemoryStore::connect("postgres://agentflow@localhost/agentflow").await?;
/// let memory = Memory::new(store);
/// # let _ = memory;
/// # Ok(())
/// # }
/// ```
pub type PostgresMemoryStore = SqlMemoryStore<Postgres>;

impl PostgresMemoryStore {
    /// Connects to the database at `url` (as [`PostgresStore::connect`](
    /// crate::store::PostgresStore::connect) does) and creates the memory tables.
    pub async fn connect(url: &str) -> Result<Self, MemoryError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect(url)
            .await
            .map_err(database("connect to the PostgreSQL database"))?;
        Self::on_pool(pool).await
    }
}
