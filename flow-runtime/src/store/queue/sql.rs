//! The SQL run queue, [`SqlRunQueue<DB>`] ([`SqliteRunQueue`](super::SqliteRunQueue) is
//! `SqlRunQueue<Sqlite>`, [`PostgresRunQueue`](super::PostgresRunQueue)
//! `SqlRunQueue<Postgres>`): its statements (`{NOW}` stands for the database's clock in
//! milliseconds, `{SKIP_LOCKED}` for the claim's row-locking clause: the
//! [`Dialect`](crate::store::sql::Dialect)'s), its table, and [`RunQueue`] written once for
//! both databases.
//!
//! The table `agentflow_run_queue` holds one row per run: `seq` its place, `status` one of
//! `pending running done`, `attempt`, `worker` and `lease_until_ms` the claim, `takeover` 1
//! when the last claim took the run from a worker whose lease ran out, `events` the number of
//! its last event, `events_trimmed` 1 once its events were removed, `cancel` a cancel request
//! for its worker. `agentflow_run_events` holds the events, one row per `(run_id, seq)`. Both
//! are created (if missing; columns added to an older table) when a queue opens, apart from
//! the stores' numbered migrations.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Transaction, Type};

use super::{
    check_name, check_new, check_run_id, check_thread, lease_ms, CancelState, Enqueue, NewRun,
    QueueCap, QueueClaim, QueueError, QueueStatus, QueuedEvent, QueuedRun, RunQueue,
};
use crate::store::schedule::sql::{SCHEDULES_INDEX, SCHEDULES_TABLE};
use crate::store::spending::sql::SPENDING_SCHEMA;
use crate::store::sql::{int, write_tx, Dialect, Lock, SqlDatabase};
use crate::store::{ScheduleStore, SpendingStore};

/// The columns every read returns, in this order.
pub(crate) const COLUMNS: &str = "run_id, flow, thread, input, seq, status, attempt, worker, \
    lease_until_ms, created_ms, started_ms, ended_ms, outcome, takeover, note, events, \
    events_trimmed, cancel";

/// The columns added after the table's first shape, for tables made before them (each
/// `ALTER TABLE ... ADD COLUMN` of these is tried when a queue opens).
pub(crate) const ADDED_COLUMNS: &[&str] = &[
    "events BIGINT NOT NULL DEFAULT 0",
    "events_trimmed BIGINT NOT NULL DEFAULT 0",
    "cancel TEXT",
];

/// The runs' events: `(run_id, seq)` each once.
pub(crate) const EVENTS_TABLE: &str = "CREATE TABLE IF NOT EXISTS agentflow_run_events (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq))";

/// The indexes beside the table (the table itself differs by backend: its `seq` column).
pub(crate) const INDEXES: &[&str] = &[
    "CREATE INDEX IF NOT EXISTS agentflow_run_queue_open ON agentflow_run_queue (seq) \
     WHERE status <> 'done'",
    "CREATE INDEX IF NOT EXISTS agentflow_run_queue_thread ON agentflow_run_queue (thread, seq)",
];

/// The table's columns after `seq` (the dialect's `queue_seq`).
pub(crate) const TABLE_COLUMNS: &str = "run_id TEXT NOT NULL UNIQUE,
    flow TEXT NOT NULL,
    thread TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt BIGINT NOT NULL DEFAULT 0,
    worker TEXT,
    lease_until_ms BIGINT NOT NULL DEFAULT 0,
    created_ms BIGINT NOT NULL,
    started_ms BIGINT,
    ended_ms BIGINT,
    outcome TEXT,
    takeover BIGINT NOT NULL DEFAULT 0,
    note TEXT,
    events BIGINT NOT NULL DEFAULT 0,
    events_trimmed BIGINT NOT NULL DEFAULT 0,
    cancel TEXT";

const BUSY: &str = "SELECT run_id FROM agentflow_run_queue WHERE thread = $1 AND status <> 'done' \
    ORDER BY seq LIMIT 1";

const INSERT: &str = "INSERT INTO agentflow_run_queue (run_id, flow, thread, input, status, \
    created_ms) VALUES ($1, $2, $3, $4, 'pending', {NOW}) RETURNING {COLUMNS}";

