//! The SQL stores' schema: its tables, their migrations (oldest first, never changed once
//! shipped), and the code that applies them when a store opens.

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
    Migration {
        version: 3,
        name: "run journals",
        statements: &["CREATE TABLE agentflow_journal (
            run TEXT NOT NULL,
            seq {INT} NOT NULL,
            at_ms {INT} NOT NULL,
            kind TEXT NOT NULL,
            size {INT} NOT NULL,
            bytes {BLOB} NOT NULL,
            PRIMARY KEY (run, seq)
        )"],
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

/// Implements `migrate_in` and `schema_version` for a SQL store type with fields `pool` and a
/// `fn shown(&self)` naming the database.
macro_rules! sql_schema {
    ($store:ty, $db:ty) => {
        impl $store {
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
        }
    };
}

pub(crate) use sql_schema;
