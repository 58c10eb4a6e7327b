//! The [`CheckpointStore`](crate::store::CheckpointStore) contract as SQL statements, and the
//! macro that implements it for a SQL store type.

pub(crate) const GET: &str = "SELECT size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_checkpoints WHERE id = $1 AND is_head = 1";

pub(crate) const HEAD: &str =
    "SELECT version, state FROM agentflow_checkpoints WHERE id = $1 AND is_head = 1";

/// Ends the head (as `$3`: `replaced`, or `finished` left as it is) before a new one is added.
pub(crate) const RETIRE_HEAD: &str = "UPDATE agentflow_checkpoints
    SET is_head = 0, state = $3, ended_ms = COALESCE(ended_ms, {NOW})
    WHERE id = $1 AND version = $2 AND is_head = 1";

pub(crate) const INSERT: &str = "INSERT INTO agentflow_checkpoints
    (id, version, parent, state, created_ms, ended_ms, attempt, lease_until_ms, size, is_head, bytes)
    VALUES ($1, $2, $3, $4, {NOW}, CASE WHEN $4 = 'finished' THEN {NOW} END, 0, 0, $5, 1, $6)";

pub(crate) const CLAIM: &str = "UPDATE agentflow_checkpoints
    SET state = 'claimed', attempt = attempt + 1, lease_until_ms = {NOW} + $2
    WHERE id = $1 AND is_head = 1 AND size <= $3
      AND (state = 'pending' OR (state = 'claimed' AND lease_until_ms <= {NOW}))
    RETURNING version, attempt, bytes";

/// Claims up to `$1` claimable heads of at most `$3` bytes for `$2` ms, oldest first, in one
/// statement. The select (`picked`, evaluated once) reads the waiting rows' partial index (its `WHERE` repeats the
/// index's, so both backends use it) in order; `{SKIP_LOCKED}` is PostgreSQL's
/// `FOR UPDATE SKIP LOCKED` (rows another worker's batch is claiming are passed over, never
/// waited for), and nothing on SQLite, where the statement holds the write lock.
pub(crate) const CLAIM_BATCH: &str = "WITH picked AS (
        SELECT id, version FROM agentflow_checkpoints
        WHERE is_head = 1 AND state IN ('pending', 'claimed')
          AND (state = 'pending' OR lease_until_ms <= {NOW}) AND size <= $3
        ORDER BY created_ms, id LIMIT $1 {SKIP_LOCKED})
    UPDATE agentflow_checkpoints
    SET state = 'claimed', attempt = attempt + 1, lease_until_ms = {NOW} + $2
    WHERE is_head = 1 AND (id, version) IN (SELECT id, version FROM picked)
      AND (state = 'pending' OR (state = 'claimed' AND lease_until_ms <= {NOW}))
    RETURNING id, version, attempt, bytes";

/// Completes a claim in one statement (PostgreSQL, which runs data-modifying `WITH` clauses):
/// takes the run's advisory lock (as `begin` does), ends the claimed head if claim `($2, $3)`
/// still holds it, and inserts its child (`$4` its state, `$5` its size, `$6` its bytes).
/// No row back means the claim was lost and nothing was written. One round trip and one
/// commit instead of a transaction's five round trips.
pub(crate) const COMPLETE_ONE: &str = "WITH locked AS (
        SELECT pg_advisory_xact_lock(hashtextextended($1, 0))),
    ended AS (
        UPDATE agentflow_checkpoints SET state = 'resumed', ended_ms = {NOW}, is_head = 0
        WHERE id = $1 AND version = $2 AND attempt = $3 AND state = 'claimed' AND is_head = 1
          AND EXISTS (SELECT 1 FROM locked)
        RETURNING version)
    INSERT INTO agentflow_checkpoints
    (id, version, parent, state, created_ms, ended_ms, attempt, lease_until_ms, size, is_head, bytes)
    SELECT $1, version + 1, version, $4, {NOW}, CASE WHEN $4 = 'finished' THEN {NOW} END,
        0, 0, $5, 1, $6 FROM ended
    RETURNING version";

/// Why a claim did not match.
pub(crate) const CLAIM_REFUSED: &str =
    "SELECT state, attempt, lease_until_ms - {NOW} AS remaining, size
    FROM agentflow_checkpoints WHERE id = $1 AND is_head = 1";

pub(crate) const RENEW: &str = "UPDATE agentflow_checkpoints SET lease_until_ms = {NOW} + $4
    WHERE id = $1 AND version = $2 AND attempt = $3 AND state = 'claimed' AND is_head = 1";

pub(crate) const RELEASE: &str =
    "UPDATE agentflow_checkpoints SET state = 'pending', lease_until_ms = 0
    WHERE id = $1 AND version = $2 AND attempt = $3 AND state = 'claimed' AND is_head = 1";

