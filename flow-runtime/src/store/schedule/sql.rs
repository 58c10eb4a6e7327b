//! The schedules of the SQL queues ([`SqliteRunQueue`](crate::store::SqliteRunQueue),
//! [`PostgresRunQueue`](crate::store::PostgresRunQueue)): the table `agentflow_schedules`
//! beside the queue's, created with it, one row per schedule (`input`, `grants` and `metadata`
//! as JSON text, `paused` 0 or 1), and the macro that implements
//! [`ScheduleStore`](super::ScheduleStore) with its statements (`$n` parameters, which both
//! drivers take). Every change is one statement: [`advance_schedule`] is an `UPDATE ... WHERE
//! next_due_ms = $2`, the compare-and-swap the database serialises.
//!
//! [`advance_schedule`]: super::ScheduleStore::advance_schedule

/// The schedules' table (the same on both backends).
pub(crate) const SCHEDULES_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentflow_schedules (
    id TEXT PRIMARY KEY,
    flow TEXT NOT NULL,
    tenant TEXT NOT NULL,
    thread TEXT,
    cron TEXT NOT NULL,
    input TEXT NOT NULL,
    owner TEXT NOT NULL,
    grants TEXT NOT NULL,
    missed TEXT NOT NULL,
    paused BIGINT NOT NULL DEFAULT 0,
    next_due_ms BIGINT NOT NULL,
    last_due_ms BIGINT,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    metadata TEXT NOT NULL)";

/// The index the firing loops read by.
pub(crate) const SCHEDULES_INDEX: &str = "CREATE INDEX IF NOT EXISTS agentflow_schedules_due \
    ON agentflow_schedules (next_due_ms) WHERE paused = 0";

const COLUMNS: &str = "id, flow, tenant, thread, cron, input, owner, grants, missed, paused, \
    next_due_ms, last_due_ms, created_ms, updated_ms, metadata";

pub(crate) const INSERT: &str = "INSERT INTO agentflow_schedules (id, flow, tenant, thread, \
    cron, input, owner, grants, missed, paused, next_due_ms, last_due_ms, created_ms, \
    updated_ms, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
    $15)";

pub(crate) fn get() -> String {
    format!("SELECT {COLUMNS} FROM agentflow_schedules WHERE id = $1")
}

/// `$1` tenant, `$2` flow or NULL, `$3` thread or NULL, `$4` limit, `$5` offset.
pub(crate) fn list() -> String {
    format!(
        "SELECT {COLUMNS} FROM agentflow_schedules WHERE tenant = $1 \
         AND ($2 IS NULL OR flow = $2) AND ($3 IS NULL OR thread = $3) \
         ORDER BY created_ms, id LIMIT $4 OFFSET $5"
    )
}

pub(crate) const COUNT: &str = "SELECT COUNT(*) FROM agentflow_schedules WHERE tenant = $1 \
    AND ($2 IS NULL OR flow = $2) AND ($3 IS NULL OR thread = $3)";

pub(crate) const UPDATE: &str = "UPDATE agentflow_schedules SET cron = $2, input = $3, \
    missed = $4, paused = $5, next_due_ms = $6, metadata = $7, updated_ms = $8 WHERE id = $1";

pub(crate) const DELETE: &str = "DELETE FROM agentflow_schedules WHERE id = $1";

pub(crate) fn due() -> String {
    format!(
        "SELECT {COLUMNS} FROM agentflow_schedules WHERE paused = 0 AND next_due_ms <= $1 \
         ORDER BY next_due_ms, id LIMIT $2"
    )
}

pub(crate) const ADVANCE: &str = "UPDATE agentflow_schedules SET next_due_ms = $3, \
    last_due_ms = COALESCE($4, last_due_ms) WHERE id = $1 AND next_due_ms = $2";

/// A stored number as a `u64` (negative ones, written by hand, as 0).
pub(crate) fn u(v: i64) -> u64 {
    v.max(0) as u64
}

