//! The [`CheckpointStore`] contract as SQL statements, and its implementation for
//! [`SqlStore`].

use std::time::Duration;

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Transaction, Type};

use super::{db_error, int, millis_i64, write_tx, Lock, SqlDatabase, SqlStore};
use crate::store::records::{check_size, Record, State};
use crate::store::{
    from_millis, validate_id, CheckpointMeta, CheckpointStore, Claim, Completion,
    PendingCheckpoint, SaveMode, StoreError,
};

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

/// A stored state name as a state.
fn parse_state(name: &str) -> Option<State> {
    Some(match name {
        "pending" => State::Pending,
        "claimed" => State::Claimed,
        "resumed" => State::Resumed,
        "finished" => State::Finished,
        "replaced" => State::Replaced,
        _ => return None,
    })
}

fn corrupt(id: &str, what: &str) -> StoreError {
    StoreError::Other {
        id: id.to_owned(),
        message: format!("the checkpoint table holds {what}"),
    }
}

fn lost(claim: &Claim) -> StoreError {
    StoreError::ClaimLost {
        id: claim.id.clone(),
        version: claim.version,
        attempt: claim.attempt,
    }
}

/// A claim from a row with `version`, `attempt` and `bytes` (and `id` unless given).
fn claim_of<R: Row>(row: &R, id: Option<&str>) -> Result<Claim, sqlx::Error>
where
    for<'q> i64: Decode<'q, R::Database> + Type<R::Database>,
    for<'q> String: Decode<'q, R::Database> + Type<R::Database>,
    for<'q> Vec<u8>: Decode<'q, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    Ok(Claim {
        id: match id {
            Some(id) => id.to_owned(),
            None => row.try_get("id")?,
        },
        version: row.try_get::<i64, _>("version")? as u64,
        attempt: row.try_get::<i64, _>("attempt")? as u64,
        bytes: row.try_get("bytes")?,
    })
}

