//! What the SQL memory stores share: their statements (parameters are always bound; `{T}` in
//! a statement stands for the items table) and how a row becomes an item.
//!
//! One row per item, keyed by `(tenant, scope, namespace, key)`: every statement names the
//! tenant and the scope in its `WHERE` (or its key), so no statement reaches another
//! partition. A namespace prefix is a range of the key (`namespace = $p OR (namespace > 'p/'
//! AND namespace < 'p0')`), never a `LIKE` pattern. Times are milliseconds since the Unix
//! epoch on the caller's clock; an item whose `expires_ms` has passed is absent for every read.

use std::time::SystemTime;

use super::{expiry_ms, ItemKey, MemoryError, MemoryItem, Namespace, Partition, PutItem};
use crate::store::{from_millis, millis};

/// The columns of an item, in the order `read_item!` reads them.
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

/// Deletes the expired items (`$1`: now).
pub(crate) const PURGE: &str =
    "DELETE FROM agentflow_memory_items WHERE expires_ms IS NOT NULL AND expires_ms <= $1";

/// The bound values of a write.
pub(crate) struct Write {
    pub tenant: String,
    pub scope: String,
    pub namespace: String,
    pub key: String,
    pub value: String,
    pub text: Option<String>,
    pub embedding: Option<Vec<u8>>,
    pub now: i64,
    pub expires: Option<i64>,
}

impl Write {
    /// The values of `item` written at `key` now.
    pub fn new(
        at: &Partition,
        namespace: &Namespace,
        key: &ItemKey,
        item: &PutItem,
    ) -> Result<Self, MemoryError> {
        let value = item.checked_json()?;
        let now = millis(SystemTime::now());
        Ok(Write {
            tenant: at.tenant.as_str().to_owned(),
            scope: at.scope.encode(),
            namespace: namespace.as_str().to_owned(),
            key: key.as_str().to_owned(),
            value,
            text: item.text.clone(),
            embedding: item.embedding.as_deref().map(super::text::vector_bytes),
            now: now as i64,
            expires: expiry_ms(now, item).map(|ms| ms.min(i64::MAX as u64) as i64),
        })
    }
}

/// Now, as the SQL stores bind it.
pub(crate) fn now_ms() -> i64 {
    millis(SystemTime::now()).min(i64::MAX as u64) as i64
}

/// The bounds of namespaces below `prefix`, bound after it.
pub(crate) fn bounds(prefix: &Namespace) -> (String, String, String) {
    let (low, high) = prefix.below_bounds();
    (prefix.as_str().to_owned(), low, high)
}

/// An item from its stored columns.
#[allow(clippy::too_many_arguments)]
pub(crate) fn item(
    namespace: String,
    key: String,
    value: String,
    text: Option<String>,
    created_ms: i64,
    updated_ms: i64,
    expires_ms: Option<i64>,
    version: i64,
) -> Result<MemoryItem, MemoryError> {
    let corrupt = |message: String| MemoryError::Corrupt { message };
    let time = |ms: i64| from_millis(ms.max(0) as u64);
    Ok(MemoryItem {
        namespace: Namespace::from_stored(&namespace)
            .map_err(|e| corrupt(format!("namespace: {e}")))?,
        key: ItemKey::new(key).map_err(|e| corrupt(format!("key: {e}")))?,
        value: serde_json::from_str(&value)
            .map_err(|e| corrupt(format!("a value that is not JSON: {e}")))?,
        text,
        created_at: time(created_ms),
        updated_at: time(updated_ms),
        expires_at: expires_ms.map(time),
        version: u64::try_from(version).map_err(|_| corrupt(format!("version {version}")))?,
    })
}

/// Reads an item from a row whose first columns are [`COLUMNS`].
macro_rules! read_item {
    ($row:expr) => {{
        use sqlx::Row;
        let row = $row;
        let err = super::database("read an item");
        super::sql::item(
            row.try_get(0).map_err(&err)?,
            row.try_get(1).map_err(&err)?,
            row.try_get(2).map_err(&err)?,
            row.try_get(3).map_err(&err)?,
            row.try_get(4).map_err(&err)?,
            row.try_get(5).map_err(&err)?,
            row.try_get(6).map_err(&err)?,
            row.try_get(7).map_err(&err)?,
        )
    }};
}
pub(crate) use read_item;

/// Reads the vector of a row read by a `scan(_, true)`.
pub(crate) fn vector(bytes: Vec<u8>) -> Result<Vec<f32>, MemoryError> {
    super::text::vector_from_bytes(&bytes).ok_or_else(|| MemoryError::Corrupt {
        message: format!("a vector of {} bytes, not a multiple of 4", bytes.len()),
    })
}

