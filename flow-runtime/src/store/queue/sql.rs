//! What the SQL queues ([`SqliteRunQueue`](super::SqliteRunQueue),
//! [`PostgresRunQueue`](super::PostgresRunQueue)) share: the statements (`{NOW}` stands for the
//! database's clock in milliseconds, `{LOCK}` for the claim's row-locking clause) and the
//! macro that implements [`RunQueue`](super::RunQueue) with them.
//!
//! The table `agentflow_run_queue` holds one row per run: `seq` its place, `status` one of
//! `pending running done`, `attempt`, `worker` and `lease_until_ms` the claim, `takeover` 1
//! when the last claim took the run from a worker whose lease ran out, `events` the number of
//! its last event, `events_trimmed` 1 once its events were removed, `cancel` a cancel request
//! for its worker. `agentflow_run_events` holds the events, one row per `(run_id, seq)`. Both
//! are created (if missing; columns added to an older table) when a queue opens, apart from
//! the stores' numbered migrations.

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

/// The table's columns after `seq`.
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
/// its thread waiting or running.
const CLAIM: &str = "UPDATE agentflow_run_queue SET status = 'running', worker = $1, \
    attempt = attempt + 1, lease_until_ms = {NOW} + $2, started_ms = COALESCE(started_ms, {NOW}), \
    takeover = CASE WHEN status = 'running' THEN 1 ELSE 0 END \
    WHERE seq = (SELECT r.seq FROM agentflow_run_queue r \
        WHERE r.status <> 'done' AND (r.status = 'pending' OR r.lease_until_ms < {NOW}) \
        AND NOT EXISTS (SELECT 1 FROM agentflow_run_queue e \
            WHERE e.thread = r.thread AND e.seq < r.seq AND e.status <> 'done') \
        ORDER BY (SELECT COUNT(*) FROM agentflow_run_queue o \
            WHERE o.status = 'running' AND o.lease_until_ms >= {NOW} \
            AND rtrim(o.thread, replace(o.thread, '.', '')) \
                = rtrim(r.thread, replace(r.thread, '.', ''))), r.seq \
        LIMIT 1 {LOCK}) \
    RETURNING {COLUMNS}";

/// [`CLAIM`], of the flows in the JSON array `$3` only.
const CLAIM_AMONG: &str = "UPDATE agentflow_run_queue SET status = 'running', worker = $1, \
    attempt = attempt + 1, lease_until_ms = {NOW} + $2, started_ms = COALESCE(started_ms, {NOW}), \
    takeover = CASE WHEN status = 'running' THEN 1 ELSE 0 END \
    WHERE seq = (SELECT r.seq FROM agentflow_run_queue r \
        WHERE r.status <> 'done' AND (r.status = 'pending' OR r.lease_until_ms < {NOW}) \
        AND r.flow IN ({FLOWS}) \
        AND NOT EXISTS (SELECT 1 FROM agentflow_run_queue e \
            WHERE e.thread = r.thread AND e.seq < r.seq AND e.status <> 'done') \
        ORDER BY (SELECT COUNT(*) FROM agentflow_run_queue o \
            WHERE o.status = 'running' AND o.lease_until_ms >= {NOW} \
            AND rtrim(o.thread, replace(o.thread, '.', '')) \
                = rtrim(r.thread, replace(r.thread, '.', ''))), r.seq \
        LIMIT 1 {LOCK}) \
    RETURNING {COLUMNS}";

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
    WHERE status <> 'done' AND substr(thread, 1, $2) = $1";