/// The oldest run that is pending, or running on a lease that ran out, with no earlier run of
/// its thread waiting or running (`{AMONG}`: nothing, or a condition on its flow), among the
/// threads whose group has the fewest runs running.
const CLAIM: &str = "UPDATE agentflow_run_queue SET status = 'running', worker = $1, \
    attempt = attempt + 1, lease_until_ms = {NOW} + $2, started_ms = COALESCE(started_ms, {NOW}), \
    takeover = CASE WHEN status = 'running' THEN 1 ELSE 0 END \
    WHERE seq = (SELECT r.seq FROM agentflow_run_queue r \
        WHERE r.status <> 'done' AND (r.status = 'pending' OR r.lease_until_ms < {NOW}){AMONG} \
        AND NOT EXISTS (SELECT 1 FROM agentflow_run_queue e \
            WHERE e.thread = r.thread AND e.seq < r.seq AND e.status <> 'done') \
        ORDER BY (SELECT COUNT(*) FROM agentflow_run_queue o \
            WHERE o.status = 'running' AND o.lease_until_ms >= {NOW} \
            AND rtrim(o.thread, replace(o.thread, '.', '')) \
                = rtrim(r.thread, replace(r.thread, '.', ''))), r.seq \
        LIMIT 1 {SKIP_LOCKED}) \
    RETURNING {COLUMNS}";

/// [`CLAIM`]'s condition for a claim among the flows in the JSON array `$3`.
const AMONG: &str = " AND r.flow IN ({FLOWS})";

const RESERVE_EVENTS: &str = "UPDATE agentflow_run_queue SET events = events + $3 \
    WHERE run_id = $1 AND attempt = $2 AND status = 'running' RETURNING events";

const INSERT_EVENT: &str =
    "INSERT INTO agentflow_run_events (run_id, seq, kind, data) VALUES ($1, $2, $3, $4)";

const EVENTS_AFTER: &str = "SELECT seq, kind, data FROM agentflow_run_events \
    WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";

const TRIM_EVENTS: &str = "DELETE FROM agentflow_run_events WHERE run_id IN \
    (SELECT run_id FROM agentflow_run_queue WHERE status = 'done' AND events_trimmed = 0 \
    AND ended_ms < $1)";

const TRIM_MARK: &str = "UPDATE agentflow_run_queue SET events_trimmed = 1 \
    WHERE status = 'done' AND events_trimmed = 0 AND ended_ms < $1";

const CANCEL_PENDING: &str = "UPDATE agentflow_run_queue SET status = 'done', \
    ended_ms = {NOW}, outcome = $2, cancel = $3, events = events + 1 \
    WHERE run_id = $1 AND status = 'pending' RETURNING {COLUMNS}";

const CANCEL_RUNNING: &str = "UPDATE agentflow_run_queue SET cancel = $2 \
    WHERE run_id = $1 AND status = 'running' RETURNING {COLUMNS}";

const CANCEL_REQUESTED: &str =
    "SELECT cancel FROM agentflow_run_queue WHERE run_id = $1 AND attempt = $2";

const RENEW: &str = "UPDATE agentflow_run_queue SET lease_until_ms = {NOW} + $3 \
    WHERE run_id = $1 AND attempt = $2 AND status = 'running'";

const NOTE: &str = "UPDATE agentflow_run_queue SET note = $3 \
    WHERE run_id = $1 AND attempt = $2 AND status = 'running'";

const RELEASE: &str = "UPDATE agentflow_run_queue SET status = 'pending', lease_until_ms = 0 \
    WHERE run_id = $1 AND attempt = $2 AND status = 'running'";

const COMPLETE: &str = "UPDATE agentflow_run_queue SET status = 'done', lease_until_ms = 0, \
    ended_ms = {NOW}, outcome = $3, events = events + 1 \
    WHERE run_id = $1 AND attempt = $2 AND status = 'running' RETURNING events";

const GET: &str = "SELECT {COLUMNS} FROM agentflow_run_queue WHERE run_id = $1";

const THREAD: &str = "SELECT {COLUMNS} FROM agentflow_run_queue WHERE thread = $1 ORDER BY seq";

/// Runs not ended whose thread starts with `$1` (`$2`: its length in characters).
const UNFINISHED_WITH_PREFIX: &str = "SELECT COUNT(*) AS n FROM agentflow_run_queue \
    WHERE status <> 'done' AND substr(thread, 1, CAST($2 AS INTEGER)) = $1";