/// A `u64` as a stored number (saturating).
pub(crate) fn i(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

/// Implements [`ScheduleStore`](super::ScheduleStore) for a SQL queue type with a field
/// `pool`, whose rows are `$row`.
macro_rules! sql_schedules {
    ($queue:ty, $row:ty) => {
        fn schedule_of(row: &$row) -> Result<$crate::store::Schedule, $crate::store::QueueError> {
            use sqlx::Row;
            use $crate::store::schedule::sql::u;
            let id: String = row
                .try_get("id")
                .map_err($crate::store::queue::sql::db("read a schedule"))?;
            let corrupt = |message: String| $crate::store::QueueError::Corrupt {
                run_id: format!("schedule {id}"),
                message,
            };
            let s = |name: &str| -> Result<String, $crate::store::QueueError> {
                row.try_get::<String, _>(name)
                    .map_err(|e| corrupt(format!("{name}: {e}")))
            };
            let n = |name: &str| -> Result<i64, $crate::store::QueueError> {
                row.try_get::<i64, _>(name)
                    .map_err(|e| corrupt(format!("{name}: {e}")))
            };
            let json = |name: &str| -> Result<serde_json::Value, $crate::store::QueueError> {
                serde_json::from_str(&s(name)?).map_err(|e| corrupt(format!("{name}: {e}")))
            };
            let missed = s("missed")?;
            Ok($crate::store::Schedule {
                flow: s("flow")?,
                tenant: s("tenant")?,
                thread: row
                    .try_get::<Option<String>, _>("thread")
                    .map_err(|e| corrupt(format!("thread: {e}")))?,
                cron: s("cron")?,
                input: json("input")?,
                by: s("owner")?,
                grants: serde_json::from_value(json("grants")?)
                    .map_err(|e| corrupt(format!("grants: {e}")))?,
                missed: $crate::store::MissedPolicy::parse(&missed)
                    .ok_or_else(|| corrupt(format!("unknown missed policy '{missed}'")))?,
                paused: n("paused")? != 0,
                next_due_ms: u(n("next_due_ms")?),
                last_due_ms: row
                    .try_get::<Option<i64>, _>("last_due_ms")
                    .map_err(|e| corrupt(format!("last_due_ms: {e}")))?
                    .map(u),
                created_ms: u(n("created_ms")?),
                updated_ms: u(n("updated_ms")?),
                metadata: json("metadata")?,
                id: id.clone(),
            })
        }

        #[async_trait::async_trait]
        impl $crate::store::ScheduleStore for $queue {
            async fn create_schedule(
                &self,
                schedule: &$crate::store::Schedule,
            ) -> Result<(), $crate::store::QueueError> {
                use $crate::store::schedule::sql::{i, INSERT};
                $crate::store::schedule::check_schedule(schedule)?;
                sqlx::query(INSERT)
                    .bind(&schedule.id)
                    .bind(&schedule.flow)
                    .bind(&schedule.tenant)
                    .bind(&schedule.thread)
                    .bind(&schedule.cron)
                    .bind(schedule.input.to_string())
                    .bind(&schedule.by)
                    .bind(serde_json::json!(schedule.grants).to_string())
                    .bind(schedule.missed.as_str())
                    .bind(i64::from(schedule.paused))
                    .bind(i(schedule.next_due_ms))
                    .bind(schedule.last_due_ms.map(i))
                    .bind(i(schedule.created_ms))
                    .bind(i(schedule.updated_ms))
                    .bind(schedule.metadata.to_string())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| {
                        if $crate::store::queue::sql::is_unique_violation(&e) {
                            $crate::store::QueueError::Duplicate {
                                run_id: schedule.id.clone(),
                            }
                        } else {
                            $crate::store::queue::sql::db("store a schedule")(e)
                        }
                    })?;
                Ok(())
            }

            async fn schedule(
                &self,
                id: &str,
            ) -> Result<Option<$crate::store::Schedule>, $crate::store::QueueError> {
                let row = sqlx::query(&$crate::store::schedule::sql::get())
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("read a schedule"))?;
                row.as_ref().map(schedule_of).transpose()
            }

            async fn list_schedules(
                &self,
                filter: &$crate::store::ScheduleFilter,
                limit: usize,
                offset: usize,
            ) -> Result<Vec<$crate::store::Schedule>, $crate::store::QueueError> {
                use $crate::store::schedule::sql::i;
                let rows = sqlx::query(&$crate::store::schedule::sql::list())
                    .bind(&filter.tenant)
                    .bind(&filter.flow)
                    .bind(&filter.thread)
                    .bind(i(limit as u64))
                    .bind(i(offset as u64))
                    .fetch_all(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("list schedules"))?;
                rows.iter().map(schedule_of).collect()
            }

            async fn count_schedules(
                &self,
                filter: &$crate::store::ScheduleFilter,
            ) -> Result<u64, $crate::store::QueueError> {
                let (n,): (i64,) = sqlx::query_as($crate::store::schedule::sql::COUNT)
                    .bind(&filter.tenant)
                    .bind(&filter.flow)
                    .bind(&filter.thread)
                    .fetch_one(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("count schedules"))?;
                Ok($crate::store::schedule::sql::u(n))
            }

            async fn update_schedule(
                &self,
                schedule: &$crate::store::Schedule,
            ) -> Result<bool, $crate::store::QueueError> {
                use $crate::store::schedule::sql::{i, UPDATE};
                let done = sqlx::query(UPDATE)
                    .bind(&schedule.id)
                    .bind(&schedule.cron)
                    .bind(schedule.input.to_string())
                    .bind(schedule.missed.as_str())
                    .bind(i64::from(schedule.paused))
                    .bind(i(schedule.next_due_ms))
                    .bind(schedule.metadata.to_string())
                    .bind(i(schedule.updated_ms))
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("change a schedule"))?;
                Ok(done.rows_affected() > 0)
            }

            async fn delete_schedule(&self, id: &str) -> Result<bool, $crate::store::QueueError> {
                let done = sqlx::query($crate::store::schedule::sql::DELETE)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("delete a schedule"))?;
                Ok(done.rows_affected() > 0)
            }

            async fn due_schedules(
                &self,
                now_ms: u64,
                limit: usize,
            ) -> Result<Vec<$crate::store::Schedule>, $crate::store::QueueError> {
                use $crate::store::schedule::sql::i;
                let rows = sqlx::query(&$crate::store::schedule::sql::due())
                    .bind(i(now_ms))
                    .bind(i(limit as u64))
                    .fetch_all(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("read the due schedules"))?;
                rows.iter().map(schedule_of).collect()
            }

            async fn advance_schedule(
                &self,
                id: &str,
                from_due_ms: u64,
                next_due_ms: u64,
                fired_due_ms: Option<u64>,
            ) -> Result<bool, $crate::store::QueueError> {
                use $crate::store::schedule::sql::{i, ADVANCE};
                let done = sqlx::query(ADVANCE)
                    .bind(id)
                    .bind(i(from_due_ms))
                    .bind(i(next_due_ms))
                    .bind(fired_due_ms.map(i))
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("move a schedule on"))?;
                Ok(done.rows_affected() > 0)
            }
        }
    };
}

#[cfg(feature = "sqlite")]
mod sqlite {
    sql_schedules!(crate::store::SqliteRunQueue, sqlx::sqlite::SqliteRow);
}
#[cfg(feature = "postgres")]
mod postgres {
    sql_schedules!(crate::store::PostgresRunQueue, sqlx::postgres::PgRow);
}