/// The statements of one backend, its clock and lock clause filled in.
#[derive(Debug)]
pub(crate) struct QueueStatements {
    pub busy: String,
    pub insert: String,
    pub claim: String,
    pub renew: String,
    pub note: String,
    pub release: String,
    pub complete: String,
    pub get: String,
    pub thread: String,
    pub unfinished_with_prefix: String,
    pub claim_among: String,
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
    /// The statements with `now` as the clock, `lock` after the claim's choice and `flows`
    /// the list of flow names read from the JSON array in `$3`.
    pub fn new(now: &str, lock: &str, flows: &str) -> Self {
        let f = |s: &str| {
            s.replace("{COLUMNS}", COLUMNS)
                .replace("{NOW}", now)
                .replace("{LOCK}", lock)
                .replace("{FLOWS}", flows)
        };
        QueueStatements {
            busy: f(BUSY),
            insert: f(INSERT),
            claim: f(CLAIM),
            renew: f(RENEW),
            note: f(NOTE),
            release: f(RELEASE),
            complete: f(COMPLETE),
            get: f(GET),
            thread: f(THREAD),
            unfinished_with_prefix: f(UNFINISHED_WITH_PREFIX),
            claim_among: f(CLAIM_AMONG),
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
pub(crate) fn db(operation: &'static str) -> impl Fn(sqlx::Error) -> super::QueueError {
    move |e| super::QueueError::Database {
        operation,
        source: std::sync::Arc::new(e),
    }
}

/// Whether `e` is a unique-key violation (a run id already queued).
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

/// Implements [`RunQueue`](super::RunQueue) for a SQL queue type with fields `pool` and `sql`
/// (a [`QueueStatements`]), `async fn write(&self, thread: &str)` opening a transaction
/// that holds the thread's lock, `async fn write_within(&self, thread: &str, group:
/// Option<&str>)` the same holding first the lock of the group of threads starting with
/// `group` (what makes a [`QueueCap`](super::QueueCap)'s count and insert one step), and `async fn claim_row(&self, worker, lease_ms, flows)`
/// (`flows`: `None`, or the JSON array of the flows to claim among).
macro_rules! sql_run_queue {
    ($queue:ty, $row:ty) => {
        fn queued_run(row: &$row) -> Result<$crate::store::QueuedRun, $crate::store::QueueError> {
            use sqlx::Row;
            let run_id: String = row
                .try_get("run_id")
                .map_err($crate::store::queue::sql::db("read a row"))?;
            let corrupt = |message: String| $crate::store::QueueError::Corrupt {
                run_id: run_id.clone(),
                message,
            };
            let get_i = |name: &str| -> Result<i64, $crate::store::QueueError> {
                row.try_get::<i64, _>(name)
                    .map_err(|e| corrupt(format!("{name}: {e}")))
            };
            let get_oi = |name: &str| -> Result<Option<i64>, $crate::store::QueueError> {
                row.try_get::<Option<i64>, _>(name)
                    .map_err(|e| corrupt(format!("{name}: {e}")))
            };
            let get_s = |name: &str| -> Result<String, $crate::store::QueueError> {
                row.try_get::<String, _>(name)
                    .map_err(|e| corrupt(format!("{name}: {e}")))
            };
            let status = get_s("status")?;
            let status = $crate::store::QueueStatus::parse(&status)
                .ok_or_else(|| corrupt(format!("unknown status '{status}'")))?;
            let input: serde_json::Value = serde_json::from_str(&get_s("input")?)
                .map_err(|e| corrupt(format!("input: {e}")))?;
            let outcome = match row
                .try_get::<Option<String>, _>("outcome")
                .map_err(|e| corrupt(format!("outcome: {e}")))?
            {
                Some(text) => Some(
                    serde_json::from_str(&text).map_err(|e| corrupt(format!("outcome: {e}")))?,
                ),
                None => None,
            };
            let u = |v: i64| v.max(0) as u64;
            Ok($crate::store::QueuedRun {
                flow: get_s("flow")?,
                thread: get_s("thread")?,
                input,
                seq: u(get_i("seq")?),
                status,
                attempt: u(get_i("attempt")?),
                worker: row
                    .try_get::<Option<String>, _>("worker")
                    .map_err(|e| corrupt(format!("worker: {e}")))?,
                lease_until_ms: u(get_i("lease_until_ms")?),
                created_ms: u(get_i("created_ms")?),
                started_ms: get_oi("started_ms")?.map(u),
                ended_ms: get_oi("ended_ms")?.map(u),
                outcome,
                note: match row
                    .try_get::<Option<String>, _>("note")
                    .map_err(|e| corrupt(format!("note: {e}")))?
                {
                    Some(text) => Some(
                        serde_json::from_str(&text).map_err(|e| corrupt(format!("note: {e}")))?,
                    ),
                    None => None,
                },
                events: u(get_i("events")?),
                events_trimmed: get_i("events_trimmed")? != 0,
                cancel: match row
                    .try_get::<Option<String>, _>("cancel")
                    .map_err(|e| corrupt(format!("cancel: {e}")))?
                {
                    Some(text) => Some(
                        serde_json::from_str(&text).map_err(|e| corrupt(format!("cancel: {e}")))?,
                    ),
                    None => None,
                },
                run_id: run_id.clone(),
            })
        }

        /// Adds `run`, within `cap` if given: counted and inserted in one transaction that
        /// holds the group's lock (`write_within`).
        async fn enqueue_row(
            queue: &$queue,
            run: $crate::store::NewRun,
            mode: $crate::store::Enqueue,
            cap: Option<&$crate::store::QueueCap>,
        ) -> Result<$crate::store::QueuedRun, $crate::store::QueueError> {
            use sqlx::Row as _;
            use $crate::store::queue::sql::db;
            $crate::store::queue::check_new(&run)?;
            if let Some(cap) = cap {
                cap.check(&run)?;
            }
            let mut tx = queue
                .write_within(&run.thread, cap.map(|c| c.prefix.as_str()))
                .await?;
            if mode == $crate::store::Enqueue::IfIdle {
                let busy: Option<(String,)> = sqlx::query_as(&queue.sql.busy)
                    .bind(&run.thread)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db("check a thread's runs"))?;
                if let Some((run_id,)) = busy {
                    return Err($crate::store::QueueError::Busy {
                        thread: run.thread,
                        run_id,
                    });
                }
            }
            if let Some(cap) = cap {
                let row = sqlx::query(&queue.sql.unfinished_with_prefix)
                    .bind(&cap.prefix)
                    .bind(cap.prefix.chars().count() as i32)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db("count runs"))?;
                let n: i64 = row.try_get("n").map_err(db("count runs"))?;
                cap.full(n.max(0) as usize)?;
            }
            let row = sqlx::query(&queue.sql.insert)
                .bind(&run.run_id)
                .bind(&run.flow)
                .bind(&run.thread)
                .bind(run.input.to_string())
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| {
                    if $crate::store::queue::sql::is_unique_violation(&e) {
                        $crate::store::QueueError::Duplicate {
                            run_id: run.run_id.clone(),
                        }
                    } else {
                        db("enqueue a run")(e)
                    }
                })?;
            let queued = queued_run(&row)?;
            tx.commit().await.map_err(db("enqueue a run"))?;
            Ok(queued)
        }

        #[async_trait::async_trait]
        impl $crate::store::RunQueue for $queue {
            async fn enqueue(
                &self,
                run: $crate::store::NewRun,
                mode: $crate::store::Enqueue,
            ) -> Result<$crate::store::QueuedRun, $crate::store::QueueError> {
                enqueue_row(self, run, mode, None).await
            }

            async fn enqueue_within(
                &self,
                run: $crate::store::NewRun,
                mode: $crate::store::Enqueue,
                cap: &$crate::store::QueueCap,
            ) -> Result<$crate::store::QueuedRun, $crate::store::QueueError> {
                enqueue_row(self, run, mode, Some(cap)).await
            }

            async fn claim(
                &self,
                worker: &str,
                lease: std::time::Duration,
            ) -> Result<Option<$crate::store::QueueClaim>, $crate::store::QueueError> {
                use sqlx::Row;
                use $crate::store::queue::sql::db;
                $crate::store::queue::check_name("worker name", worker)?;
                let row = self
                    .claim_row(worker, $crate::store::queue::lease_ms(lease) as i64, None)
                    .await?;
                let Some(row) = row else {
                    return Ok(None);
                };
                let takeover: i64 = row.try_get("takeover").map_err(db("claim a run"))?;
                let run = queued_run(&row)?;
                Ok(Some($crate::store::QueueClaim {
                    worker: worker.to_owned(),
                    attempt: run.attempt,
                    takeover: takeover == 1,
                    run,
                }))
            }

            async fn claim_among(
                &self,
                worker: &str,
                lease: std::time::Duration,
                flows: &[String],
            ) -> Result<Option<$crate::store::QueueClaim>, $crate::store::QueueError> {
                use sqlx::Row;
                use $crate::store::queue::sql::db;
                $crate::store::queue::check_name("worker name", worker)?;
                let flows = serde_json::to_string(flows).unwrap_or_else(|_| "[]".into());
                let row = self
                    .claim_row(
                        worker,
                        $crate::store::queue::lease_ms(lease) as i64,
                        Some(flows),
                    )
                    .await?;
                let Some(row) = row else {
                    return Ok(None);
                };
                let takeover: i64 = row.try_get("takeover").map_err(db("claim a run"))?;
                let run = queued_run(&row)?;
                Ok(Some($crate::store::QueueClaim {
                    worker: worker.to_owned(),
                    attempt: run.attempt,
                    takeover: takeover == 1,
                    run,
                }))
            }

            async fn append_events(
                &self,
                claim: &$crate::store::QueueClaim,
                events: Vec<(String, serde_json::Value)>,
            ) -> Result<u64, $crate::store::QueueError> {
                use $crate::store::queue::sql::db;
                let count = events.len() as i64;
                let mut tx = self.write(&claim.run.thread).await?;
                let last: Option<(i64,)> = sqlx::query_as(&self.sql.reserve_events)
                    .bind(&claim.run.run_id)
                    .bind(claim.attempt as i64)
                    .bind(count)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db("append a run's events"))?;
                let Some((last,)) = last else {
                    return Err(claim.lost());
                };
                for (i, (kind, data)) in events.into_iter().enumerate() {
                    sqlx::query(&self.sql.insert_event)
                        .bind(&claim.run.run_id)
                        .bind(last - count + 1 + i as i64)
                        .bind(kind)
                        .bind(data.to_string())
                        .execute(&mut *tx)
                        .await
                        .map_err(db("append a run's events"))?;
                }
                tx.commit().await.map_err(db("append a run's events"))?;
                Ok(last.max(0) as u64)
            }

            async fn events_after(
                &self,
                run_id: &str,
                after: u64,
                limit: usize,
            ) -> Result<Vec<$crate::store::QueuedEvent>, $crate::store::QueueError> {
                $crate::store::queue::check_run_id(run_id)?;
                let rows: Vec<(i64, String, String)> = sqlx::query_as(&self.sql.events_after)
                    .bind(run_id)
                    .bind(after.min(i64::MAX as u64) as i64)
                    .bind(limit.min(i64::MAX as usize) as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("read a run's events"))?;
                rows.into_iter()
                    .map(|(seq, kind, data)| {
                        Ok($crate::store::QueuedEvent {
                            seq: seq.max(0) as u64,
                            kind,
                            data: serde_json::from_str(&data).map_err(|e| {
                                $crate::store::QueueError::Corrupt {
                                    run_id: run_id.to_owned(),
                                    message: format!("event {seq}: {e}"),
                                }
                            })?,
                        })
                    })
                    .collect()
            }

            async fn trim_events(
                &self,
                ended_before_ms: u64,
            ) -> Result<usize, $crate::store::QueueError> {
                use $crate::store::queue::sql::db;
                let before = ended_before_ms.min(i64::MAX as u64) as i64;
                let mut tx = self.write("").await?;
                sqlx::query(&self.sql.trim_events)
                    .bind(before)
                    .execute(&mut *tx)
                    .await
                    .map_err(db("trim the runs' events"))?;
                let marked = sqlx::query(&self.sql.trim_mark)
                    .bind(before)
                    .execute(&mut *tx)
                    .await
                    .map_err(db("trim the runs' events"))?;
                tx.commit().await.map_err(db("trim the runs' events"))?;
                Ok(marked.rows_affected() as usize)
            }

            async fn cancel(
                &self,
                run_id: &str,
                request: serde_json::Value,
                outcome: serde_json::Value,
            ) -> Result<Option<$crate::store::CancelState>, $crate::store::QueueError> {
                use $crate::store::queue::sql::db;
                $crate::store::queue::check_run_id(run_id)?;
                let err = db("cancel a run");
                let mut tx = self.write("").await?;
                let ended = sqlx::query(&self.sql.cancel_pending)
                    .bind(run_id)
                    .bind(outcome.to_string())
                    .bind(request.to_string())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(&err)?;
                let state = if let Some(row) = ended {
                    let run = queued_run(&row)?;
                    sqlx::query(&self.sql.insert_event)
                        .bind(run_id)
                        .bind(run.events as i64)
                        .bind("done")
                        .bind(outcome.to_string())
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                    $crate::store::CancelState::Ended(run)
                } else {
                    let running = sqlx::query(&self.sql.cancel_running)
                        .bind(run_id)
                        .bind(request.to_string())
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(&err)?;
                    match running {
                        Some(row) => $crate::store::CancelState::Requested(queued_run(&row)?),
                        None => {
                            let row = sqlx::query(&self.sql.get)
                                .bind(run_id)
                                .fetch_optional(&mut *tx)
                                .await
                                .map_err(&err)?;
                            return match row {
                                None => Ok(None),
                                Some(_) => Err($crate::store::QueueError::Ended {
                                    run_id: run_id.to_owned(),
                                }),
                            };
                        }
                    }
                };
                tx.commit().await.map_err(&err)?;
                Ok(Some(state))
            }

            async fn cancel_requested(
                &self,
                claim: &$crate::store::QueueClaim,
            ) -> Result<Option<serde_json::Value>, $crate::store::QueueError> {
                let row: Option<(Option<String>,)> = sqlx::query_as(&self.sql.cancel_requested)
                    .bind(&claim.run.run_id)
                    .bind(claim.attempt as i64)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("read a cancel request"))?;
                match row.and_then(|(c,)| c) {
                    None => Ok(None),
                    Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
                        $crate::store::QueueError::Corrupt {
                            run_id: claim.run.run_id.clone(),
                            message: format!("cancel: {e}"),
                        }
                    }),
                }
            }

            async fn renew(
                &self,
                claim: &$crate::store::QueueClaim,
                lease: std::time::Duration,
            ) -> Result<(), $crate::store::QueueError> {
                let done = sqlx::query(&self.sql.renew)
                    .bind(&claim.run.run_id)
                    .bind(claim.attempt as i64)
                    .bind($crate::store::queue::lease_ms(lease) as i64)
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("renew a lease"))?;
                if done.rows_affected() == 0 {
                    return Err(claim.lost());
                }
                Ok(())
            }

            async fn note(
                &self,
                claim: &$crate::store::QueueClaim,
                note: serde_json::Value,
            ) -> Result<(), $crate::store::QueueError> {
                let done = sqlx::query(&self.sql.note)
                    .bind(&claim.run.run_id)
                    .bind(claim.attempt as i64)
                    .bind(note.to_string())
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("note on a run"))?;
                if done.rows_affected() == 0 {
                    return Err(claim.lost());
                }
                Ok(())
            }

            async fn release(
                &self,
                claim: &$crate::store::QueueClaim,
            ) -> Result<(), $crate::store::QueueError> {
                sqlx::query(&self.sql.release)
                    .bind(&claim.run.run_id)
                    .bind(claim.attempt as i64)
                    .execute(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("release a run"))?;
                Ok(())
            }

            async fn complete(
                &self,
                claim: &$crate::store::QueueClaim,
                outcome: serde_json::Value,
            ) -> Result<(), $crate::store::QueueError> {
                // The row's end and its `done` event, in one transaction.
                let err = $crate::store::queue::sql::db("complete a run");
                let outcome = outcome.to_string();
                let mut tx = self.write(&claim.run.thread).await?;
                let done: Option<(i64,)> = sqlx::query_as(&self.sql.complete)
                    .bind(&claim.run.run_id)
                    .bind(claim.attempt as i64)
                    .bind(&outcome)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(&err)?;
                let Some((seq,)) = done else {
                    return Err(claim.lost());
                };
                sqlx::query(&self.sql.insert_event)
                    .bind(&claim.run.run_id)
                    .bind(seq)
                    .bind("done")
                    .bind(&outcome)
                    .execute(&mut *tx)
                    .await
                    .map_err(&err)?;
                tx.commit().await.map_err(&err)
            }

            async fn get(
                &self,
                run_id: &str,
            ) -> Result<Option<$crate::store::QueuedRun>, $crate::store::QueueError> {
                $crate::store::queue::check_run_id(run_id)?;
                let row = sqlx::query(&self.sql.get)
                    .bind(run_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("read a run"))?;
                row.as_ref().map(queued_run).transpose()
            }

            async fn thread_runs(
                &self,
                thread: &str,
            ) -> Result<Vec<$crate::store::QueuedRun>, $crate::store::QueueError> {
                $crate::store::queue::check_thread(thread)?;
                let rows = sqlx::query(&self.sql.thread)
                    .bind(thread)
                    .fetch_all(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("list a thread's runs"))?;
                rows.iter().map(queued_run).collect()
            }

            fn schedules(&self) -> Option<&dyn $crate::store::ScheduleStore> {
                Some(self)
            }

            fn spending(&self) -> Option<&dyn $crate::store::SpendingStore> {
                Some(self)
            }

            async fn unfinished_with_prefix(
                &self,
                prefix: &str,
            ) -> Result<usize, $crate::store::QueueError> {
                use sqlx::Row as _;
                let row = sqlx::query(&self.sql.unfinished_with_prefix)
                    .bind(prefix)
                    .bind(prefix.chars().count() as i32)
                    .fetch_one(&self.pool)
                    .await
                    .map_err($crate::store::queue::sql::db("count runs"))?;
                let n: i64 = row
                    .try_get("n")
                    .map_err($crate::store::queue::sql::db("count runs"))?;
                Ok(n as usize)
            }
        }
    };
}

pub(crate) use sql_run_queue;