/// The statements of one database, its dialect filled in (serialised, a map of names to
/// statements: what the tests prepare on each database).
#[derive(Debug, serde::Serialize)]
pub(crate) struct QueueStatements {
    pub busy: String,
    pub insert: String,
    pub claim: String,
    pub claim_among: String,
    pub renew: String,
    pub note: String,
    pub release: String,
    pub complete: String,
    pub get: String,
    pub thread: String,
    pub unfinished_with_prefix: String,
    pub reserve_events: String,
    pub insert_event: String,
    pub events_after: String,
    pub trim_events: String,
    pub trim_mark: String,
    pub cancel_pending: String,
    pub cancel_running: String,
    pub cancel_requested: String,
}

impl QueueStatements {
    /// The statements of `dialect`.
    pub fn new(dialect: &Dialect) -> Self {
        let f = |s: &str| dialect.fill(&s.replace("{COLUMNS}", COLUMNS));
        QueueStatements {
            busy: f(BUSY),
            insert: f(INSERT),
            claim: f(&CLAIM.replace("{AMONG}", "")),
            claim_among: f(&CLAIM.replace("{AMONG}", AMONG)),
            renew: f(RENEW),
            note: f(NOTE),
            release: f(RELEASE),
            complete: f(COMPLETE),
            get: f(GET),
            thread: f(THREAD),
            unfinished_with_prefix: f(UNFINISHED_WITH_PREFIX),
            reserve_events: f(RESERVE_EVENTS),
            insert_event: f(INSERT_EVENT),
            events_after: f(EVENTS_AFTER),
            trim_events: f(TRIM_EVENTS),
            trim_mark: f(TRIM_MARK),
            cancel_pending: f(CANCEL_PENDING),
            cancel_running: f(CANCEL_RUNNING),
            cancel_requested: f(CANCEL_REQUESTED),
        }
    }
}

/// A database error as a queue error.
pub(crate) fn db(operation: &'static str) -> impl Fn(sqlx::Error) -> QueueError {
    move |e| QueueError::Database {
        operation,
        source: std::sync::Arc::new(e),
    }
}

/// Whether `e` is a unique-key violation (a run id already queued).
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

/// The advisory lock under which the tables are created (`agentflow-queue`, folded).
const CREATE_LOCK: i64 = 0x6166_7175_6575_6531;

/// The seeds of the queue's named locks: a thread's, and a group of threads' (another seed: a
/// group's name is not a thread's).
const THREAD_SEED: i64 = 7;
const GROUP_SEED: i64 = 11;

/// The run queue in a SQL database: see [`SqliteRunQueue`](super::SqliteRunQueue) and
/// [`PostgresRunQueue`](super::PostgresRunQueue) for how each opens and what it guarantees.
#[derive(Debug)]
pub struct SqlRunQueue<DB: SqlDatabase> {
    pub(crate) pool: Pool<DB>,
    sql: Arc<QueueStatements>,
}

impl<DB: SqlDatabase> Clone for SqlRunQueue<DB> {
    fn clone(&self) -> Self {
        SqlRunQueue {
            pool: self.pool.clone(),
            sql: Arc::clone(&self.sql),
        }
    }
}

/// A stored number as a `u64` (negative ones, written by hand, as 0).
pub(crate) fn u(v: i64) -> u64 {
    v.max(0) as u64
}

/// A JSON value of a row's text column, or the row's corruption.
fn json_of(text: Option<String>, name: &str, run_id: &str) -> Result<Option<Value>, QueueError> {
    let Some(text) = text else { return Ok(None) };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| QueueError::Corrupt {
            run_id: run_id.to_owned(),
            message: format!("{name}: {e}"),
        })
}

