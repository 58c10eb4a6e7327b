//! What the SQL stores ([`SqliteStore`](super::SqliteStore),
//! [`PostgresStore`](super::PostgresStore)) share: the schema and its migrations, and the
//! store contract as SQL statements. The statements are constants (ids and bytes are always
//! bound parameters); `{NOW}` in them stands for the database's clock in milliseconds.
//!
//! # Schema
//!
//! `agentflow_schema(id = 1, version)` holds the schema version; `agentflow_checkpoints` one
//! row per record of a run's history: `(id, version)` is the key, `parent` the record it
//! continues, `state` one of `pending claimed resumed finished replaced`, `attempt` and
//! `lease_until_ms` the claim, `is_head` 1 on the run's latest record.
//!
//! # Claims
//!
//! A claim is one `UPDATE ... WHERE state = 'pending' OR (state = 'claimed' AND the lease ran
//! out) RETURNING ...` on the head row: the database's row lock makes exactly one of any
//! number of concurrent claimants see the row match. Renewing, releasing and completing match
//! the claim's `(version, attempt)`, so a claim that was taken over changes nothing.
//! Changes that append a record run in a transaction that holds the run's lock (SQLite: the
//! database's write lock, `BEGIN IMMEDIATE`; PostgreSQL: an advisory lock on the id).

/// One step of the schema, applied in order on open.
pub(crate) struct Migration {
    /// The schema version it leads to (1, 2, ...).
    pub version: i64,
    /// What it does.
    pub name: &'static str,
    /// Its statements, written once for both backends: `{INT}` stands for a 64-bit integer
    /// column type and `{BLOB}` for a byte string (see [`Backend`]).
    pub statements: &'static [&'static str],
}

/// The column types that differ between the SQL backends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    /// SQLite: `INTEGER`, `BLOB`.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    Sqlite,
    /// PostgreSQL: `BIGINT`, `BYTEA`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres,
}

impl Migration {
    /// Its statements for `backend`.
    pub fn statements_for(&self, backend: Backend) -> impl Iterator<Item = String> + '_ {
        let (int, blob) = match backend {
            Backend::Sqlite => ("INTEGER", "BLOB"),
            Backend::Postgres => ("BIGINT", "BYTEA"),
        };
        self.statements
            .iter()
            .map(move |s| s.replace("{INT}", int).replace("{BLOB}", blob))
    }
}

/// The schema's migrations, oldest first. Append new ones at the end with the next version;
/// never change one that shipped.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "checkpoint histories",
        statements: &[
            "CREATE TABLE agentflow_checkpoints (
            id TEXT NOT NULL,
            version {INT} NOT NULL,
            parent {INT},
            state TEXT NOT NULL,
            created_ms {INT} NOT NULL,
            ended_ms {INT},
            attempt {INT} NOT NULL DEFAULT 0,
            lease_until_ms {INT} NOT NULL DEFAULT 0,
            size {INT} NOT NULL,
            is_head {INT} NOT NULL,
            bytes {BLOB} NOT NULL,
            PRIMARY KEY (id, version)
        )",
            "CREATE INDEX agentflow_checkpoints_waiting ON agentflow_checkpoints (created_ms, id)
            WHERE is_head = 1 AND state IN ('pending', 'claimed')",
            "CREATE INDEX agentflow_checkpoints_finished ON agentflow_checkpoints (ended_ms)
            WHERE is_head = 1 AND state = 'finished'",
        ],
    },
    Migration {
        version: 2,
        name: "conversation threads and their turn leases",
        statements: &[
            "CREATE TABLE agentflow_thread_records (
            thread TEXT NOT NULL,
            seq {INT} NOT NULL,
            turn {INT} NOT NULL,
            size {INT} NOT NULL,
            bytes {BLOB} NOT NULL,
            PRIMARY KEY (thread, seq)
        )",
            "CREATE INDEX agentflow_thread_records_turn ON agentflow_thread_records (thread, turn)",
            "CREATE TABLE agentflow_thread_leases (
            thread TEXT NOT NULL PRIMARY KEY,
            owner TEXT NOT NULL,
            lease_until_ms {INT} NOT NULL
        )",
        ],
    },
];

/// The newest schema version this build knows.
pub(crate) fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

pub(crate) const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentflow_schema (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
)";

pub(crate) const SCHEMA_VERSION: &str = "SELECT version FROM agentflow_schema WHERE id = 1";

pub(crate) const SET_SCHEMA_VERSION: &str =
    "INSERT INTO agentflow_schema (id, version) VALUES (1, $1)
    ON CONFLICT (id) DO UPDATE SET version = excluded.version";

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

