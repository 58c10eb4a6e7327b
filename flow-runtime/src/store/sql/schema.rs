//! The SQL stores' schema: its tables, their migrations (oldest first, never changed once
//! shipped), and the code that applies them when a store opens.

use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use super::{db_error, write_tx, Lock, SqlDatabase, SqlStore};
use crate::store::StoreError;

/// One step of the schema, applied in order on open.
pub(crate) struct Migration {
    /// The schema version it leads to (1, 2, ...).
    pub version: i64,
    /// What it does.
    pub name: &'static str,
    /// Its statements, written once for both databases: `{INT}` stands for a 64-bit integer
    /// column type and `{BLOB}` for a byte string (see [`Dialect`](super::Dialect)).
    pub statements: &'static [&'static str],
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

/// The lock under which the schema is migrated (`agentweave` in ASCII, folded), so many
/// processes opening one database at once migrate it once.
const MIGRATION_LOCK: i64 = 0x6167_656e_7466_6c6f;

/// Creates or migrates the schema of `pool`'s database in one transaction holding the
/// migration lock; `shown` names the database in errors. A schema newer than this build is
/// refused.
pub(crate) async fn migrate<DB: SqlDatabase>(pool: &Pool<DB>, shown: &str) -> Result<(), StoreError>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    let err = db_error("migrate", shown);
    let mut tx = write_tx(pool, &[Lock::Key(MIGRATION_LOCK)])
        .await
        .map_err(&err)?;
    sqlx::query(SCHEMA_TABLE)
        .execute(&mut *tx)
        .await
        .map_err(&err)?;
    let found = read_version(&mut *tx).await.map_err(&err)?;
    let latest = latest_version();
    if found > latest {
        return Err(StoreError::Schema {
            found,
            supported: latest,
        });
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > found) {
        for statement in migration.statements {
            let statement = DB::DIALECT.fill(statement);
            let done = sqlx::query(&statement).execute(&mut *tx).await;
            let (version, name) = (migration.version, migration.name);
            let at = format!("{shown} (migration {version}: {name})");
            done.map_err(db_error("migrate", &at))?;
        }
    }
    if found < latest {
        let set = sqlx::query(SET_SCHEMA_VERSION).bind(latest);
        set.execute(&mut *tx).await.map_err(&err)?;
    }
    tx.commit().await.map_err(&err)
}

/// The schema version `db` holds (0 for none).
async fn read_version<'c, DB: Database, E: Executor<'c, Database = DB>>(
    db: E,
) -> Result<i64, sqlx::Error>
where
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    let row = sqlx::query(SCHEMA_VERSION).fetch_optional(db).await?;
    row.map_or(Ok(0), |row| row.try_get("version"))
}

impl<DB: SqlDatabase> SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    /// The schema version of the database (the newest this build knows, once it is open).
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        let read = read_version(self.pool()).await;
        read.map_err(db_error("read the schema of", &self.rows().shown))
    }
}
