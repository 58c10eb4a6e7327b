//! [`SqliteMemoryStore`]: memory items in a SQLite database, searched with FTS5 (feature
//! `sqlite`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::sql::{self, sql_memory_store};
use super::text::fts5_query;
use super::{database, Hit, MemoryError, Namespace, Partition};

/// The memory schema version this build writes.
const SCHEMA_VERSION: i64 = 1;

/// The schema: the items, an FTS5 index of their texts kept by triggers (external content:
/// the text is stored once, in the items table).
const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS agentflow_memory_items (
        id INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        scope TEXT NOT NULL,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        text TEXT,
        embedding BLOB,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        expires_ms INTEGER,
        version INTEGER NOT NULL,
        UNIQUE (tenant, scope, namespace, key)
    )",
    "CREATE INDEX IF NOT EXISTS agentflow_memory_expiry
        ON agentflow_memory_items (expires_ms) WHERE expires_ms IS NOT NULL",
    "CREATE VIRTUAL TABLE IF NOT EXISTS agentflow_memory_fts USING fts5(
        text, content = 'agentflow_memory_items', content_rowid = 'id')",
    "CREATE TRIGGER IF NOT EXISTS agentflow_memory_fts_insert
        AFTER INSERT ON agentflow_memory_items BEGIN
        INSERT INTO agentflow_memory_fts (rowid, text)
            SELECT new.id, new.text WHERE new.text IS NOT NULL;
     END",
    "CREATE TRIGGER IF NOT EXISTS agentflow_memory_fts_delete
        AFTER DELETE ON agentflow_memory_items BEGIN
        INSERT INTO agentflow_memory_fts (agentflow_memory_fts, rowid, text)
            SELECT 'delete', old.id, old.text WHERE old.text IS NOT NULL;
     END",
    "CREATE TRIGGER IF NOT EXISTS agentflow_memory_fts_update
        AFTER UPDATE ON agentflow_memory_items BEGIN
        INSERT INTO agentflow_memory_fts (agentflow_memory_fts, rowid, text)
            SELECT 'delete', old.id, old.text WHERE old.text IS NOT NULL;
        INSERT INTO agentflow_memory_fts (rowid, text)
            SELECT new.id, new.text WHERE new.text IS NOT NULL;
     END",
];

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
#[derive(Debug, Clone)]
pub struct SqliteMemoryStore {
    pool: SqlitePool,
}

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

    /// The memory tables in the database of `store`, on its connections.
    pub async fn beside(store: &crate::store::SqliteStore) -> Result<Self, MemoryError> {
        Self::on_pool(store.pool().clone()).await
    }

    /// The bytes the memory tables take in the database (items, their indexes and the FTS5
    /// index; SQLite's `dbstat`), every tenant's together.
    pub async fn size_bytes(&self) -> Result<u64, MemoryError> {
        let bytes: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE 'agentflow_memory%' \
             OR name LIKE 'sqlite_autoindex_agentflow_memory%'",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(database("measure the memory tables"))?;
        Ok(bytes.max(0) as u64)
    }

    async fn on_pool(pool: SqlitePool) -> Result<Self, MemoryError> {
        migrate(&pool).await?;
        Ok(SqliteMemoryStore { pool })
    }

    async fn search_text_in(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
        terms: &[String],
        limit: Option<usize>,
    ) -> Result<Vec<Hit>, MemoryError> {
        let statement = format!(
            "SELECT {}, bm25(agentflow_memory_fts) AS rank FROM agentflow_memory_fts \
             JOIN agentflow_memory_items m ON m.id = agentflow_memory_fts.rowid \
             WHERE agentflow_memory_fts MATCH $1 AND m.tenant = $2 AND m.scope = $3 \
             AND (m.expires_ms IS NULL OR m.expires_ms > $4){} \
             ORDER BY rank, m.namespace, m.key LIMIT {}",
            sql::COLUMNS,
            if prefix.is_some() {
                sql::prefix_condition(5)
            } else {
                String::new()
            },
            if prefix.is_some() { "$8" } else { "$5" },
        );
        let mut query = sqlx::query(&statement)
            .bind(fts5_query(terms))
            .bind(at.tenant.as_str())
            .bind(at.scope.encode())
            .bind(sql::now_ms());
        if let Some(prefix) = prefix {
            let (p, low, high) = sql::bounds(prefix);
            query = query.bind(p).bind(low).bind(high);
        }
        let limit = limit.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = query
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(database("search items"))?;
        rows.iter()
            .map(|row| {
                use sqlx::Row;
                let item = sql::read_item!(row)?;
                let rank: f64 = row.try_get(8).map_err(database("read a rank"))?;
                Ok(Hit {
                    item,
                    score: -rank as f32,
                })
            })
            .collect()
    }
}

/// Creates the memory tables, in one transaction, unless a newer build made them.
async fn migrate(pool: &SqlitePool) -> Result<(), MemoryError> {
    let err = database("create the memory tables");
    let mut tx = pool.begin().await.map_err(&err)?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS agentflow_memory_schema (
            id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
    )
    .execute(&mut *tx)
    .await
    .map_err(&err)?;
    let found: Option<i64> =
        sqlx::query_scalar("SELECT version FROM agentflow_memory_schema WHERE id = 1")
            .fetch_optional(&mut *tx)
            .await
            .map_err(&err)?;
    if let Some(found) = found.filter(|v| *v > SCHEMA_VERSION) {
        return Err(MemoryError::Schema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for statement in SCHEMA {
        sqlx::query(statement)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
    }
    sqlx::query("INSERT INTO agentflow_memory_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO NOTHING")
        .bind(SCHEMA_VERSION)
        .execute(&mut *tx)
        .await
        .map_err(&err)?;
    tx.commit().await.map_err(&err)
}

sql_memory_store!(SqliteMemoryStore);
