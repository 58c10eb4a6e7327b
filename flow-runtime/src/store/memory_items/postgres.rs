//! [`PostgresMemoryStore`]: memory items in PostgreSQL, searched with a `tsvector` column
//! and its GIN index (feature `postgres`).

use sqlx::postgres::{PgPool, PgPoolOptions};

use super::sql::{self, sql_memory_store};
use super::text::tsquery;
use super::{database, Hit, MemoryError, Namespace, Partition};

/// The memory schema version this build writes.
const SCHEMA_VERSION: i64 = 1;

/// The advisory lock under which the memory tables are created (`agmemory` in ASCII).
const MIGRATION_LOCK: i64 = 0x6167_6d65_6d6f_7279;

/// The schema. The namespace sorts by bytes (`COLLATE "C"`), so a prefix is a range of the
/// key whatever the database's locale; the text is indexed with the `simple` configuration
/// (lowercased words, no stemming: the same words SQLite's FTS5 indexes).
const SCHEMA: &[&str] = &[
    r#"CREATE TABLE IF NOT EXISTS agentflow_memory_items (
        tenant TEXT NOT NULL,
        scope TEXT NOT NULL,
        namespace TEXT COLLATE "C" NOT NULL,
        key TEXT COLLATE "C" NOT NULL,
        value TEXT NOT NULL,
        text TEXT,
        embedding BYTEA,
        created_ms BIGINT NOT NULL,
        updated_ms BIGINT NOT NULL,
        expires_ms BIGINT,
        version BIGINT NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(text, ''))) STORED,
        PRIMARY KEY (tenant, scope, namespace, key)
    )"#,
    "CREATE INDEX IF NOT EXISTS agentflow_memory_tsv ON agentflow_memory_items USING GIN (tsv)",
    "CREATE INDEX IF NOT EXISTS agentflow_memory_expiry
        ON agentflow_memory_items (expires_ms) WHERE expires_ms IS NOT NULL",
];

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
#[derive(Debug, Clone)]
pub struct PostgresMemoryStore {
    pool: PgPool,
}

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

    /// The memory tables in the database of `store`, on its connections.
    pub async fn beside(store: &crate::store::PostgresStore) -> Result<Self, MemoryError> {
        Self::on_pool(store.pool().clone()).await
    }

    /// The bytes the memory items take in the database (the table, its indexes and TOAST:
    /// `pg_total_relation_size`), every tenant's together.
    pub async fn size_bytes(&self) -> Result<u64, MemoryError> {
        let bytes: i64 =
            sqlx::query_scalar("SELECT pg_total_relation_size('agentflow_memory_items')")
                .fetch_one(&self.pool)
                .await
                .map_err(database("measure the memory tables"))?;
        Ok(bytes.max(0) as u64)
    }

    async fn on_pool(pool: PgPool) -> Result<Self, MemoryError> {
        migrate(&pool).await?;
        Ok(PostgresMemoryStore { pool })
    }

    async fn search_text_in(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
        terms: &[String],
        limit: Option<usize>,
    ) -> Result<Vec<Hit>, MemoryError> {
        let statement = format!(
            "SELECT {}, ts_rank(m.tsv, q) AS rank \
             FROM agentflow_memory_items m, to_tsquery('simple', $1) q \
             WHERE m.tsv @@ q AND m.tenant = $2 AND m.scope = $3 \
             AND (m.expires_ms IS NULL OR m.expires_ms > $4){} \
             ORDER BY rank DESC, m.namespace, m.key LIMIT {}",
            sql::COLUMNS,
            if prefix.is_some() {
                sql::prefix_condition(5)
            } else {
                String::new()
            },
            if prefix.is_some() { "$8" } else { "$5" },
        );
        let mut query = sqlx::query(&statement)
            .bind(tsquery(terms))
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
                let rank: f32 = row.try_get(8).map_err(database("read a rank"))?;
                Ok(Hit { item, score: rank })
            })
            .collect()
    }
}

/// Creates the memory tables in one transaction, under an advisory lock, unless a newer
/// build made them.
async fn migrate(pool: &PgPool) -> Result<(), MemoryError> {
    let err = database("create the memory tables");
    let mut tx = pool.begin().await.map_err(&err)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(&err)?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS agentflow_memory_schema (
            id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)",
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
    sqlx::query(
        "INSERT INTO agentflow_memory_schema (id, version) VALUES (1, $1) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(SCHEMA_VERSION)
    .execute(&mut *tx)
    .await
    .map_err(&err)?;
    tx.commit().await.map_err(&err)
}

sql_memory_store!(PostgresMemoryStore);
