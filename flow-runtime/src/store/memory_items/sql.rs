//! The SQL memory store, [`SqlMemoryStore<DB>`] ([`SqliteMemoryStore`](super::SqliteMemoryStore)
//! is `SqlMemoryStore<Sqlite>`, [`PostgresMemoryStore`](super::PostgresMemoryStore)
//! `SqlMemoryStore<Postgres>`): its statements (parameters are always bound), written once for
//! both databases, and each database's own: the tables and the full-text search
//! ([`MemoryDialect`]: SQLite's FTS5, PostgreSQL's `tsvector`).
//!
//! One row per item, keyed by `(tenant, scope, namespace, key)`: every statement names the
//! tenant and the scope in its `WHERE` (or its key), so no statement reaches another
//! partition. A namespace prefix is a range of the key (`namespace = $p OR (namespace > 'p/'
//! AND namespace < 'p0')`), never a `LIKE` pattern. Times are milliseconds since the Unix
//! epoch on the caller's clock; an item whose `expires_ms` has passed is absent for every read.

use std::time::SystemTime;

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use super::{database, expiry_ms, Expect, Hit, ItemKey, MemoryError, MemoryItem, MemoryStore};
use super::{Namespace, Partition, PutItem};
use crate::store::sql::{write_tx, Lock, SqlDatabase, SqlStore};
use crate::store::{from_millis, millis};

/// What differs between the databases for memory items.
#[derive(Debug)]
pub(crate) struct MemoryDialect {
    /// The tables, made in this order (`{INT}` a 64-bit integer column).
    pub schema: &'static [&'static str],
    /// What follows the item's columns in a search: a `rank` (the higher the better) and the
    /// tables searched (items as `m`).
    pub search_from: &'static str,
    /// The search's condition on `$1`, the query.
    pub search_match: &'static str,
    /// The query of terms bound as `$1`.
    pub search_terms: fn(&[String]) -> String,
    /// The bytes the memory tables take, as `bytes`.
    pub size: &'static str,
}

/// SQLite's: FTS5 (BM25 ranking, the `unicode61` tokenizer), an external-content index of the
/// items' texts kept by triggers (the text is stored once, in the items table).
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: MemoryDialect = MemoryDialect {
    schema: &[
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
    ],
    search_from: "-bm25(agentflow_memory_fts) AS rank FROM agentflow_memory_fts \
        JOIN agentflow_memory_items m ON m.id = agentflow_memory_fts.rowid",
    search_match: "agentflow_memory_fts MATCH $1",
    search_terms: super::text::fts5_query,
    size: "SELECT COALESCE(SUM(pgsize), 0) AS bytes FROM dbstat \
        WHERE name LIKE 'agentflow_memory%' OR name LIKE 'sqlite_autoindex_agentflow_memory%'",
};

/// PostgreSQL's: a stored `tsvector` with a GIN index, ranked by `ts_rank`. The namespace
/// sorts by bytes (`COLLATE "C"`), so a prefix is a range of the key whatever the database's
/// locale; the text is indexed with the `simple` configuration (lowercased words, no
/// stemming: the words SQLite's FTS5 indexes).
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: MemoryDialect = MemoryDialect {
    schema: &[
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
    ],
    search_from: "ts_rank(m.tsv, q)::float8 AS rank \
        FROM agentflow_memory_items m, to_tsquery('simple', $1) q",
    search_match: "m.tsv @@ q",
    search_terms: super::text::tsquery,
    size: "SELECT pg_total_relation_size('agentflow_memory_items') AS bytes",
};

/// The memory schema version this build writes.
const SCHEMA_VERSION: i64 = 1;

/// The advisory lock under which the memory tables are created (`agmemory` in ASCII).
const MIGRATION_LOCK: i64 = 0x6167_6d65_6d6f_7279;

const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentflow_memory_schema (
    id INTEGER PRIMARY KEY CHECK (id = 1), version {INT} NOT NULL)";

const SCHEMA_READ: &str = "SELECT version FROM agentflow_memory_schema WHERE id = 1";

