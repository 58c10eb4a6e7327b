//! [`SqliteRunQueue`]: the run queue in a SQLite database file (feature `sqlite`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::Sqlite;

use super::sql::{
    db, sql_run_queue, QueueStatements, ADDED_COLUMNS, EVENTS_TABLE, INDEXES, TABLE_COLUMNS,
};
use super::QueueError;
use crate::store::schedule::sql::{SCHEDULES_INDEX, SCHEDULES_TABLE};
use crate::store::spending::sql::SPENDING_SCHEMA;

/// The SQLite clock in milliseconds since the Unix epoch.
const NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";

/// The run queue in a SQLite database (usually the [`SqliteStore`](crate::store::SqliteStore)'s
/// file: `SqliteRunQueue::open(store.path())`), shared safely by the processes of one machine.
///
/// Every change runs in a `BEGIN IMMEDIATE` transaction, which holds the database's single
/// write lock: a claim is one `UPDATE ... RETURNING` in it, so of any number of processes
/// claiming, each run goes to exactly one; an enqueue within a
/// [`QueueCap`](crate::store::QueueCap) counts and inserts in one. The table is created, if missing, when the queue
/// opens.
#[derive(Debug, Clone)]
pub struct SqliteRunQueue {
    pub(crate) pool: SqlitePool,
    sql: Arc<QueueStatements>,
}

impl SqliteRunQueue {
    /// Opens (or creates) the queue in the database at `path` (WAL mode, `synchronous=FULL`,
    /// a 30 s busy timeout), and creates its table if missing.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, QueueError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| QueueError::Io {
                operation: "create the directory of its database",
                source: Arc::new(e),
            })?;
        }
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(connect)
            .await
            .map_err(db("open its database"))?;
        let queue = SqliteRunQueue {
            pool,
            sql: Arc::new(QueueStatements::new(
                NOW,
                "",
                "SELECT value FROM json_each($3)",
            )),
        };
        // Opening processes race to create the table; SQLite may refuse some of them at once
        // ("database is locked"), so opening tries again for a while.
        let mut pause = Duration::from_millis(2);
        let mut tries = 0;
        loop {
            match queue.create_table().await {
                Ok(()) => return Ok(queue),
                Err(_) if tries < 200 => {
                    tries += 1;
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn create_table(&self) -> Result<(), QueueError> {
        let err = db("create its table");
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(&err)?;
        let table = format!(
            "CREATE TABLE IF NOT EXISTS agentflow_run_queue (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            {TABLE_COLUMNS})"
        );
        sqlx::query(&table).execute(&mut *tx).await.map_err(&err)?;
        // A table made before a column was added gets it (SQLite has no ADD COLUMN IF NOT
        // EXISTS: the table's columns are read first).
        let present: Vec<(String,)> =
            sqlx::query_as("SELECT name FROM pragma_table_info('agentflow_run_queue')")
                .fetch_all(&mut *tx)
                .await
                .map_err(&err)?;
        for column in ADDED_COLUMNS {
            let name = column.split(' ').next().unwrap_or_default();
            if !present.iter().any(|(p,)| p == name) {
                sqlx::query(&format!(
                    "ALTER TABLE agentflow_run_queue ADD COLUMN {column}"
                ))
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
            }
        }
        sqlx::query(EVENTS_TABLE)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        for schedules in [SCHEDULES_TABLE, SCHEDULES_INDEX]
            .into_iter()
            .chain(SPENDING_SCHEMA)
        {
            sqlx::query(schedules)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
        }
        for index in INDEXES {
            sqlx::query(index).execute(&mut *tx).await.map_err(&err)?;
        }
        tx.commit().await.map_err(&err)
    }

    /// A write transaction: SQLite's single write lock holds every thread's.
    async fn write(&self, _thread: &str) -> Result<sqlx::Transaction<'static, Sqlite>, QueueError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db("lock the queue"))
    }

    /// A write transaction for a run of `thread` within a group: SQLite's single write lock
    /// holds every group's too.
    async fn write_within(
        &self,
        thread: &str,
        _group: Option<&str>,
    ) -> Result<sqlx::Transaction<'static, Sqlite>, QueueError> {
        self.write(thread).await
    }

    async fn claim_row(
        &self,
        worker: &str,
        lease_ms: i64,
        flows: Option<String>,
    ) -> Result<Option<SqliteRow>, QueueError> {
        let mut tx = self.write("").await?;
        let sql = match flows {
            None => &self.sql.claim,
            Some(_) => &self.sql.claim_among,
        };
        let statement = sqlx::query(sql).bind(worker).bind(lease_ms);
        let statement = match flows {
            None => statement,
            Some(flows) => statement.bind(flows),
        };
        let row = statement
            .fetch_optional(&mut *tx)
            .await
            .map_err(db("claim a run"))?;
        tx.commit().await.map_err(db("claim a run"))?;
        Ok(row)
    }
}

sql_run_queue!(SqliteRunQueue, SqliteRow);