// The sqlx capabilities every generic block of the SQL stores names (Rust does not infer them
// from `SqlDatabase`): executing on a connection, binding and reading these types by name.
impl<DB: SqlDatabase> SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    /// A write transaction holding the lock of `name` (SQLite: the database's write lock;
    /// PostgreSQL: an advisory lock on the name).
    pub(crate) async fn begin(&self, name: &str) -> Result<Transaction<'static, DB>, StoreError> {
        let tx = write_tx(&self.pool, &[Lock::Name(name, 0)]).await;
        tx.map_err(db_error("lock", name))
    }

    /// Appends a record to `id`'s run in `tx` (which holds the run's lock).
    async fn append(
        &self,
        tx: &mut Transaction<'static, DB>,
        id: &str,
        bytes: &[u8],
        mode: SaveMode,
    ) -> Result<u64, StoreError> {
        let err = db_error("write", id);
        let head = sqlx::query(&self.sql.head).bind(id);
        let head = head.fetch_optional(&mut **tx).await.map_err(&err)?;
        let (version, parent) = match head {
            None => (1, None),
            Some(row) => {
                let version: i64 = row.try_get("version").map_err(&err)?;
                let state: String = row.try_get("state").map_err(&err)?;
                let waiting = matches!(state.as_str(), "pending" | "claimed");
                let (retired, parent) = match (waiting, mode) {
                    (true, SaveMode::Create) => {
                        let version = version as u64;
                        return Err(StoreError::Pending {
                            id: id.into(),
                            version,
                        });
                    }
                    (true, SaveMode::Replace) => ("replaced", Some(version)),
                    (false, _) => (state.as_str(), None),
                };
                let retire = sqlx::query(&self.sql.retire_head).bind(id).bind(version);
                retire
                    .bind(retired)
                    .execute(&mut **tx)
                    .await
                    .map_err(&err)?;
                (version + 1, parent)
            }
        };
        self.insert(tx, id, version, parent, "pending", bytes)
            .await?;
        Ok(version as u64)
    }

    /// Inserts record `version` of `id` in `tx`, as its head.
    async fn insert(
        &self,
        tx: &mut Transaction<'static, DB>,
        id: &str,
        version: i64,
        parent: Option<i64>,
        state: &str,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        let insert = sqlx::query(&self.sql.insert).bind(id).bind(version);
        let insert = insert.bind(parent).bind(state).bind(bytes.len() as i64);
        insert
            .bind(bytes)
            .execute(&mut **tx)
            .await
            .map_err(db_error("write", id))?;
        Ok(())
    }

    /// Why a claim of `id` did not match: `Ok(())` if it may be tried again.
    async fn claim_refused(&self, id: &str) -> Result<(), StoreError> {
        let err = db_error("claim", id);
        let row = sqlx::query(&self.sql.claim_refused).bind(id);
        let Some(row) = row.fetch_optional(&self.leases).await.map_err(&err)? else {
            return Err(StoreError::NotFound { id: id.to_owned() });
        };
        let state: String = row.try_get("state").map_err(&err)?;
        let size: i64 = row.try_get("size").map_err(&err)?;
        let attempt: i64 = row.try_get("attempt").map_err(&err)?;
        let remaining: i64 = row.try_get("remaining").map_err(&err)?;
        match state.as_str() {
            "pending" | "claimed" => check_size(id, size as u64, self.max_bytes)?,
            "finished" | "resumed" | "replaced" => {
                return Err(StoreError::AlreadyResumed { id: id.to_owned() })
            }
            other => return Err(corrupt(id, &format!("an unknown state '{other}'"))),
        }
        if state == "claimed" && remaining > 0 {
            return Err(StoreError::Claimed {
                id: id.to_owned(),
                attempt: attempt as u64,
                remaining: Duration::from_millis(remaining as u64),
            });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl<DB: SqlDatabase> CheckpointStore for SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q [u8]: Encode<'q, DB> + Type<DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> Vec<u8>: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        validate_id(id)?;
        let err = db_error("read", id);
        let row = sqlx::query(&self.sql.get)
            .bind(id)
            .bind(int(self.max_bytes));
        let Some(row) = row.fetch_optional(&self.pool).await.map_err(&err)? else {
            return Ok(None);
        };
        let size: i64 = row.try_get("size").map_err(&err)?;
        check_size(id, size as u64, self.max_bytes)?;
        row.try_get("bytes").map_err(&err)
    }

    async fn save(&self, id: &str, bytes: Vec<u8>, mode: SaveMode) -> Result<u64, StoreError> {
        validate_id(id)?;
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        let mut tx = self.begin(id).await?;
        let version = self.append(&mut tx, id, &bytes, mode).await?;
        tx.commit().await.map_err(db_error("write", id))?;
        Ok(version)
    }

    async fn claim(&self, id: &str, lease: Duration) -> Result<Claim, StoreError> {
        validate_id(id)?;
        let err = db_error("claim", id);
        // A refusal is looked into; if the head changed meanwhile (a claim released, a new
        // record), the claim is tried again.
        for _ in 0..8 {
            let claim = sqlx::query(&self.sql.claim)
                .bind(id)
                .bind(millis_i64(lease));
            let won = claim
                .bind(int(self.max_bytes))
                .fetch_optional(&self.leases)
                .await;
            if let Some(row) = won.map_err(&err)? {
                return claim_of(&row, Some(id)).map_err(&err);
            }
            self.claim_refused(id).await?;
        }
        Err(StoreError::Other {
            id: id.to_owned(),
            message: "the checkpoint kept changing while it was claimed; try again".into(),
        })
    }

    async fn renew(&self, claim: &Claim, lease: Duration) -> Result<(), StoreError> {
        let renew = sqlx::query(&self.sql.renew).bind(&claim.id[..]);
        let renew = renew.bind(claim.version as i64).bind(claim.attempt as i64);
        let done = renew.bind(millis_i64(lease)).execute(&self.leases).await;
        match DB::rows_affected(&done.map_err(db_error("renew", &claim.id))?) {
            0 => Err(lost(claim)),
            _ => Ok(()),
        }
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        let release = sqlx::query(&self.sql.release).bind(&claim.id[..]);
        let release = release
            .bind(claim.version as i64)
            .bind(claim.attempt as i64);
        release
            .execute(&self.leases)
            .await
            .map_err(db_error("release", &claim.id))?;
        Ok(())
    }

    async fn complete(&self, claim: &Claim, completion: Completion) -> Result<u64, StoreError> {
        let (state, bytes) = match completion {
            Completion::Finished(b) => ("finished", b),
            Completion::Interrupted(b) => ("pending", b),
        };
        let id = &claim.id[..];
        check_size(id, bytes.len() as u64, self.max_bytes)?;
        let err = db_error("complete", id);
        let (version, attempt) = (claim.version as i64, claim.attempt as i64);
        if let Some(complete_one) = &self.sql.complete_one {
            let one = sqlx::query(complete_one)
                .bind(id)
                .bind(version)
                .bind(attempt);
            let one = one.bind(state).bind(bytes.len() as i64).bind(&bytes[..]);
            let row = one.fetch_optional(&self.pool).await.map_err(&err)?;
            let row = row.ok_or_else(|| lost(claim))?;
            return Ok(row.try_get::<i64, _>("version").map_err(&err)? as u64);
        }
        let mut tx = self.begin(id).await?;
        let end = sqlx::query(&self.sql.end_claim).bind(id).bind(version);
        let ended = end.bind(attempt).execute(&mut *tx).await.map_err(&err)?;
        if DB::rows_affected(&ended) == 0 {
            return Err(lost(claim));
        }
        self.insert(&mut tx, id, version + 1, Some(version), state, &bytes)
            .await?;
        tx.commit().await.map_err(&err)?;
        Ok(version as u64 + 1)
    }

    async fn history(&self, id: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        validate_id(id)?;
        let err = db_error("read", id);
        let rows = sqlx::query(&self.sql.history)
            .bind(id)
            .fetch_all(&self.pool)
            .await;
        let mut records = Vec::new();
        for row in rows.map_err(&err)? {
            let state: String = row.try_get("state").map_err(&err)?;
            let parent: Option<i64> = row.try_get("parent").map_err(&err)?;
            let ended: Option<i64> = row.try_get("ended_ms").map_err(&err)?;
            let number = |name: &str| row.try_get::<i64, _>(name).map(|n| n as u64);
            records.push(Record {
                version: number("version").map_err(&err)?,
                parent: parent.map(|p| p as u64),
                state: parse_state(&state)
                    .ok_or_else(|| corrupt(id, &format!("an unknown state '{state}'")))?,
                created_ms: number("created_ms").map_err(&err)?,
                ended_ms: ended.map(|t| t as u64),
                attempt: number("attempt").map_err(&err)?,
                lease_until_ms: number("lease_until_ms").map_err(&err)?,
                size: number("size").map_err(&err)?,
            });
        }
        Ok(records.iter().map(|r| r.meta(id)).collect())
    }

    async fn pending(&self, limit: usize) -> Result<Vec<PendingCheckpoint>, StoreError> {
        let err = db_error("list", "pending checkpoints");
        let pending = sqlx::query(&self.sql.pending).bind(int(limit as u64));
        let rows = pending
            .bind(int(self.max_bytes))
            .fetch_all(&self.pool)
            .await;
        let mut out = Vec::new();
        for row in rows.map_err(&err)? {
            let id: String = row.try_get("id").map_err(&err)?;
            let size: i64 = row.try_get("size").map_err(&err)?;
            check_size(&id, size as u64, self.max_bytes)?;
            let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
            let created: i64 = row.try_get("created_ms").map_err(&err)?;
            out.push(PendingCheckpoint {
                version: row.try_get::<i64, _>("version").map_err(&err)? as u64,
                created_at: from_millis(created as u64),
                bytes: bytes.unwrap_or_default(),
                id,
            });
        }
        Ok(out)
    }

    async fn claim_pending(&self, limit: usize, lease: Duration) -> Result<Vec<Claim>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let err = db_error("claim", "pending checkpoints");
        let batch = sqlx::query(&self.sql.claim_batch).bind(int(limit as u64));
        let batch = batch.bind(millis_i64(lease)).bind(int(self.max_bytes));
        let rows = batch.fetch_all(&self.leases).await.map_err(&err)?;
        rows.iter()
            .map(|row| claim_of(row, None).map_err(&err))
            .collect()
    }

    async fn purge_finished(&self, age: Duration) -> Result<usize, StoreError> {
        let err = db_error("purge", "finished checkpoints");
        let purge = sqlx::query(&self.sql.purge).bind(millis_i64(age));
        let mut ids = std::collections::HashSet::new();
        for row in purge.fetch_all(&self.pool).await.map_err(&err)? {
            ids.insert(row.try_get::<String, _>("id").map_err(&err)?);
        }
        Ok(ids.len())
    }

    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        validate_id(id)?;
        let delete = sqlx::query(&self.sql.delete)
            .bind(id)
            .execute(&self.pool)
            .await;
        delete.map_err(db_error("delete", id))?;
        Ok(())
    }
}