const SCHEMA_WRITE: &str = "INSERT INTO agentflow_memory_schema (id, version) VALUES (1, $1) \
    ON CONFLICT (id) DO NOTHING";

/// The columns of an item, in the order [`read_item`] reads them.
pub(crate) const COLUMNS: &str =
    "m.namespace, m.key, m.value, m.text, m.created_ms, m.updated_ms, m.expires_ms, m.version";

/// A write that creates the item or replaces it (`{WHERE}`: the condition on the live row).
pub(crate) const UPSERT: &str = "INSERT INTO agentflow_memory_items AS m \
    (tenant, scope, namespace, key, value, text, embedding, created_ms, updated_ms, \
     expires_ms, version) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, 1) \
    ON CONFLICT (tenant, scope, namespace, key) DO UPDATE SET \
    value = excluded.value, text = excluded.text, embedding = excluded.embedding, \
    created_ms = CASE WHEN m.expires_ms IS NOT NULL AND m.expires_ms <= excluded.updated_ms \
                 THEN excluded.created_ms ELSE m.created_ms END, \
    updated_ms = excluded.updated_ms, expires_ms = excluded.expires_ms, \
    version = m.version + 1 {WHERE} RETURNING version";

/// The condition of a write that only creates: the row there has expired.
pub(crate) const ONLY_EXPIRED: &str =
    "WHERE m.expires_ms IS NOT NULL AND m.expires_ms <= excluded.updated_ms";

/// A write that replaces the live item at version `$10`.
pub(crate) const UPDATE_VERSION: &str = "UPDATE agentflow_memory_items SET value = $5, \
    text = $6, embedding = $7, updated_ms = $8, expires_ms = $9, version = version + 1 \
    WHERE tenant = $1 AND scope = $2 AND namespace = $3 AND key = $4 AND version = $10 \
    AND (expires_ms IS NULL OR expires_ms > $8) RETURNING version";

/// The live item at a key (`$5`: now).
pub(crate) fn get() -> String {
    format!(
        "SELECT {COLUMNS} FROM agentflow_memory_items m WHERE m.tenant = $1 AND m.scope = $2 \
         AND m.namespace = $3 AND m.key = $4 AND (m.expires_ms IS NULL OR m.expires_ms > $5)"
    )
}

/// Deletes the live item at a key (`$5`: now; `$6`: the version, when `versioned`).
pub(crate) fn delete(versioned: bool) -> String {
    format!(
        "DELETE FROM agentflow_memory_items WHERE tenant = $1 AND scope = $2 AND namespace = $3 \
         AND key = $4 AND (expires_ms IS NULL OR expires_ms > $5){} RETURNING version",
        if versioned { " AND version = $6" } else { "" }
    )
}

/// The namespace condition of a scan: `$n` the prefix, `$n+1` and `$n+2` the bounds below it.
pub(crate) fn prefix_condition(first: usize) -> String {
    format!(
        " AND (m.namespace = ${first} OR (m.namespace > ${} AND m.namespace < ${}))",
        first + 1,
        first + 2
    )
}

/// The live items of a partition (`$3`: now), under a prefix (`$4..$6`) when `prefixed`: whole
/// items, or only the namespace, key and vector of those with a vector when `vectors`.
pub(crate) fn scan(prefixed: bool, vectors: bool) -> String {
    format!(
        "SELECT {} FROM agentflow_memory_items m WHERE m.tenant = $1 AND m.scope = $2 \
         AND (m.expires_ms IS NULL OR m.expires_ms > $3){}{} ORDER BY m.namespace, m.key",
        if vectors {
            "m.namespace, m.key, m.embedding"
        } else {
            COLUMNS
        },
        if prefixed {
            prefix_condition(4)
        } else {
            String::new()
        },
        if vectors {
            " AND m.embedding IS NOT NULL"
        } else {
            ""
        },
    )
}