impl<DB: SqlDatabase> SqlRunQueue<DB>
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
    /// The queue on `pool`, its tables created if missing (opening processes race to create
    /// them; SQLite may refuse some of them at once, "database is locked", without waiting
    /// for its lock, so there opening tries again for a while).
    pub(crate) async fn on_pool(pool: Pool<DB>) -> Result<Self, QueueError> {
        let sql = Arc::new(QueueStatements::new(&DB::DIALECT));
        let queue = SqlRunQueue { pool, sql };
        let mut pause = Duration::from_millis(2);
        for _ in 0..200 {
            match queue.create_tables().await {
                Err(_) if DB::DIALECT.lock.is_none() => tokio::time::sleep(pause).await,
                done => return done.map(|()| queue),
            }
            pause = (pause * 2).min(Duration::from_millis(100));
        }
        queue.create_tables().await.map(|()| queue)
    }

    /// Creates the tables if missing (and the columns added since a table was made), in one
    /// transaction holding the creation lock.
    async fn create_tables(&self) -> Result<(), QueueError> {
        let err = db("create its table");
        let mut tx = write_tx(&self.pool, &[Lock::Key(CREATE_LOCK)])
            .await
            .map_err(&err)?;
        let seq = DB::DIALECT.queue_seq;
        let table =
            format!("CREATE TABLE IF NOT EXISTS agentflow_run_queue ({seq}, {TABLE_COLUMNS})");
        sqlx::query(&table).execute(&mut *tx).await.map_err(&err)?;
        let present = sqlx::query(DB::DIALECT.queue_columns)
            .fetch_all(&mut *tx)
            .await;
        let present: Vec<String> = present
            .map_err(&err)?
            .iter()
            .map(|row| row.try_get("name"))
            .collect::<Result<_, _>>()
            .map_err(&err)?;
        for column in ADDED_COLUMNS {
            let name = column.split(' ').next().unwrap_or_default();
            if !present.iter().any(|p| p == name) {
                let add = format!("ALTER TABLE agentflow_run_queue ADD COLUMN {column}");
                sqlx::query(&add).execute(&mut *tx).await.map_err(&err)?;
            }
        }
        let tables = [EVENTS_TABLE, SCHEDULES_TABLE, SCHEDULES_INDEX].into_iter();
        for statement in tables.chain(SPENDING_SCHEMA).chain(INDEXES.iter().copied()) {
            sqlx::query(statement)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
        }
        tx.commit().await.map_err(&err)
    }

    /// A write transaction holding the lock of the group of threads starting with `group` (if
    /// given), then thread `thread`'s. Every enqueue within a cap takes its group's lock first,
    /// and no transaction takes a group's lock after a thread's: no two wait on each other.
    /// On PostgreSQL (READ COMMITTED) each statement sees what committed before it, so the
    /// count made after the group's lock is taken sees every run of the group enqueued before.
    async fn write(
        &self,
        thread: &str,
        group: Option<&str>,
    ) -> Result<Transaction<'static, DB>, QueueError> {
        let thread = Lock::Name(thread, THREAD_SEED);
        let tx = match group {
            None => write_tx(&self.pool, &[thread]).await,
            Some(group) => write_tx(&self.pool, &[Lock::Name(group, GROUP_SEED), thread]).await,
        };
        tx.map_err(db("lock a thread of the queue"))
    }

    /// A run from a row of [`COLUMNS`].
    fn queued_run(row: &DB::Row) -> Result<QueuedRun, QueueError> {
        let run_id: String = row.try_get("run_id").map_err(db("read a row"))?;
        let corrupt = |name: &str, e: sqlx::Error| QueueError::Corrupt {
            run_id: run_id.clone(),
            message: format!("{name}: {e}"),
        };
        let int = |name: &str| row.try_get::<i64, _>(name).map_err(|e| corrupt(name, e));
        let some_int = |name: &str| {
            row.try_get::<Option<i64>, _>(name)
                .map_err(|e| corrupt(name, e))
        };
        let some_text = |name: &str| {
            row.try_get::<Option<String>, _>(name)
                .map_err(|e| corrupt(name, e))
        };
        let text = |name: &str| row.try_get::<String, _>(name).map_err(|e| corrupt(name, e));
        let json = |name: &str| json_of(some_text(name)?, name, &run_id);
        let status = text("status")?;
        let status = QueueStatus::parse(&status).ok_or_else(|| QueueError::Corrupt {
            run_id: run_id.clone(),
            message: format!("unknown status '{status}'"),
        })?;
        Ok(QueuedRun {
            flow: text("flow")?,
            thread: text("thread")?,
            input: json("input")?.unwrap_or_default(),
            seq: u(int("seq")?),
            status,
            attempt: u(int("attempt")?),
            worker: some_text("worker")?,
            lease_until_ms: u(int("lease_until_ms")?),
            created_ms: u(int("created_ms")?),
            started_ms: some_int("started_ms")?.map(u),
            ended_ms: some_int("ended_ms")?.map(u),
            outcome: json("outcome")?,
            note: json("note")?,
            events: u(int("events")?),
            events_trimmed: int("events_trimmed")? != 0,
            cancel: json("cancel")?,
            run_id: run_id.clone(),
        })
    }

    /// Adds `run`, within `cap` if given: counted and inserted in one transaction that holds
    /// the group's lock.
    async fn enqueue_row(
        &self,
        run: NewRun,
        mode: Enqueue,
        cap: Option<&QueueCap>,
    ) -> Result<QueuedRun, QueueError> {
        check_new(&run)?;
        if let Some(cap) = cap {
            cap.check(&run)?;
        }
        let mut tx = self
            .write(&run.thread, cap.map(|c| c.prefix.as_str()))
            .await?;
        if mode == Enqueue::IfIdle {
            let busy = sqlx::query(&self.sql.busy).bind(&run.thread[..]);
            let busy = busy
                .fetch_optional(&mut *tx)
                .await
                .map_err(db("check a thread's runs"))?;
            if let Some(row) = busy {
                let run_id = row.try_get("run_id").map_err(db("check a thread's runs"))?;
                return Err(QueueError::Busy {
                    thread: run.thread,
                    run_id,
                });
            }
        }
        if let Some(cap) = cap {
            let n = self.unfinished_in(&mut *tx, &cap.prefix).await?;
            cap.full(n)?;
        }
        let input = run.input.to_string();
        let insert = sqlx::query(&self.sql.insert)
            .bind(&run.run_id[..])
            .bind(&run.flow[..]);
        let insert = insert
            .bind(&run.thread[..])
            .bind(&input[..])
            .fetch_one(&mut *tx)
            .await;
        let row = insert.map_err(|e| match is_unique_violation(&e) {
            true => QueueError::Duplicate {
                run_id: run.run_id.clone(),
            },
            false => db("enqueue a run")(e),
        })?;
        let queued = Self::queued_run(&row)?;
        tx.commit().await.map_err(db("enqueue a run"))?;
        Ok(queued)
    }

    /// The runs not ended whose thread starts with `prefix`.
    async fn unfinished_in<'c, E: Executor<'c, Database = DB>>(
        &self,
        db_: E,
        prefix: &str,
    ) -> Result<usize, QueueError> {
        let count = sqlx::query(&self.sql.unfinished_with_prefix).bind(prefix);
        let count = count
            .bind(prefix.chars().count() as i64)
            .fetch_one(db_)
            .await;
        let n: i64 = count
            .and_then(|row| row.try_get("n"))
            .map_err(db("count runs"))?;
        Ok(u(n) as usize)
    }

    /// Claims the next run (of `flows` only, a JSON array, if given). On a database without
    /// named locks (SQLite) the claim runs in a write transaction, which waits for the
    /// database's write lock instead of failing on it.
    async fn claim_row(
        &self,
        worker: &str,
        lease: Duration,
        flows: Option<&str>,
    ) -> Result<Option<QueueClaim>, QueueError> {
        check_name("worker name", worker)?;
        let err = db("claim a run");
        let statement = if flows.is_some() {
            &self.sql.claim_among
        } else {
            &self.sql.claim
        };
        let claim = sqlx::query(statement)
            .bind(worker)
            .bind(lease_ms(lease) as i64);
        let claim = match flows {
            Some(flows) => claim.bind(flows),
            None => claim,
        };
        let row = if DB::DIALECT.lock.is_some() {
            claim.fetch_optional(&self.pool).await.map_err(&err)?
        } else {
            let mut tx = write_tx(&self.pool, &[]).await.map_err(&err)?;
            let row = claim.fetch_optional(&mut *tx).await.map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            row
        };
        let Some(row) = row else { return Ok(None) };
        let takeover: i64 = row.try_get("takeover").map_err(&err)?;
        let run = Self::queued_run(&row)?;
        Ok(Some(QueueClaim {
            worker: worker.to_owned(),
            attempt: run.attempt,
            takeover: takeover == 1,
            run,
        }))
    }

    /// Runs `statement` (`$1` the run, `$2` the attempt, then `extra`) for a held claim;
    /// [`QueueError::ClaimLost`](QueueError) if it changed nothing, unless `lost_ok`.
    async fn on_claim(
        &self,
        statement: &str,
        claim: &QueueClaim,
        extra: Extra<'_>,
        operation: &'static str,
    ) -> Result<u64, QueueError> {
        let query = sqlx::query(statement)
            .bind(&claim.run.run_id[..])
            .bind(claim.attempt as i64);
        let query = match extra {
            Extra::None => query,
            Extra::Int(n) => query.bind(n),
            Extra::Text(t) => query.bind(t),
        };
        let done = query.execute(&self.pool).await.map_err(db(operation))?;
        Ok(DB::rows_affected(&done))
    }
}