pub(crate) const END_CLAIM: &str =
    "UPDATE agentflow_checkpoints SET state = 'resumed', ended_ms = {NOW}, is_head = 0
    WHERE id = $1 AND version = $2 AND attempt = $3 AND state = 'claimed' AND is_head = 1";

pub(crate) const HISTORY: &str = "SELECT version, parent, state, created_ms, ended_ms, attempt,
    lease_until_ms, size FROM agentflow_checkpoints WHERE id = $1 ORDER BY version";

pub(crate) const PENDING: &str =
    "SELECT id, version, created_ms, size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_checkpoints WHERE is_head = 1 AND state IN ('pending', 'claimed')
    ORDER BY created_ms, id LIMIT $1";

pub(crate) const PURGE: &str = "DELETE FROM agentflow_checkpoints WHERE id IN (
    SELECT id FROM agentflow_checkpoints
    WHERE is_head = 1 AND state = 'finished' AND ended_ms <= {NOW} - $1)
    RETURNING id";

pub(crate) const DELETE: &str = "DELETE FROM agentflow_checkpoints WHERE id = $1";

/// Implements [`CheckpointStore`](super::CheckpointStore) for a SQL store type with fields
/// `pool`, `sql: Arc<Statements>`, `max_bytes`, an `async fn begin(&self, id)` that opens
/// a transaction holding the run's lock, and a `fn lease_pool(&self)`: where claims, renewals
/// and releases are written (SQLite: connections that do not sync each commit).
macro_rules! sql_checkpoint_store {
    ($store:ty, $db:ty) => {
        impl $store {
            fn db_error<'a>(
                operation: &'static str,
                id: &'a str,
            ) -> impl Fn(sqlx::Error) -> StoreError + 'a {
                move |e| StoreError::Database {
                    operation,
                    id: id.to_owned(),
                    source: std::sync::Arc::new(e),
                }
            }
        }

        $crate::store::sql::sql_schema!($store, $db);

        impl $store {
            fn corrupt(id: &str, what: &str) -> StoreError {
                StoreError::Other {
                    id: id.to_owned(),
                    message: format!("the checkpoint table holds {what}"),
                }
            }

            /// Appends a record to `id`'s run in `tx` (which holds the run's lock).
            async fn append(
                &self,
                tx: &mut sqlx::Transaction<'static, $db>,
                id: &str,
                bytes: &[u8],
                mode: SaveMode,
            ) -> Result<u64, StoreError> {
                use sqlx::Row;
                let err = Self::db_error("write", id);
                let head = sqlx::query(&self.sql.head)
                    .bind(id)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(&err)?;
                let (version, parent) = match head {
                    None => (1, None),
                    Some(row) => {
                        let version: i64 = row.try_get("version").map_err(&err)?;
                        let state: String = row.try_get("state").map_err(&err)?;
                        let waiting = matches!(state.as_str(), "pending" | "claimed");
                        let (retired, parent) = match (waiting, mode) {
                            (true, SaveMode::Create) => {
                                return Err(StoreError::Pending {
                                    id: id.to_owned(),
                                    version: version as u64,
                                })
                            }
                            (true, SaveMode::Replace) => ("replaced", Some(version)),
                            (false, _) => (state.as_str(), None),
                        };
                        sqlx::query(&self.sql.retire_head)
                            .bind(id)
                            .bind(version)
                            .bind(retired)
                            .execute(&mut **tx)
                            .await
                            .map_err(&err)?;
                        (version + 1, parent)
                    }
                };
                sqlx::query(&self.sql.insert)
                    .bind(id)
                    .bind(version)
                    .bind(parent)
                    .bind("pending")
                    .bind(bytes.len() as i64)
                    .bind(bytes)
                    .execute(&mut **tx)
                    .await
                    .map_err(&err)?;
                Ok(version as u64)
            }
        }

        #[async_trait::async_trait]
        impl CheckpointStore for $store {
            async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
                use sqlx::Row;
                validate_id(id)?;
                let err = Self::db_error("read", id);
                let Some(row) = sqlx::query(&self.sql.get)
                    .bind(id)
                    .bind(self.max_bytes as i64)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(&err)?
                else {
                    return Ok(None);
                };
                let size: i64 = row.try_get("size").map_err(&err)?;
                check_size(id, size as u64, self.max_bytes)?;
                let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
                Ok(bytes)
            }

            async fn save(
                &self,
                id: &str,
                bytes: Vec<u8>,
                mode: SaveMode,
            ) -> Result<u64, StoreError> {
                validate_id(id)?;
                check_size(id, bytes.len() as u64, self.max_bytes)?;
                let mut tx = self.begin(id).await?;
                let version = self.append(&mut tx, id, &bytes, mode).await?;
                tx.commit().await.map_err(Self::db_error("write", id))?;
                Ok(version)
            }

            async fn claim(
                &self,
                id: &str,
                lease: std::time::Duration,
            ) -> Result<Claim, StoreError> {
                use sqlx::Row;
                validate_id(id)?;
                let err = Self::db_error("claim", id);
                let lease_ms = $crate::store::sql::millis_i64(lease);
                // A refusal is looked into; if the head changed meanwhile (a claim released,
                // a new record), the claim is tried again.
                for _ in 0..8 {
                    let won = sqlx::query(&self.sql.claim)
                        .bind(id)
                        .bind(lease_ms)
                        .bind(self.max_bytes as i64)
                        .fetch_optional(self.lease_pool())
                        .await
                        .map_err(&err)?;
                    if let Some(row) = won {
                        let version: i64 = row.try_get("version").map_err(&err)?;
                        let attempt: i64 = row.try_get("attempt").map_err(&err)?;
                        return Ok(Claim {
                            id: id.to_owned(),
                            version: version as u64,
                            attempt: attempt as u64,
                            bytes: row.try_get("bytes").map_err(&err)?,
                        });
                    }
                    let Some(row) = sqlx::query(&self.sql.claim_refused)
                        .bind(id)
                        .fetch_optional(self.lease_pool())
                        .await
                        .map_err(&err)?
                    else {
                        return Err(StoreError::NotFound { id: id.to_owned() });
                    };
                    let state: String = row.try_get("state").map_err(&err)?;
                    let size: i64 = row.try_get("size").map_err(&err)?;
                    let attempt: i64 = row.try_get("attempt").map_err(&err)?;
                    let remaining: i64 = row.try_get("remaining").map_err(&err)?;
                    match state.as_str() {
                        "pending" | "claimed" => check_size(id, size as u64, self.max_bytes)?,
                        _ => {}
                    }
                    match state.as_str() {
                        "claimed" if remaining > 0 => {
                            return Err(StoreError::Claimed {
                                id: id.to_owned(),
                                attempt: attempt as u64,
                                remaining: std::time::Duration::from_millis(remaining as u64),
                            })
                        }
                        "pending" | "claimed" => continue,
                        "finished" | "resumed" | "replaced" => {
                            return Err(StoreError::AlreadyResumed { id: id.to_owned() })
                        }
                        other => {
                            return Err(Self::corrupt(id, &format!("an unknown state '{other}'")))
                        }
                    }
                }
                Err(StoreError::Other {
                    id: id.to_owned(),
                    message: "the checkpoint kept changing while it was claimed; try again".into(),
                })
            }

            async fn renew(
                &self,
                claim: &Claim,
                lease: std::time::Duration,
            ) -> Result<(), StoreError> {
                let lease_ms = $crate::store::sql::millis_i64(lease);
                let done = sqlx::query(&self.sql.renew)
                    .bind(&claim.id)
                    .bind(claim.version as i64)
                    .bind(claim.attempt as i64)
                    .bind(lease_ms)
                    .execute(self.lease_pool())
                    .await
                    .map_err(Self::db_error("renew", &claim.id))?;
                if done.rows_affected() == 0 {
                    return Err(lost(claim));
                }
                Ok(())
            }

            async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
                sqlx::query(&self.sql.release)
                    .bind(&claim.id)
                    .bind(claim.version as i64)
                    .bind(claim.attempt as i64)
                    .execute(self.lease_pool())
                    .await
                    .map_err(Self::db_error("release", &claim.id))?;
                Ok(())
            }

            async fn complete(
                &self,
                claim: &Claim,
                completion: Completion,
            ) -> Result<u64, StoreError> {
                let (state, bytes) = match completion {
                    Completion::Finished(b) => ("finished", b),
                    Completion::Interrupted(b) => ("pending", b),
                };
                check_size(&claim.id, bytes.len() as u64, self.max_bytes)?;
                let id = &claim.id[..];
                let err = Self::db_error("complete", id);
                if let Some(complete_one) = &self.sql.complete_one {
                    use sqlx::Row;
                    let row = sqlx::query(complete_one)
                        .bind(id)
                        .bind(claim.version as i64)
                        .bind(claim.attempt as i64)
                        .bind(state)
                        .bind(bytes.len() as i64)
                        .bind(&bytes[..])
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(&err)?
                        .ok_or_else(|| lost(claim))?;
                    return Ok(row.try_get::<i64, _>("version").map_err(&err)? as u64);
                }
                let mut tx = self.begin(id).await?;
                let ended = sqlx::query(&self.sql.end_claim)
                    .bind(id)
                    .bind(claim.version as i64)
                    .bind(claim.attempt as i64)
                    .execute(&mut *tx)
                    .await
                    .map_err(&err)?;
                if ended.rows_affected() == 0 {
                    return Err(lost(claim));
                }
                let version = claim.version as i64 + 1;
                sqlx::query(&self.sql.insert)
                    .bind(id)
                    .bind(version)
                    .bind(claim.version as i64)
                    .bind(state)
                    .bind(bytes.len() as i64)
                    .bind(&bytes[..])
                    .execute(&mut *tx)
                    .await
                    .map_err(&err)?;
                tx.commit().await.map_err(&err)?;
                Ok(version as u64)
            }

            async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
                use sqlx::Row;
                validate_id(id)?;
                let err = Self::db_error("read", id);
                let rows = sqlx::query(&self.sql.history)
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(&err)?;
                let mut records = Vec::with_capacity(rows.len());
                for row in rows {
                    let state: String = row.try_get("state").map_err(&err)?;
                    let parent: Option<i64> = row.try_get("parent").map_err(&err)?;
                    let ended: Option<i64> = row.try_get("ended_ms").map_err(&err)?;
                    records.push(Record {
                        version: row.try_get::<i64, _>("version").map_err(&err)? as u64,
                        parent: parent.map(|p| p as u64),
                        state: $crate::store::sql::parse_state(&state).ok_or_else(|| {
                            Self::corrupt(id, &format!("an unknown state '{state}'"))
                        })?,
                        created_ms: row.try_get::<i64, _>("created_ms").map_err(&err)? as u64,
                        ended_ms: ended.map(|t| t as u64),
                        attempt: row.try_get::<i64, _>("attempt").map_err(&err)? as u64,
                        lease_until_ms: row.try_get::<i64, _>("lease_until_ms").map_err(&err)?
                            as u64,
                        size: row.try_get::<i64, _>("size").map_err(&err)? as u64,
                    });
                }
                Ok(records.iter().map(|r| r.meta(id)).collect())
            }

            async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
                use sqlx::Row;
                let err = Self::db_error("list", "pending checkpoints");
                let rows = sqlx::query(&self.sql.pending)
                    .bind(limit.min(i64::MAX as usize) as i64)
                    .bind(self.max_bytes as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(&err)?;
                let mut out = Vec::with_capacity(rows.len());
                for row in rows {
                    let id: String = row.try_get("id").map_err(&err)?;
                    let size: i64 = row.try_get("size").map_err(&err)?;
                    check_size(&id, size as u64, self.max_bytes)?;
                    let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
                    out.push(PendingCheckpoint {
                        version: row.try_get::<i64, _>("version").map_err(&err)? as u64,
                        created_at: from_millis(
                            row.try_get::<i64, _>("created_ms").map_err(&err)? as u64
                        ),
                        bytes: bytes.unwrap_or_default(),
                        id,
                    });
                }
                Ok(out)
            }

            async fn claim_pending(
                &self,
                limit: usize,
                lease: std::time::Duration,
            ) -> Result<Vec<Claim>, StoreError> {
                use sqlx::Row;
                if limit == 0 {
                    return Ok(Vec::new());
                }
                let err = Self::db_error("claim", "pending checkpoints");
                let rows = sqlx::query(&self.sql.claim_batch)
                    .bind(limit.min(i64::MAX as usize) as i64)
                    .bind($crate::store::sql::millis_i64(lease))
                    .bind(self.max_bytes as i64)
                    .fetch_all(self.lease_pool())
                    .await
                    .map_err(&err)?;
                let mut claims = Vec::with_capacity(rows.len());
                for row in rows {
                    claims.push(Claim {
                        id: row.try_get("id").map_err(&err)?,
                        version: row.try_get::<i64, _>("version").map_err(&err)? as u64,
                        attempt: row.try_get::<i64, _>("attempt").map_err(&err)? as u64,
                        bytes: row.try_get("bytes").map_err(&err)?,
                    });
                }
                Ok(claims)
            }

            async fn purge_finished(&self, age: std::time::Duration) -> Result<usize, StoreError> {
                use sqlx::Row;
                let err = Self::db_error("purge", "finished checkpoints");
                let age_ms = $crate::store::sql::millis_i64(age);
                let rows = sqlx::query(&self.sql.purge)
                    .bind(age_ms)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(&err)?;
                let mut ids = std::collections::HashSet::new();
                for row in rows {
                    ids.insert(row.try_get::<String, _>("id").map_err(&err)?);
                }
                Ok(ids.len())
            }

            async fn delete(&self, id: &str) -> Result<(), StoreError> {
                validate_id(id)?;
                sqlx::query(&self.sql.delete)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(Self::db_error("delete", id))?;
                Ok(())
            }
        }
    };
}

pub(crate) use sql_checkpoint_store;