/// A full-text search (`$1` the query, `$2` tenant, `$3` scope, `$4` now, then the prefix's
/// three bounds when `prefixed`, then the limit), best first.
pub(crate) fn search(memory: &MemoryDialect, prefixed: bool) -> String {
    format!(
        "SELECT {COLUMNS}, {} WHERE {} AND m.tenant = $2 AND m.scope = $3 \
         AND (m.expires_ms IS NULL OR m.expires_ms > $4){} \
         ORDER BY rank DESC, m.namespace, m.key LIMIT {}",
        memory.search_from,
        memory.search_match,
        if prefixed {
            prefix_condition(5)
        } else {
            String::new()
        },
        if prefixed { "$8" } else { "$5" },
    )
}

/// Deletes the expired items (`$1`: now).
pub(crate) const PURGE: &str =
    "DELETE FROM agentflow_memory_items WHERE expires_ms IS NOT NULL AND expires_ms <= $1";

/// Now, as the SQL stores bind it.
pub(crate) fn now_ms() -> i64 {
    millis(SystemTime::now()).min(i64::MAX as u64) as i64
}

/// The bounds of namespaces below `prefix`, bound after it.
pub(crate) fn bounds(prefix: &Namespace) -> (String, String, String) {
    let (low, high) = prefix.below_bounds();
    (prefix.as_str().to_owned(), low, high)
}

/// Reads the vector of a row read by a `scan(_, true)`.
pub(crate) fn vector(bytes: Vec<u8>) -> Result<Vec<f32>, MemoryError> {
    super::text::vector_from_bytes(&bytes).ok_or_else(|| MemoryError::Corrupt {
        message: format!("a vector of {} bytes, not a multiple of 4", bytes.len()),
    })
}

/// An item from a row whose first columns are [`COLUMNS`].
fn read_item<R: Row>(row: &R) -> Result<MemoryItem, MemoryError>
where
    for<'q> i64: Decode<'q, R::Database> + Type<R::Database>,
    for<'q> String: Decode<'q, R::Database> + Type<R::Database>,
    usize: ColumnIndex<R>,
{
    let err = database("read an item");
    let corrupt = |message: String| MemoryError::Corrupt { message };
    let time = |ms: i64| from_millis(ms.max(0) as u64);
    let (namespace, key): (String, String) =
        (row.try_get(0).map_err(&err)?, row.try_get(1).map_err(&err)?);
    let (value, version): (String, i64) =
        (row.try_get(2).map_err(&err)?, row.try_get(7).map_err(&err)?);
    let expires_ms: Option<i64> = row.try_get(6).map_err(&err)?;
    Ok(MemoryItem {
        namespace: Namespace::from_stored(&namespace)
            .map_err(|e| corrupt(format!("namespace: {e}")))?,
        key: ItemKey::new(key).map_err(|e| corrupt(format!("key: {e}")))?,
        value: serde_json::from_str(&value)
            .map_err(|e| corrupt(format!("a value that is not JSON: {e}")))?,
        text: row.try_get(3).map_err(&err)?,
        created_at: time(row.try_get(4).map_err(&err)?),
        updated_at: time(row.try_get(5).map_err(&err)?),
        expires_at: expires_ms.map(time),
        version: u64::try_from(version).map_err(|_| corrupt(format!("version {version}")))?,
    })
}

/// Memory items in a SQL database: see [`SqliteMemoryStore`](super::SqliteMemoryStore) and
/// [`PostgresMemoryStore`](super::PostgresMemoryStore) for how each opens and searches.
#[derive(Debug)]
pub struct SqlMemoryStore<DB: SqlDatabase> {
    pool: Pool<DB>,
}

impl<DB: SqlDatabase> Clone for SqlMemoryStore<DB> {
    fn clone(&self) -> Self {
        SqlMemoryStore {
            pool: self.pool.clone(),
        }
    }
}