/// What [`SqlRunQueue::on_claim`] binds after the run and the attempt.
enum Extra<'a> {
    None,
    Int(i64),
    Text(&'a str),
}

#[async_trait::async_trait]
impl<DB: SqlDatabase> RunQueue for SqlRunQueue<DB>
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
    async fn enqueue(&self, run: NewRun, mode: Enqueue) -> Result<QueuedRun, QueueError> {
        self.enqueue_row(run, mode, None).await
    }

    async fn enqueue_within(
        &self,
        run: NewRun,
        mode: Enqueue,
        cap: &QueueCap,
    ) -> Result<QueuedRun, QueueError> {
        self.enqueue_row(run, mode, Some(cap)).await
    }

    async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<QueueClaim>, QueueError> {
        self.claim_row(worker, lease, None).await
    }

    async fn claim_among(
        &self,
        worker: &str,
        lease: Duration,
        flows: &[String],
    ) -> Result<Option<QueueClaim>, QueueError> {
        let flows = serde_json::to_string(flows).unwrap_or_else(|_| "[]".into());
        self.claim_row(worker, lease, Some(&flows)).await
    }

    async fn append_events(
        &self,
        claim: &QueueClaim,
        events: Vec<(String, Value)>,
    ) -> Result<u64, QueueError> {
        let err = db("append a run's events");
        let count = events.len() as i64;
        let mut tx = self.write(&claim.run.thread, None).await?;
        let reserve = sqlx::query(&self.sql.reserve_events).bind(&claim.run.run_id[..]);
        let reserve = reserve
            .bind(claim.attempt as i64)
            .bind(count)
            .fetch_optional(&mut *tx)
            .await;
        let Some(row) = reserve.map_err(&err)? else {
            return Err(claim.lost());
        };
        let last: i64 = row.try_get("events").map_err(&err)?;
        for (seq, (kind, data)) in (last - count + 1..).zip(events) {
            let data = data.to_string();
            let insert = sqlx::query(&self.sql.insert_event)
                .bind(&claim.run.run_id[..])
                .bind(seq);
            insert
                .bind(&kind[..])
                .bind(&data[..])
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
        }
        tx.commit().await.map_err(&err)?;
        Ok(u(last))
    }

    async fn events_after(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<QueuedEvent>, QueueError> {
        check_run_id(run_id)?;
        let err = db("read a run's events");
        let read = sqlx::query(&self.sql.events_after)
            .bind(run_id)
            .bind(int(after));
        let rows = read
            .bind(int(limit as u64))
            .fetch_all(&self.pool)
            .await
            .map_err(&err)?;
        rows.iter()
            .map(|row| {
                let seq: i64 = row.try_get("seq").map_err(&err)?;
                let data = json_of(
                    row.try_get("data").map_err(&err)?,
                    &format!("event {seq}"),
                    run_id,
                )?;
                Ok(QueuedEvent {
                    seq: u(seq),
                    kind: row.try_get("kind").map_err(&err)?,
                    data: data.unwrap_or_default(),
                })
            })
            .collect()
    }

    async fn trim_events(&self, ended_before_ms: u64) -> Result<usize, QueueError> {
        let err = db("trim the runs' events");
        let before = int(ended_before_ms);
        let mut tx = self.write("", None).await?;
        sqlx::query(&self.sql.trim_events)
            .bind(before)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        let marked = sqlx::query(&self.sql.trim_mark)
            .bind(before)
            .execute(&mut *tx)
            .await;
        let marked = DB::rows_affected(&marked.map_err(&err)?);
        tx.commit().await.map_err(&err)?;
        Ok(marked as usize)
    }

    async fn cancel(
        &self,
        run_id: &str,
        request: Value,
        outcome: Value,
    ) -> Result<Option<CancelState>, QueueError> {
        check_run_id(run_id)?;
        let err = db("cancel a run");
        let (request, outcome) = (request.to_string(), outcome.to_string());
        let mut tx = self.write("", None).await?;
        let end = sqlx::query(&self.sql.cancel_pending)
            .bind(run_id)
            .bind(&outcome[..]);
        let ended = end
            .bind(&request[..])
            .fetch_optional(&mut *tx)
            .await
            .map_err(&err)?;
        let state = if let Some(row) = ended {
            let run = Self::queued_run(&row)?;
            let done = sqlx::query(&self.sql.insert_event)
                .bind(run_id)
                .bind(run.events as i64);
            done.bind("done")
                .bind(&outcome[..])
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
            CancelState::Ended(run)
        } else {
            let ask = sqlx::query(&self.sql.cancel_running)
                .bind(run_id)
                .bind(&request[..]);
            match ask.fetch_optional(&mut *tx).await.map_err(&err)? {
                Some(row) => CancelState::Requested(Self::queued_run(&row)?),
                None => {
                    let get = sqlx::query(&self.sql.get)
                        .bind(run_id)
                        .fetch_optional(&mut *tx)
                        .await;
                    return match get.map_err(&err)? {
                        None => Ok(None),
                        Some(_) => Err(QueueError::Ended {
                            run_id: run_id.to_owned(),
                        }),
                    };
                }
            }
        };
        tx.commit().await.map_err(&err)?;
        Ok(Some(state))
    }

    async fn cancel_requested(&self, claim: &QueueClaim) -> Result<Option<Value>, QueueError> {
        let err = db("read a cancel request");
        let read = sqlx::query(&self.sql.cancel_requested).bind(&claim.run.run_id[..]);
        let row = read
            .bind(claim.attempt as i64)
            .fetch_optional(&self.pool)
            .await
            .map_err(&err)?;
        let cancel = row
            .map(|row| row.try_get("cancel"))
            .transpose()
            .map_err(&err)?;
        json_of(cancel.flatten(), "cancel", &claim.run.run_id)
    }

    async fn renew(&self, claim: &QueueClaim, lease: Duration) -> Result<(), QueueError> {
        let lease = Extra::Int(lease_ms(lease) as i64);
        match self
            .on_claim(&self.sql.renew, claim, lease, "renew a lease")
            .await?
        {
            0 => Err(claim.lost()),
            _ => Ok(()),
        }
    }

    async fn note(&self, claim: &QueueClaim, note: Value) -> Result<(), QueueError> {
        let note = note.to_string();
        match self
            .on_claim(&self.sql.note, claim, Extra::Text(&note), "note on a run")
            .await?
        {
            0 => Err(claim.lost()),
            _ => Ok(()),
        }
    }

    async fn release(&self, claim: &QueueClaim) -> Result<(), QueueError> {
        self.on_claim(&self.sql.release, claim, Extra::None, "release a run")
            .await?;
        Ok(())
    }

    async fn complete(&self, claim: &QueueClaim, outcome: Value) -> Result<(), QueueError> {
        // The row's end and its `done` event, in one transaction.
        let err = db("complete a run");
        let outcome = outcome.to_string();
        let mut tx = self.write(&claim.run.thread, None).await?;
        let end = sqlx::query(&self.sql.complete).bind(&claim.run.run_id[..]);
        let end = end
            .bind(claim.attempt as i64)
            .bind(&outcome[..])
            .fetch_optional(&mut *tx)
            .await;
        let Some(row) = end.map_err(&err)? else {
            return Err(claim.lost());
        };
        let seq: i64 = row.try_get("events").map_err(&err)?;
        let done = sqlx::query(&self.sql.insert_event)
            .bind(&claim.run.run_id[..])
            .bind(seq);
        done.bind("done")
            .bind(&outcome[..])
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        tx.commit().await.map_err(&err)
    }

    async fn get(&self, run_id: &str) -> Result<Option<QueuedRun>, QueueError> {
        check_run_id(run_id)?;
        let row = sqlx::query(&self.sql.get)
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await;
        row.map_err(db("read a run"))?
            .as_ref()
            .map(Self::queued_run)
            .transpose()
    }

    async fn thread_runs(&self, thread: &str) -> Result<Vec<QueuedRun>, QueueError> {
        check_thread(thread)?;
        let rows = sqlx::query(&self.sql.thread)
            .bind(thread)
            .fetch_all(&self.pool)
            .await;
        rows.map_err(db("list a thread's runs"))?
            .iter()
            .map(Self::queued_run)
            .collect()
    }

    fn schedules(&self) -> Option<&dyn ScheduleStore> {
        Some(self)
    }

    fn spending(&self) -> Option<&dyn SpendingStore> {
        Some(self)
    }

    async fn unfinished_with_prefix(&self, prefix: &str) -> Result<usize, QueueError> {
        self.unfinished_in(&self.pool, prefix).await
    }
}
