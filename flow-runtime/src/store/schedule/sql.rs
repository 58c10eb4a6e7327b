//! The schedules of the SQL queues ([`SqliteRunQueue`](crate::store::SqliteRunQueue),
//! [`PostgresRunQueue`](crate::store::PostgresRunQueue)): the table `agentflow_schedules`
//! beside the queue's, created with it, one row per schedule (`input`, `grants` and `metadata`
//! as JSON text, `paused` 0 or 1), and [`ScheduleStore`] with its statements, written once for
//! both databases (`$n` parameters, which both drivers take). Every change is one statement:
//! [`advance_schedule`] is an `UPDATE ... WHERE next_due_ms = $2`, the compare-and-swap the
//! database serialises.
//!
//! [`advance_schedule`]: super::ScheduleStore::advance_schedule

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::{check_schedule, MissedPolicy, Schedule, ScheduleFilter, ScheduleStore};
use crate::store::queue::sql::{db, is_unique_violation, u, SqlRunQueue};
use crate::store::sql::{int, SqlDatabase};
use crate::store::QueueError;

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
         AND (CAST($2 AS TEXT) IS NULL OR flow = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR thread = $3) \
         ORDER BY created_ms, id LIMIT $4 OFFSET $5"
    )
}

pub(crate) const COUNT: &str = "SELECT COUNT(*) AS n FROM agentflow_schedules WHERE tenant = $1 \
    AND (CAST($2 AS TEXT) IS NULL OR flow = $2) AND (CAST($3 AS TEXT) IS NULL OR thread = $3)";

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

/// A schedule from a row of its columns.
fn schedule_of<R: Row>(row: &R) -> Result<Schedule, QueueError>
where
    for<'q> i64: Decode<'q, R::Database> + Type<R::Database>,
    for<'q> String: Decode<'q, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    let id: String = row.try_get("id").map_err(db("read a schedule"))?;
    let corrupt = |name: &str, e: &dyn std::fmt::Display| QueueError::Corrupt {
        run_id: format!("schedule {id}"),
        message: format!("{name}: {e}"),
    };
    let text = |name: &str| {
        row.try_get::<String, _>(name)
            .map_err(|e| corrupt(name, &e))
    };
    let n = |name: &str| row.try_get::<i64, _>(name).map_err(|e| corrupt(name, &e));
    let json = |name: &str| -> Result<Value, QueueError> {
        serde_json::from_str(&text(name)?).map_err(|e| corrupt(name, &e))
    };
    let missed = text("missed")?;
    Ok(Schedule {
        flow: text("flow")?,
        tenant: text("tenant")?,
        thread: row.try_get("thread").map_err(|e| corrupt("thread", &e))?,
        cron: text("cron")?,
        input: json("input")?,
        by: text("owner")?,
        grants: serde_json::from_value(json("grants")?).map_err(|e| corrupt("grants", &e))?,
        missed: MissedPolicy::parse(&missed)
            .ok_or_else(|| corrupt("missed", &format!("unknown policy '{missed}'")))?,
        paused: n("paused")? != 0,
        next_due_ms: u(n("next_due_ms")?),
        last_due_ms: row
            .try_get::<Option<i64>, _>("last_due_ms")
            .map_err(|e| corrupt("last_due_ms", &e))?
            .map(u),
        created_ms: u(n("created_ms")?),
        updated_ms: u(n("updated_ms")?),
        metadata: json("metadata")?,
        id: id.clone(),
    })
}