impl<DB: SqlDatabase> SqlMemoryStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q [u8]>: Encode<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'q> f64: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    /// The memory tables in the database of `store`, on its connections.
    pub async fn beside(store: &SqlStore<DB>) -> Result<Self, MemoryError> {
        Self::on_pool(store.pool().clone()).await
    }

    /// The memory tables on `pool`, created (in one transaction holding the creation lock)
    /// unless a newer build made them.
    pub(crate) async fn on_pool(pool: Pool<DB>) -> Result<Self, MemoryError> {
        let err = database("create the memory tables");
        let mut tx = write_tx(&pool, &[Lock::Key(MIGRATION_LOCK)])
            .await
            .map_err(&err)?;
        let dialect = DB::DIALECT;
        let table = dialect.fill(SCHEMA_TABLE);
        sqlx::query(&table).execute(&mut *tx).await.map_err(&err)?;
        let found = sqlx::query(SCHEMA_READ)
            .fetch_optional(&mut *tx)
            .await
            .map_err(&err)?;
        let found: Option<i64> = found
            .map(|row| row.try_get("version"))
            .transpose()
            .map_err(&err)?;
        if let Some(found) = found.filter(|v| *v > SCHEMA_VERSION) {
            return Err(MemoryError::Schema {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for statement in dialect.memory.schema {
            sqlx::query(statement)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
        }
        let write = sqlx::query(SCHEMA_WRITE).bind(SCHEMA_VERSION);
        write.execute(&mut *tx).await.map_err(&err)?;
        tx.commit().await.map_err(&err)?;
        Ok(SqlMemoryStore { pool })
    }

    /// The bytes the memory tables take in the database (SQLite: the items, their indexes
    /// and the FTS5 index, from `dbstat`; PostgreSQL: the table, its indexes and TOAST,
    /// `pg_total_relation_size`), every tenant's together.
    pub async fn size_bytes(&self) -> Result<u64, MemoryError> {
        let size = sqlx::query(DB::DIALECT.memory.size)
            .fetch_one(&self.pool)
            .await;
        let bytes: i64 = size
            .and_then(|row| row.try_get("bytes"))
            .map_err(database("measure the memory tables"))?;
        Ok(bytes.max(0) as u64)
    }

    /// The live items of a partition (under `prefix`): whole, or only namespace, key and
    /// vector when `vectors`.
    async fn scan_rows(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
        vectors: bool,
    ) -> Result<Vec<DB::Row>, sqlx::Error> {
        let statement = scan(prefix.is_some(), vectors);
        let scope = at.scope.encode();
        let bounds = prefix.map(bounds);
        let mut query = sqlx::query(&statement)
            .bind(at.tenant.as_str())
            .bind(&scope[..]);
        query = query.bind(now_ms());
        if let Some((p, low, high)) = &bounds {
            query = query.bind(&p[..]).bind(&low[..]).bind(&high[..]);
        }
        query.fetch_all(&self.pool).await
    }
}

#[async_trait::async_trait]
impl<DB: SqlDatabase> MemoryStore for SqlMemoryStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q [u8]>: Encode<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'q> f64: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn get(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
    ) -> Result<Option<MemoryItem>, MemoryError> {
        let (statement, scope) = (get(), at.scope.encode());
        let get = sqlx::query(&statement)
            .bind(at.tenant.as_str())
            .bind(&scope[..]);
        let get = get
            .bind(namespace.as_str())
            .bind(key.as_str())
            .bind(now_ms());
        let row = get
            .fetch_optional(&self.pool)
            .await
            .map_err(database("read an item"))?;
        row.as_ref().map(read_item).transpose()
    }

    async fn put(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        item: PutItem,
    ) -> Result<u64, MemoryError> {
        let value = item.checked_json()?;
        let now = millis(SystemTime::now());
        let expires = expiry_ms(now, &item).map(|ms| ms.min(i64::MAX as u64) as i64);
        let embedding = item.embedding.as_deref().map(super::text::vector_bytes);
        let statement = match item.expect {
            Expect::Any => UPSERT.replace("{WHERE}", ""),
            Expect::Absent => UPSERT.replace("{WHERE}", ONLY_EXPIRED),
            Expect::Version(_) => UPDATE_VERSION.to_owned(),
        };
        let scope = at.scope.encode();
        let put = sqlx::query(&statement)
            .bind(at.tenant.as_str())
            .bind(&scope[..]);
        let put = put
            .bind(namespace.as_str())
            .bind(key.as_str())
            .bind(&value[..]);
        let put = put.bind(item.text.as_deref()).bind(embedding.as_deref());
        let mut put = put.bind(now as i64).bind(expires);
        if let Expect::Version(v) = item.expect {
            put = put.bind(i64::try_from(v).unwrap_or(i64::MAX));
        }
        let err = database("write an item");
        match put.fetch_optional(&self.pool).await.map_err(&err)? {
            Some(row) => Ok(row.try_get::<i64, _>("version").map_err(&err)? as u64),
            None => {
                let found = MemoryStore::get(self, at, namespace, key).await?;
                Err(MemoryError::VersionConflict {
                    namespace: namespace.to_string(),
                    key: key.to_string(),
                    expected: item.expect,
                    found: found.map(|i| i.version),
                })
            }
        }
    }

    async fn delete(
        &self,
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        expect: Option<u64>,
    ) -> Result<bool, MemoryError> {
        let (statement, scope) = (delete(expect.is_some()), at.scope.encode());
        let delete = sqlx::query(&statement)
            .bind(at.tenant.as_str())
            .bind(&scope[..]);
        let mut delete = delete
            .bind(namespace.as_str())
            .bind(key.as_str())
            .bind(now_ms());
        if let Some(v) = expect {
            delete = delete.bind(i64::try_from(v).unwrap_or(i64::MAX));
        }
        let deleted = delete
            .fetch_optional(&self.pool)
            .await
            .map_err(database("delete an item"))?;
        match (deleted, expect) {
            (Some(_), _) => Ok(true),
            (None, None) => Ok(false),
            (None, Some(v)) => {
                let found = MemoryStore::get(self, at, namespace, key).await?;
                Err(super::transient::conflict(
                    namespace,
                    key,
                    v,
                    found.map(|i| i.version),
                ))
            }
        }
    }

    async fn scan(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<MemoryItem>, MemoryError> {
        let rows = self
            .scan_rows(at, prefix, false)
            .await
            .map_err(database("list items"))?;
        rows.iter().map(read_item).collect()
    }

    async fn search_text(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
        terms: &[String],
        limit: Option<usize>,
    ) -> Result<Vec<Hit>, MemoryError> {
        let memory = DB::DIALECT.memory;
        let statement = search(memory, prefix.is_some());
        let (query, scope) = ((memory.search_terms)(terms), at.scope.encode());
        let bounds = prefix.map(bounds);
        let search = sqlx::query(&statement)
            .bind(&query[..])
            .bind(at.tenant.as_str());
        let mut search = search.bind(&scope[..]).bind(now_ms());
        if let Some((p, low, high)) = &bounds {
            search = search.bind(&p[..]).bind(&low[..]).bind(&high[..]);
        }
        let limit = limit.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = search
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(database("search items"))?;
        let hit = |row: &DB::Row| -> Result<Hit, MemoryError> {
            let rank: f64 = row.try_get("rank").map_err(database("read a rank"))?;
            Ok(Hit {
                item: read_item(row)?,
                score: rank as f32,
            })
        };
        rows.iter().map(hit).collect()
    }

    async fn scan_vectors(
        &self,
        at: &Partition,
        prefix: Option<&Namespace>,
    ) -> Result<Vec<(Namespace, ItemKey, Vec<f32>)>, MemoryError> {
        let rows = self
            .scan_rows(at, prefix, true)
            .await
            .map_err(database("list vectors"))?;
        let err = database("read a vector");
        let corrupt = |e: MemoryError| MemoryError::Corrupt {
            message: e.to_string(),
        };
        let entry = |row: &DB::Row| -> Result<(Namespace, ItemKey, Vec<f32>), MemoryError> {
            let namespace: String = row.try_get(0).map_err(&err)?;
            let key: String = row.try_get(1).map_err(&err)?;
            Ok((
                Namespace::from_stored(&namespace).map_err(corrupt)?,
                ItemKey::new(key).map_err(corrupt)?,
                vector(row.try_get(2).map_err(&err)?)?,
            ))
        };
        rows.iter().map(entry).collect()
    }

    async fn purge_expired(&self) -> Result<usize, MemoryError> {
        let done = sqlx::query(PURGE).bind(now_ms()).execute(&self.pool).await;
        Ok(DB::rows_affected(&done.map_err(database("purge expired items"))?) as usize)
    }
}
