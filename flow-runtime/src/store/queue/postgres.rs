//! [`PostgresRunQueue`]: the run queue in a PostgreSQL database (feature `postgres`).

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow, Postgres};

use super::sql::{
    db, sql_run_queue, QueueStatements, ADDED_COLUMNS, EVENTS_TABLE, INDEXES, TABLE_COLUMNS,
};
use super::QueueError;
use crate::store::schedule::sql::{SCHEDULES_INDEX, SCHEDULES_TABLE};
use crate::store::spending::sql::SPENDING_SCHEMA;

/// The server's clock in milliseconds: every worker's leases are measured on one clock.
const NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The advisory lock under which the table is created (`agentflow-queue`, folded).
const CREATE_LOCK: i64 = 0x6166_7175_6575_6531;

/// The run queue in a PostgreSQL database (usually the
/// [`PostgresStore`](crate::store::PostgresStore)'s): for workers on many machines.
///
/// A claim is one `UPDATE` whose choice of run is a `SELECT ... FOR UPDATE SKIP LOCKED`:
/// concurrent claimants skip the row another is taking instead of waiting for it, and each
/// run goes to exactly one. Enqueueing holds a transaction-level advisory lock on the thread,
/// so a thread's runs are numbered in the order they commit; an enqueue within a
/// [`QueueCap`](crate::store::QueueCap) holds one on the cap's prefix too, across its count
/// and its insert, so the cap is exact. Leases are measured on the server's clock. The table is created, if missing, when the queue connects.
#[derive(Debug, Clone)]
pub struct PostgresRunQueue {
    pub(crate) pool: PgPool,
    sql: Arc<QueueStatements>,
}

impl PostgresRunQueue {
    /// Connects to the database at `url` and creates the queue's table if missing.
    pub async fn connect(url: &str) -> Result<Self, QueueError> {
        let connect: PgConnectOptions = url.parse().map_err(db("parse the URL of its database"))?;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(connect)
            .await
            .map_err(db("connect to its database"))?;
        let err = db("create its table");
        let mut tx = pool.begin().await.map_err(&err)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(CREATE_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        let table = format!(
            "CREATE TABLE IF NOT EXISTS agentflow_run_queue (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            {TABLE_COLUMNS})"
        );
        sqlx::query(&table).execute(&mut *tx).await.map_err(&err)?;
        for column in ADDED_COLUMNS {
            sqlx::query(&format!(
                "ALTER TABLE agentflow_run_queue ADD COLUMN IF NOT EXISTS {column}"
            ))
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
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
        tx.commit().await.map_err(&err)?;
        Ok(PostgresRunQueue {
            pool,
            sql: Arc::new(QueueStatements::new(
                NOW,
                "FOR UPDATE SKIP LOCKED",
                "SELECT jsonb_array_elements_text($3::text::jsonb)",
            )),
        })
    }

    /// A transaction holding thread `thread`'s advisory lock.
    async fn write(
        &self,
        thread: &str,
    ) -> Result<sqlx::Transaction<'static, Postgres>, QueueError> {
        let err = db("lock a thread of the queue");
        let mut tx = self.pool.begin().await.map_err(&err)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))")
            .bind(thread)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        Ok(tx)
    }

    /// A transaction holding the advisory lock of the group of threads starting with `group`
    /// (if given), then thread `thread`'s. Every enqueue within a cap takes its group's lock
    /// first, and no transaction takes a group's lock after a thread's: no two wait on each
    /// other. Under READ COMMITTED each statement sees what committed before it, so the count
    /// made after the group's lock is taken sees every run of the group enqueued before.
    async fn write_within(
        &self,
        thread: &str,
        group: Option<&str>,
    ) -> Result<sqlx::Transaction<'static, Postgres>, QueueError> {
        let Some(group) = group else {
            return self.write(thread).await;
        };
        let err = db("lock a group of threads of the queue");
        let mut tx = self.pool.begin().await.map_err(&err)?;
        // Another seed than the threads' locks: a group's key is not a thread's.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 11))")
            .bind(group)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))")
            .bind(thread)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        Ok(tx)
    }

    async fn claim_row(
        &self,
        worker: &str,
        lease_ms: i64,
        flows: Option<String>,
    ) -> Result<Option<PgRow>, QueueError> {
        let sql = match flows {
            None => &self.sql.claim,
            Some(_) => &self.sql.claim_among,
        };
        let statement = sqlx::query(sql).bind(worker).bind(lease_ms);
        let statement = match flows {
            None => statement,
            Some(flows) => statement.bind(flows),
        };
        statement
            .fetch_optional(&self.pool)
            .await
            .map_err(db("claim a run"))
    }
}

sql_run_queue!(PostgresRunQueue, PgRow);