#[async_trait::async_trait]
impl<DB: SqlDatabase> ScheduleStore for SqlRunQueue<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    async fn create_schedule(&self, schedule: &Schedule) -> Result<(), QueueError> {
        check_schedule(schedule)?;
        let (input, metadata) = (schedule.input.to_string(), schedule.metadata.to_string());
        let grants = serde_json::json!(schedule.grants).to_string();
        let insert = sqlx::query(INSERT)
            .bind(&schedule.id[..])
            .bind(&schedule.flow[..]);
        let insert = insert
            .bind(&schedule.tenant[..])
            .bind(schedule.thread.as_deref());
        let insert = insert
            .bind(&schedule.cron[..])
            .bind(&input[..])
            .bind(&schedule.by[..]);
        let insert = insert.bind(&grants[..]).bind(schedule.missed.as_str());
        let insert = insert
            .bind(i64::from(schedule.paused))
            .bind(int(schedule.next_due_ms));
        let insert = insert
            .bind(schedule.last_due_ms.map(int))
            .bind(int(schedule.created_ms));
        let insert = insert.bind(int(schedule.updated_ms)).bind(&metadata[..]);
        insert
            .execute(&self.pool)
            .await
            .map_err(|e| match is_unique_violation(&e) {
                true => QueueError::Duplicate {
                    run_id: schedule.id.clone(),
                },
                false => db("store a schedule")(e),
            })?;
        Ok(())
    }

    async fn schedule(&self, id: &str) -> Result<Option<Schedule>, QueueError> {
        let statement = get();
        let row = sqlx::query(&statement)
            .bind(id)
            .fetch_optional(&self.pool)
            .await;
        row.map_err(db("read a schedule"))?
            .as_ref()
            .map(schedule_of)
            .transpose()
    }

    async fn list_schedules(
        &self,
        filter: &ScheduleFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Schedule>, QueueError> {
        let statement = list();
        let list = sqlx::query(&statement)
            .bind(&filter.tenant[..])
            .bind(filter.flow.as_deref());
        let list = list
            .bind(filter.thread.as_deref())
            .bind(int(limit as u64))
            .bind(int(offset as u64));
        let rows = list
            .fetch_all(&self.pool)
            .await
            .map_err(db("list schedules"))?;
        rows.iter().map(schedule_of).collect()
    }

    async fn count_schedules(&self, filter: &ScheduleFilter) -> Result<u64, QueueError> {
        let count = sqlx::query(COUNT)
            .bind(&filter.tenant[..])
            .bind(filter.flow.as_deref());
        let row = count
            .bind(filter.thread.as_deref())
            .fetch_one(&self.pool)
            .await;
        let n: i64 = row
            .and_then(|row| row.try_get("n"))
            .map_err(db("count schedules"))?;
        Ok(u(n))
    }

    async fn update_schedule(&self, schedule: &Schedule) -> Result<bool, QueueError> {
        let (input, metadata) = (schedule.input.to_string(), schedule.metadata.to_string());
        let update = sqlx::query(UPDATE)
            .bind(&schedule.id[..])
            .bind(&schedule.cron[..]);
        let update = update.bind(&input[..]).bind(schedule.missed.as_str());
        let update = update
            .bind(i64::from(schedule.paused))
            .bind(int(schedule.next_due_ms));
        let update = update.bind(&metadata[..]).bind(int(schedule.updated_ms));
        let done = update
            .execute(&self.pool)
            .await
            .map_err(db("change a schedule"))?;
        Ok(DB::rows_affected(&done) > 0)
    }

    async fn delete_schedule(&self, id: &str) -> Result<bool, QueueError> {
        let done = sqlx::query(DELETE).bind(id).execute(&self.pool).await;
        Ok(DB::rows_affected(&done.map_err(db("delete a schedule"))?) > 0)
    }

    async fn due_schedules(&self, now_ms: u64, limit: usize) -> Result<Vec<Schedule>, QueueError> {
        let statement = due();
        let due = sqlx::query(&statement)
            .bind(int(now_ms))
            .bind(int(limit as u64));
        let rows = due
            .fetch_all(&self.pool)
            .await
            .map_err(db("read the due schedules"))?;
        rows.iter().map(schedule_of).collect()
    }

    async fn advance_schedule(
        &self,
        id: &str,
        from_due_ms: u64,
        next_due_ms: u64,
        fired_due_ms: Option<u64>,
    ) -> Result<bool, QueueError> {
        let advance = sqlx::query(ADVANCE).bind(id).bind(int(from_due_ms));
        let advance = advance.bind(int(next_due_ms)).bind(fired_due_ms.map(int));
        let done = advance
            .execute(&self.pool)
            .await
            .map_err(db("move a schedule on"))?;
        Ok(DB::rows_affected(&done) > 0)
    }
}
