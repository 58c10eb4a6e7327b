//! [`PostgresRunQueue`]: the run queue in a PostgreSQL database (feature `postgres`).

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions, Postgres};

use super::sql::{db, SqlRunQueue};
use super::QueueError;

/// The run queue in a PostgreSQL database (usually the
/// [`PostgresStore`](crate::store::PostgresStore)'s): for workers on many machines.
///
/// A claim is one `UPDATE` whose choice of run is a `SELECT ... FOR UPDATE SKIP LOCKED`:
/// concurrent claimants skip the row another is taking instead of waiting for it, and each
/// run goes to exactly one. Enqueueing holds a transaction-level advisory lock on the thread,
/// so a thread's runs are numbered in the order they commit; an enqueue within a
/// [`QueueCap`](crate::store::QueueCap) holds one on the cap's prefix too, across its count
/// and its insert, so the cap is exact. Leases are measured on the server's clock. The table is created, if missing, when the queue connects.
pub type PostgresRunQueue = SqlRunQueue<Postgres>;

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
        Self::on_pool(pool).await
    }
}