/// A thread's version: its number of records (0 for none).
pub(crate) const THREAD_VERSION: &str = "SELECT COALESCE(MAX(seq) + 1, 0) AS version
    FROM agentflow_thread_records WHERE thread = $1";

/// A thread's last record (its bytes only if at most `$2` bytes).
pub(crate) const THREAD_HEAD: &str =
    "SELECT seq, turn, size, CASE WHEN size <= $2 THEN bytes END AS bytes
    FROM agentflow_thread_records WHERE thread = $1 ORDER BY seq DESC LIMIT 1";

/// The records of turns `$2 <= turn < $3` (bytes only if at most `$4` bytes).
pub(crate) const THREAD_READ: &str =
    "SELECT seq, size, CASE WHEN size <= $4 THEN bytes END AS bytes
    FROM agentflow_thread_records WHERE thread = $1 AND turn >= $2 AND turn < $3 ORDER BY seq";

pub(crate) const THREAD_INSERT: &str =
    "INSERT INTO agentflow_thread_records (thread, seq, turn, size, bytes)
    VALUES ($1, $2, $3, $4, $5)";

pub(crate) const THREAD_LIST: &str =
    "SELECT DISTINCT thread FROM agentflow_thread_records ORDER BY thread";

pub(crate) const THREAD_DELETE: &str = "DELETE FROM agentflow_thread_records WHERE thread = $1";

/// Takes a thread's lease for owner `$2` for `$3` ms: inserts the lease row, or takes it over
/// if its lease ran out. Returns a row only if `$2` now holds it.
pub(crate) const LEASE_TAKE: &str =
    "INSERT INTO agentflow_thread_leases (thread, owner, lease_until_ms)
    VALUES ($1, $2, {NOW} + $3)
    ON CONFLICT (thread) DO UPDATE
    SET owner = excluded.owner, lease_until_ms = excluded.lease_until_ms
    WHERE agentflow_thread_leases.lease_until_ms <= {NOW}
    RETURNING owner";

/// Extends owner `$2`'s lease to `$3` ms from now; a row only if `$2` holds it.
pub(crate) const LEASE_RENEW: &str =
    "UPDATE agentflow_thread_leases SET lease_until_ms = {NOW} + $3
    WHERE thread = $1 AND owner = $2
    RETURNING owner";

pub(crate) const LEASE_RELEASE: &str =
    "DELETE FROM agentflow_thread_leases WHERE thread = $1 AND owner = $2";