/// Implements [`MemoryStore`](super::MemoryStore) for a store type with a `pool` field and a
/// `search_text_in` method of its own (full text search is each database's own).
macro_rules! sql_memory_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl super::MemoryStore for $store {
            async fn get(
                &self,
                at: &super::Partition,
                namespace: &super::Namespace,
                key: &super::ItemKey,
            ) -> Result<Option<super::MemoryItem>, super::MemoryError> {
                let row = sqlx::query(&super::sql::get())
                    .bind(at.tenant.as_str())
                    .bind(at.scope.encode())
                    .bind(namespace.as_str())
                    .bind(key.as_str())
                    .bind(super::sql::now_ms())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(super::database("read an item"))?;
                match row {
                    Some(row) => Ok(Some(super::sql::read_item!(&row)?)),
                    None => Ok(None),
                }
            }

            async fn put(
                &self,
                at: &super::Partition,
                namespace: &super::Namespace,
                key: &super::ItemKey,
                item: super::PutItem,
            ) -> Result<u64, super::MemoryError> {
                let w = super::sql::Write::new(at, namespace, key, &item)?;
                let statement = match item.expect {
                    super::Expect::Any => super::sql::UPSERT.replace("{WHERE}", ""),
                    super::Expect::Absent => {
                        super::sql::UPSERT.replace("{WHERE}", super::sql::ONLY_EXPIRED)
                    }
                    super::Expect::Version(_) => super::sql::UPDATE_VERSION.to_owned(),
                };
                let mut query = sqlx::query_scalar::<_, i64>(&statement)
                    .bind(&w.tenant)
                    .bind(&w.scope)
                    .bind(&w.namespace)
                    .bind(&w.key)
                    .bind(&w.value)
                    .bind(&w.text)
                    .bind(&w.embedding)
                    .bind(w.now)
                    .bind(w.expires);
                if let super::Expect::Version(v) = item.expect {
                    query = query.bind(i64::try_from(v).unwrap_or(i64::MAX));
                }
                let written = query
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(super::database("write an item"))?;
                match written {
                    Some(version) => Ok(version as u64),
                    None => {
                        let found = super::MemoryStore::get(self, at, namespace, key).await?;
                        Err(super::MemoryError::VersionConflict {
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
                at: &super::Partition,
                namespace: &super::Namespace,
                key: &super::ItemKey,
                expect: Option<u64>,
            ) -> Result<bool, super::MemoryError> {
                let statement = super::sql::delete(expect.is_some());
                let mut query = sqlx::query_scalar::<_, i64>(&statement)
                    .bind(at.tenant.as_str())
                    .bind(at.scope.encode())
                    .bind(namespace.as_str())
                    .bind(key.as_str())
                    .bind(super::sql::now_ms());
                if let Some(v) = expect {
                    query = query.bind(i64::try_from(v).unwrap_or(i64::MAX));
                }
                let deleted = query
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(super::database("delete an item"))?;
                match (deleted, expect) {
                    (Some(_), _) => Ok(true),
                    (None, None) => Ok(false),
                    (None, Some(v)) => {
                        let found = super::MemoryStore::get(self, at, namespace, key).await?;
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
                at: &super::Partition,
                prefix: Option<&super::Namespace>,
            ) -> Result<Vec<super::MemoryItem>, super::MemoryError> {
                let statement = super::sql::scan(prefix.is_some(), false);
                let mut query = sqlx::query(&statement)
                    .bind(at.tenant.as_str())
                    .bind(at.scope.encode())
                    .bind(super::sql::now_ms());
                if let Some(prefix) = prefix {
                    let (p, low, high) = super::sql::bounds(prefix);
                    query = query.bind(p).bind(low).bind(high);
                }
                let rows = query
                    .fetch_all(&self.pool)
                    .await
                    .map_err(super::database("list items"))?;
                rows.iter().map(|row| super::sql::read_item!(row)).collect()
            }

            async fn search_text(
                &self,
                at: &super::Partition,
                prefix: Option<&super::Namespace>,
                terms: &[String],
                limit: Option<usize>,
            ) -> Result<Vec<super::Hit>, super::MemoryError> {
                self.search_text_in(at, prefix, terms, limit).await
            }

            async fn scan_vectors(
                &self,
                at: &super::Partition,
                prefix: Option<&super::Namespace>,
            ) -> Result<Vec<(super::Namespace, super::ItemKey, Vec<f32>)>, super::MemoryError> {
                use sqlx::Row;
                let statement = super::sql::scan(prefix.is_some(), true);
                let mut query = sqlx::query(&statement)
                    .bind(at.tenant.as_str())
                    .bind(at.scope.encode())
                    .bind(super::sql::now_ms());
                if let Some(prefix) = prefix {
                    let (p, low, high) = super::sql::bounds(prefix);
                    query = query.bind(p).bind(low).bind(high);
                }
                let rows = query
                    .fetch_all(&self.pool)
                    .await
                    .map_err(super::database("list vectors"))?;
                let err = super::database("read a vector");
                rows.iter()
                    .map(|row| {
                        let namespace: String = row.try_get(0).map_err(&err)?;
                        let key: String = row.try_get(1).map_err(&err)?;
                        let bytes: Vec<u8> = row.try_get(2).map_err(&err)?;
                        let corrupt = |e: super::MemoryError| super::MemoryError::Corrupt {
                            message: e.to_string(),
                        };
                        Ok((
                            super::Namespace::from_stored(&namespace).map_err(corrupt)?,
                            super::ItemKey::new(key).map_err(corrupt)?,
                            super::sql::vector(bytes)?,
                        ))
                    })
                    .collect()
            }

            async fn purge_expired(&self) -> Result<usize, super::MemoryError> {
                let done = sqlx::query(super::sql::PURGE)
                    .bind(super::sql::now_ms())
                    .execute(&self.pool)
                    .await
                    .map_err(super::database("purge expired items"))?;
                Ok(done.rows_affected() as usize)
            }
        }
    };
}
pub(crate) use sql_memory_store;