/// A duration in milliseconds, as the SQL stores bind it (saturating).
pub(crate) fn millis_i64(d: std::time::Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// A stored state name as a state.
pub(crate) fn parse_state(name: &str) -> Option<super::records::State> {
    use super::records::State;
    Some(match name {
        "pending" => State::Pending,
        "claimed" => State::Claimed,
        "resumed" => State::Resumed,
        "finished" => State::Finished,
        "replaced" => State::Replaced,
        _ => return None,
    })
}

/// The statements of one backend: the constants above with `{NOW}` filled in.
#[derive(Debug)]
pub(crate) struct Statements {
    pub get: String,
    pub head: String,
    pub retire_head: String,
    pub insert: String,
    pub claim: String,
    pub claim_refused: String,
    pub renew: String,
    pub release: String,
    pub end_claim: String,
    pub history: String,
    pub pending: String,
    pub purge: String,
    pub delete: String,
    pub thread_version: String,
    pub thread_head: String,
    pub thread_read: String,
    pub thread_insert: String,
    pub thread_list: String,
    pub thread_delete: String,
    pub lease_take: String,
    pub lease_renew: String,
    pub lease_release: String,
}

impl Statements {
    /// The statements with `now` as the clock (an SQL expression of milliseconds).
    pub fn with_clock(now: &str) -> Self {
        let f = |s: &str| s.replace("{NOW}", now);
        Statements {
            get: f(GET),
            head: f(HEAD),
            retire_head: f(RETIRE_HEAD),
            insert: f(INSERT),
            claim: f(CLAIM),
            claim_refused: f(CLAIM_REFUSED),
            renew: f(RENEW),
            release: f(RELEASE),
            end_claim: f(END_CLAIM),
            history: f(HISTORY),
            pending: f(PENDING),
            purge: f(PURGE),
            delete: f(DELETE),
            thread_version: f(THREAD_VERSION),
            thread_head: f(THREAD_HEAD),
            thread_read: f(THREAD_READ),
            thread_insert: f(THREAD_INSERT),
            thread_list: f(THREAD_LIST),
            thread_delete: f(THREAD_DELETE),
            lease_take: f(LEASE_TAKE),
            lease_renew: f(LEASE_RENEW),
            lease_release: f(LEASE_RELEASE),
        }
    }
}

/// Implements [`CheckpointStore`](super::CheckpointStore) for a SQL store type with fields
/// `pool`, `sql: Arc<Statements>`, `max_bytes`, and an `async fn begin(&self, id)` that opens
/// a transaction holding the run's lock.
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

            /// Creates or migrates the schema in `tx`, which holds the migration lock (so
            /// many processes opening one database at once migrate it once); `shown` names
            /// the database in errors. A schema newer than this build is refused.
            async fn migrate_in(
                tx: &mut sqlx::Transaction<'static, $db>,
                backend: $crate::store::sql::Backend,
                shown: &str,
            ) -> Result<(), StoreError> {
                use sqlx::Row;
                let err = |e| StoreError::Database {
                    operation: "migrate",
                    id: shown.to_owned(),
                    source: std::sync::Arc::new(e),
                };
                sqlx::query($crate::store::sql::SCHEMA_TABLE)
                    .execute(&mut **tx)
                    .await
                    .map_err(err)?;
                let found: Option<i64> = sqlx::query($crate::store::sql::SCHEMA_VERSION)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(err)?
                    .map(|row| row.try_get("version"))
                    .transpose()
                    .map_err(err)?;
                let found = found.unwrap_or(0);
                let latest = $crate::store::sql::latest_version();
                if found > latest {
                    return Err(StoreError::Schema {
                        found,
                        supported: latest,
                    });
                }
                let pending = $crate::store::sql::MIGRATIONS
                    .iter()
                    .filter(|m| m.version > found);
                for migration in pending {
                    for statement in migration.statements_for(backend) {
                        sqlx::query(&statement)
                            .execute(&mut **tx)
                            .await
                            .map_err(|e| StoreError::Database {
                                operation: "migrate",
                                id: format!(
                                    "{shown} (migration {}: {})",
                                    migration.version, migration.name
                                ),
                                source: std::sync::Arc::new(e),
                            })?;
                    }
                }
                if found < latest {
                    sqlx::query($crate::store::sql::SET_SCHEMA_VERSION)
                        .bind(latest)
                        .execute(&mut **tx)
                        .await
                        .map_err(err)?;
                }
                Ok(())
            }

            /// The schema version of the database (the newest this build knows, once it is
            /// open).
            pub async fn schema_version(&self) -> Result<i64, StoreError> {
                use sqlx::Row;
                let shown = self.shown();
                let err = |e| StoreError::Database {
                    operation: "read the schema of",
                    id: shown.clone(),
                    source: std::sync::Arc::new(e),
                };
                let row = sqlx::query($crate::store::sql::SCHEMA_VERSION)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(err)?;
                match row {
                    Some(row) => row.try_get("version").map_err(err),
                    None => Ok(0),
                }
            }

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
                        .fetch_optional(&self.pool)
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
                        .fetch_optional(&self.pool)
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
                    .execute(&self.pool)
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
                    .execute(&self.pool)
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

/// Implements [`ThreadStore`](super::ThreadStore) for a SQL store type with the fields and
/// `begin` of [`sql_checkpoint_store`]. An append runs in a transaction holding the thread's
/// lock (`begin("thread:ID")`: `:` never occurs in a checkpoint id), reads the thread's version
/// and inserts the record only if it is the expected one; the `(thread, seq)` key refuses a
/// second record at one position even without the lock. The lease is one conditional upsert
/// of the thread's lease row.
macro_rules! sql_thread_store {
    ($store:ty, $row:ty) => {
        impl $store {
            fn thread_db_error<'a>(
                operation: &'static str,
                id: &'a str,
            ) -> impl Fn(sqlx::Error) -> ThreadError + 'a {
                move |e| ThreadError::Store(Self::db_error(operation, id)(e))
            }

            /// Runs a lease statement (`$1` thread, `$2` owner, `$3` lease in ms) that returns
            /// a row if `owner` holds the lease afterwards.
            async fn lease_row(
                &self,
                statement: &str,
                operation: &'static str,
                id: &str,
                owner: &str,
                lease: std::time::Duration,
            ) -> Result<bool, ThreadError> {
                validate_thread_id(id)?;
                let row = sqlx::query(statement)
                    .bind(id)
                    .bind(owner)
                    .bind($crate::store::sql::millis_i64(lease))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(Self::thread_db_error(operation, id))?;
                Ok(row.is_some())
            }

            /// Decodes a record row (`seq`, `size`, `bytes`), refusing one over the limit.
            fn thread_record(&self, id: &str, row: &$row) -> Result<ThreadRecord, ThreadError> {
                use sqlx::Row;
                let err = Self::thread_db_error("read", id);
                let seq: i64 = row.try_get("seq").map_err(&err)?;
                let size: i64 = row.try_get("size").map_err(&err)?;
                check_size(id, size as u64, self.max_bytes)?;
                let bytes: Option<Vec<u8>> = row.try_get("bytes").map_err(&err)?;
                ThreadRecord::decode(id, seq as u64, &bytes.unwrap_or_default())
            }
        }

        #[async_trait::async_trait]
        impl ThreadStore for $store {
            async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
                use sqlx::Row;
                validate_thread_id(id)?;
                let err = Self::thread_db_error("read", id);
                let Some(row) = sqlx::query(&self.sql.thread_head)
                    .bind(id)
                    .bind(self.max_bytes as i64)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(&err)?
                else {
                    return Ok(None);
                };
                let last = self.thread_record(id, &row)?;
                let turn: i64 = row.try_get("turn").map_err(&err)?;
                Ok(Some(ThreadHead {
                    id: id.to_owned(),
                    version: last.seq + 1,
                    turns: turn as u64 + 1,
                    last,
                }))
            }

            async fn read(
                &self,
                id: &str,
                turns: std::ops::Range<u64>,
            ) -> Result<Vec<ThreadRecord>, ThreadError> {
                validate_thread_id(id)?;
                let bound = |t: u64| t.min(i64::MAX as u64) as i64;
                let rows = sqlx::query(&self.sql.thread_read)
                    .bind(id)
                    .bind(bound(turns.start))
                    .bind(bound(turns.end))
                    .bind(self.max_bytes as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(Self::thread_db_error("read", id))?;
                rows.iter().map(|row| self.thread_record(id, row)).collect()
            }

            async fn append(
                &self,
                id: &str,
                expected_version: u64,
                mut record: ThreadRecord,
            ) -> Result<u64, ThreadError> {
                use sqlx::Row;
                validate_thread_id(id)?;
                record.seq = expected_version;
                let bytes = record.encode();
                check_size(id, bytes.len() as u64, self.max_bytes)?;
                let err = Self::thread_db_error("write", id);
                let mut tx = self.begin(&format!("thread:{id}")).await?;
                let found: i64 = sqlx::query(&self.sql.thread_version)
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(&err)?
                    .try_get("version")
                    .map_err(&err)?;
                check_version(id, expected_version, found as u64)?;
                let inserted = sqlx::query(&self.sql.thread_insert)
                    .bind(id)
                    .bind(expected_version as i64)
                    .bind(record.turn.min(i64::MAX as u64) as i64)
                    .bind(bytes.len() as i64)
                    .bind(&bytes[..])
                    .execute(&mut *tx)
                    .await;
                match inserted {
                    Ok(_) => {}
                    Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                        return Err(ThreadError::Conflict {
                            id: id.to_owned(),
                            expected: expected_version,
                            found: expected_version + 1,
                        })
                    }
                    Err(e) => return Err(err(e)),
                }
                tx.commit().await.map_err(&err)?;
                Ok(expected_version + 1)
            }

            async fn list(&self) -> Result<Vec<String>, ThreadError> {
                use sqlx::Row;
                let err = Self::thread_db_error("list", "threads");
                let rows = sqlx::query(&self.sql.thread_list)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(&err)?;
                rows.iter()
                    .map(|row| row.try_get::<String, _>("thread").map_err(&err))
                    .collect()
            }

            async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
                validate_thread_id(id)?;
                let done = sqlx::query(&self.sql.thread_delete)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(Self::thread_db_error("delete", id))?;
                Ok(done.rows_affected() > 0)
            }

            async fn lease_thread(
                &self,
                id: &str,
                owner: &str,
                lease: std::time::Duration,
            ) -> Result<(), ThreadError> {
                match self
                    .lease_row(&self.sql.lease_take, "lease", id, owner, lease)
                    .await?
                {
                    true => Ok(()),
                    false => Err(ThreadError::Busy { id: id.to_owned() }),
                }
            }

            async fn renew_thread_lease(
                &self,
                id: &str,
                owner: &str,
                lease: std::time::Duration,
            ) -> Result<(), ThreadError> {
                let operation = "renew the lease of";
                match self
                    .lease_row(&self.sql.lease_renew, operation, id, owner, lease)
                    .await?
                {
                    true => Ok(()),
                    false => Err(ThreadError::LeaseLost { id: id.to_owned() }),
                }
            }

            async fn release_thread_lease(&self, id: &str, owner: &str) -> Result<(), ThreadError> {
                validate_thread_id(id)?;
                sqlx::query(&self.sql.lease_release)
                    .bind(id)
                    .bind(owner)
                    .execute(&self.pool)
                    .await
                    .map_err(Self::thread_db_error("release the lease of", id))?;
                Ok(())
            }
        }
    };
}

pub(crate) use sql_thread_store;
