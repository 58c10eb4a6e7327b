//! Schedules (issue 44): cron schedules per flow and per thread, kept in the run queue's store.
//!
//! - the API under principals and tenants: creating needs `chat`, reading `read`; another
//!   tenant's schedule is unknown (404) to read, change and delete; the runs a schedule fires
//!   run as its creator, with the scopes it had at creation;
//! - bad cron expressions, time zones and policies are a typed 400;
//! - pausing stops the firings, resuming starts them again from now, deleting stops them;
//! - after a downtime, `catch_up` runs the latest missed firing once and `skip` runs none;
//! - three servers on one SQLite file (and one PostgreSQL database when `AGENTFLOW_PG_URL` is
//!   set) fire an hourly schedule for 50 hours of a test clock, one of them restarted mid-way:
//!   each hour's run is enqueued exactly once. Twice: as three `agentweave-server-demo` processes
//!   reading their clock from a file the test moves (`AGENTFLOW_SCHEDULE_CLOCK`), one killed
//!   with SIGKILL and started again; and as three server states in this process, each with its
//!   own connection pool, sharing a [`ManualHost`], whose runs are also awaited to their end
//!   (each as the schedule's creator) and raced by explicit passes beside the firing loops.

use crate::common;

use std::time::{Duration, UNIX_EPOCH};

use agentweave_runtime::host::ManualHost;
use agentweave_runtime::store::{InMemoryRunQueue, QueuedRun, RunQueue};
use agentweave_runtime::{FlowAgent, FnAgent, InMemoryStore, Message, MessageStream};
use agentweave_server::{AppState, Auth, Principal, QueueOptions, ScheduleClock, Scope};
use common::*;
use serde_json::{json, Value};

const HOUR_MS: u64 = 3_600_000;
/// 2023-11-14 22:00 UTC: on the hour.
const START_MS: u64 = 472_222 * HOUR_MS;

fn clock() -> ManualHost {
    ManualHost::starting_at(UNIX_EPOCH + Duration::from_millis(START_MS))
}

/// Ana and Rita of tenant acme (Rita only reads), Bob of tenant globex.
fn auth() -> Auth {
    Auth::tokens([
        (
            "ana-token-0123456789",
            Principal::new("ana")
                .tenant("acme")
                .scopes([Scope::Chat, Scope::Read]),
        ),
        (
            "rita-token-0123456789",
            Principal::new("rita").tenant("acme").scopes([Scope::Read]),
        ),
        (
            "bob-token-0123456789",
            Principal::new("bob")
                .tenant("globex")
                .scopes([Scope::Chat, Scope::Read]),
        ),
    ])
}

const ANA: &str = "ana-token-0123456789";
const RITA: &str = "rita-token-0123456789";
const BOB: &str = "bob-token-0123456789";

/// A flow that answers at once.
fn echo() -> FlowAgent {
    FlowAgent::new(FnAgent::new("echo", |cx, _| async move {
        cx.send_stream(MessageStream::from_messages([Message::assistant("done")]));
        Ok(())
    }))
}

fn options(clock: &ManualHost, workers: usize) -> QueueOptions {
    let mut options = QueueOptions::default();
    options.workers = workers;
    options.poll = Duration::from_millis(10);
    options.schedule_poll = Duration::from_millis(5);
    options.schedule_clock = ScheduleClock::new(clock.clone());
    options
}

/// A server serving `echo` over `store` and `queue` on `clock`.
fn state<S>(store: S, queue: impl RunQueue, clock: &ManualHost, workers: usize) -> AppState
where
    S: agentweave_runtime::store::ThreadStore
        + agentweave_runtime::store::CheckpointStore
        + agentweave_runtime::store::JournalStore
        + Clone,
{
    AppState::builder(store)
        .auth(auth())
        .flow("echo", echo())
        .run_queue_with(queue, options(clock, workers))
        .build()
        .unwrap()
}

/// `METHOD base+path` as `token` with `body`: the status and the JSON body (Null if none).
async fn call(
    method: reqwest::Method,
    base: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client()
        .request(method, format!("{base}{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn create(base: &str, token: &str, body: Value) -> (u16, Value) {
    call(
        reqwest::Method::POST,
        base,
        "/v1/flows/echo/schedules",
        token,
        Some(body),
    )
    .await
}

fn run_id(schedule: &str, due_ms: u64) -> String {
    format!("sched-{schedule}-{due_ms}")
}

#[tokio::test]
async fn a_principal_sees_and_changes_only_its_tenants_schedules() {
    let clock = clock();
    let queue = InMemoryRunQueue::new();
    let state = state(InMemoryStore::new(), queue.clone(), &clock, 0);
    let server = spawn(state.clone()).await;
    let base = &server.base;

    // Creating needs `chat`: Rita only reads.
    let (status, body) = create(
        base,
        RITA,
        json!({"cron": "0 * * * *", "message": "report"}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");

    let (status, created) = create(
        base,
        ANA,
        json!({"cron": "0 * * * *", "message": "report", "metadata": {"team": "ops"}}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["by"], "ana");
    assert_eq!(created["missed"], "catch_up", "the default policy");
    assert_eq!(created["next_due_at_ms"], START_MS + HOUR_MS);
    assert_eq!(created["timezone"], "UTC");

    // Rita (same tenant) reads it; Bob (another tenant) does not see it at all.
    let one = format!("/v1/flows/echo/schedules/{id}");
    let (status, seen) = call(reqwest::Method::GET, base, &one, RITA, None).await;
    assert_eq!((status, &seen["id"]), (200, &json!(id)));
    let (status, listed) = call(
        reqwest::Method::GET,
        base,
        "/v1/flows/echo/schedules",
        RITA,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["schedules"][0]["id"], json!(id));
    let (_, theirs) = call(
        reqwest::Method::GET,
        base,
        "/v1/flows/echo/schedules",
        BOB,
        None,
    )
    .await;
    assert_eq!(theirs["total"], 0, "{theirs}");
    for (method, body) in [
        (reqwest::Method::GET, None),
        (reqwest::Method::PATCH, Some(json!({"paused": true}))),
        (reqwest::Method::DELETE, None),
    ] {
        let (status, error) = call(method.clone(), base, &one, BOB, body).await;
        assert_eq!(
            status, 404,
            "{method} of another tenant's schedule: {error}"
        );
        assert_eq!(error["error"]["code"], "unknown_item");
    }
    // Changing needs `chat`.
    let (status, _) = call(
        reqwest::Method::PATCH,
        base,
        &one,
        RITA,
        Some(json!({"paused": true})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = call(reqwest::Method::DELETE, base, &one, RITA, None).await;
    assert_eq!(status, 403);

    // Bob's change did nothing: the schedule still fires, as Ana with Ana's scopes.
    clock.advance(Duration::from_millis(HOUR_MS));
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 1);
    let run = queue
        .get(&run_id(&id, START_MS + HOUR_MS))
        .await
        .unwrap()
        .expect("the firing's run is queued");
    assert_eq!(
        run.thread.split('.').take(2).collect::<Vec<_>>(),
        ["echo", "acme"]
    );
    assert_eq!(run.input["by"], "ana");
    assert_eq!(run.input["grants"], json!(["chat", "read"]));
    assert_eq!(run.input["message"], "report");

    // A schedule of one thread fires on it.
    let (status, threaded) = create(
        base,
        ANA,
        json!({"cron": "30 * * * *", "message": "again", "thread": "desk-1"}),
    )
    .await;
    assert_eq!(status, 201, "{threaded}");
    let threaded = threaded["id"].as_str().unwrap().to_owned();
    clock.advance(Duration::from_millis(HOUR_MS / 2));
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 1);
    let runs = queue.thread_runs("echo.acme.desk-1").await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].run_id,
        run_id(&threaded, START_MS + 3 * HOUR_MS / 2)
    );
    let (_, listed) = call(
        reqwest::Method::GET,
        base,
        "/v1/flows/echo/schedules?thread=desk-1",
        ANA,
        None,
    )
    .await;
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["schedules"][0]["thread"], "desk-1");
}

#[tokio::test]
async fn bad_expressions_zones_and_policies_are_a_400_that_says_what_to_write() {
    let clock = clock();
    let state = state(InMemoryStore::new(), InMemoryRunQueue::new(), &clock, 0);
    let server = spawn(state).await;
    let base = &server.base;
    for (body, says) in [
        (
            json!({"cron": "61 * * * *", "message": "x"}),
            "is not valid",
        ),
        (
            json!({"cron": "every hour", "message": "x"}),
            "is not valid",
        ),
        (json!({"cron": "* * *", "message": "x"}), "is not valid"),
        (json!({"cron": "0 0 30 2 *", "message": "x"}), "never fires"),
        (
            json!({"cron": "0 * * * *", "message": "x", "timezone": "Europe/Paris"}),
            "UTC only",
        ),
        (
            json!({"cron": "0 * * * *", "message": "x", "missed": "sometimes"}),
            "catch_up",
        ),
        (json!({"cron": "0 * * * *", "message": "  "}), "empty"),
        (
            json!({"cron": "0 * * * *", "message": "x", "thread": "a.b"}),
            "thread id",
        ),
    ] {
        let response = client()
            .post(format!("{base}/v1/flows/echo/schedules"))
            .bearer_auth(ANA)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, code, message) = error_code(response).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "bad_request"),
            "{body}: {message}"
        );
        assert!(message.contains(says), "{body}: {message}");
    }
    let (status, _) = call(
        reqwest::Method::POST,
        base,
        "/v1/flows/nope/schedules",
        ANA,
        Some(json!({"cron": "0 * * * *", "message": "x"})),
    )
    .await;
    assert_eq!(status, 404);
    // A bad expression in a change is refused too, and changes nothing.
    let (_, created) = create(base, ANA, json!({"cron": "0 * * * *", "message": "x"})).await;
    let one = format!(
        "/v1/flows/echo/schedules/{}",
        created["id"].as_str().unwrap()
    );
    let (status, _) = call(
        reqwest::Method::PATCH,
        base,
        &one,
        ANA,
        Some(json!({"cron": "0 25 * * *"})),
    )
    .await;
    assert_eq!(status, 400);
    let (_, seen) = call(reqwest::Method::GET, base, &one, ANA, None).await;
    assert_eq!(seen["cron"], "0 * * * *");
}

#[tokio::test]
async fn pausing_stops_the_firings_resuming_starts_them_from_now_deleting_ends_them() {
    let clock = clock();
    let queue = InMemoryRunQueue::new();
    let state = state(InMemoryStore::new(), queue.clone(), &clock, 0);
    let server = spawn(state.clone()).await;
    let base = &server.base;
    let (_, created) = create(
        base,
        ANA,
        json!({"cron": "0 * * * *", "message": "tick", "thread": "t"}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let one = format!("/v1/flows/echo/schedules/{id}");
    let hour = Duration::from_millis(HOUR_MS);
    let due = |h: u64| START_MS + h * HOUR_MS;
    let fired = |queue: InMemoryRunQueue| async move {
        let runs: Vec<QueuedRun> = queue.thread_runs("echo.acme.t").await.unwrap();
        runs.into_iter().map(|r| r.run_id).collect::<Vec<_>>()
    };

    clock.advance(hour);
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 1);
    // Fired once: a second pass at the same time finds nothing due.
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 0);

    let (status, paused) = call(
        reqwest::Method::PATCH,
        base,
        &one,
        ANA,
        Some(json!({"paused": true})),
    )
    .await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["paused"], true);
    assert_eq!(paused["next_due_at_ms"], Value::Null);
    for _ in 0..3 {
        clock.advance(hour);
        assert_eq!(
            agentweave_server::fire_schedules(&state).await.unwrap(),
            0,
            "paused"
        );
    }
    assert_eq!(fired(queue.clone()).await, [run_id(&id, due(1))]);

    // Resumed at hour 4 and a half: the hours it was paused are not run; hour 5 is.
    clock.advance(hour / 2);
    let (_, resumed) = call(
        reqwest::Method::PATCH,
        base,
        &one,
        ANA,
        Some(json!({"paused": false})),
    )
    .await;
    assert_eq!(resumed["next_due_at_ms"], due(5));
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 0);
    clock.advance(hour / 2);
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 1);
    assert_eq!(
        fired(queue.clone()).await,
        [run_id(&id, due(1)), run_id(&id, due(5))]
    );

    let (status, _) = call(reqwest::Method::DELETE, base, &one, ANA, None).await;
    assert_eq!(status, 204);
    let (status, _) = call(reqwest::Method::GET, base, &one, ANA, None).await;
    assert_eq!(status, 404);
    for _ in 0..3 {
        clock.advance(hour);
        assert_eq!(
            agentweave_server::fire_schedules(&state).await.unwrap(),
            0,
            "deleted"
        );
    }
    assert_eq!(fired(queue).await.len(), 2);
}

#[tokio::test]
async fn after_a_downtime_catch_up_runs_the_latest_missed_firing_once_and_skip_runs_none() {
    let clock = clock();
    let queue = InMemoryRunQueue::new();
    let state = state(InMemoryStore::new(), queue.clone(), &clock, 0);
    let server = spawn(state.clone()).await;
    let base = &server.base;
    let (_, caught) = create(
        base,
        ANA,
        json!({"cron": "0 * * * *", "message": "c", "thread": "caught"}),
    )
    .await;
    let (_, skipped) = create(
        base,
        ANA,
        json!({"cron": "0 * * * *", "message": "s", "thread": "skipped", "missed": "skip"}),
    )
    .await;
    assert_eq!(skipped["missed"], "skip");
    let caught = caught["id"].as_str().unwrap().to_owned();
    let ids = |queue: InMemoryRunQueue, thread: &'static str| async move {
        let runs = queue
            .thread_runs(&format!("echo.acme.{thread}"))
            .await
            .unwrap();
        runs.into_iter().map(|r| r.run_id).collect::<Vec<_>>()
    };

    // Nothing fired for 5 hours and a half (every process was down): hours 1 to 5 missed.
    clock.advance(Duration::from_millis(5 * HOUR_MS + HOUR_MS / 2));
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 1);
    assert_eq!(
        ids(queue.clone(), "caught").await,
        [run_id(&caught, START_MS + 5 * HOUR_MS)],
        "catch_up runs the latest missed firing, once"
    );
    assert!(
        ids(queue.clone(), "skipped").await.is_empty(),
        "skip runs none"
    );
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 0);

    // Both go on with hour 6, on time.
    clock.advance(Duration::from_millis(HOUR_MS / 2));
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 2);
    assert_eq!(ids(queue.clone(), "caught").await.len(), 2);
    assert_eq!(ids(queue.clone(), "skipped").await.len(), 1);
    // A firing found less than a minute late is on time, for skip too.
    clock.advance(Duration::from_millis(HOUR_MS + 30_000));
    assert_eq!(agentweave_server::fire_schedules(&state).await.unwrap(), 2);
}

#[tokio::test]
async fn a_server_without_a_queue_says_where_schedules_live() {
    let state = AppState::builder(InMemoryStore::new())
        .auth(auth())
        .flow("echo", echo())
        .build()
        .unwrap();
    let server = spawn(state).await;
    let response = client()
        .post(format!("{}/v1/flows/echo/schedules", server.base))
        .bearer_auth(ANA)
        .json(&json!({"cron": "0 * * * *", "message": "x"}))
        .send()
        .await
        .unwrap();
    let (status, _, message) = error_code(response).await;
    assert_eq!(status, 400);
    assert!(message.contains("run_queue"), "{message}");
}

/// Three servers on one store fire an hourly schedule for 50 hours of the test clock; the
/// third is stopped after hour 20 and started again (new connections) after hour 25. Each
/// hour's run is enqueued once, and every run ends, as Ana.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_servers_on_one_sqlite_file_fire_each_period_exactly_once() {
    let dir = std::env::temp_dir().join(format!(
        "agentflow-schedules-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let path = dir.join("store.db");
    let open = || {
        let path = path.clone();
        async move {
            let store = agentweave_runtime::store::SqliteStore::open(&path)
                .await
                .unwrap();
            let queue = agentweave_runtime::store::SqliteRunQueue::open(&path)
                .await
                .unwrap();
            (store, queue)
        }
    };
    fifty_periods(open).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same on one PostgreSQL database (feature `postgres`; `AGENTFLOW_PG_URL`).
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_servers_on_one_postgres_database_fire_each_period_exactly_once() {
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("schedules").await else {
        return;
    };
    let open = || {
        let url = url.clone();
        async move {
            let store = agentweave_runtime::store::PostgresStore::connect(&url)
                .await
                .unwrap();
            let queue = agentweave_runtime::store::PostgresRunQueue::connect(&url)
                .await
                .unwrap();
            (store, queue)
        }
    };
    fifty_periods(open).await;
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn fifty_periods<S, Q, F, Fut>(open: F)
where
    S: agentweave_runtime::store::ThreadStore
        + agentweave_runtime::store::CheckpointStore
        + agentweave_runtime::store::JournalStore
        + Clone,
    Q: RunQueue + Clone,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = (S, Q)>,
{
    use agentweave_runtime::store::QueueStatus;
    const PERIODS: u64 = 50;
    let clock = clock();
    let (store_a, queue) = open().await;
    let a = state(store_a, queue.clone(), &clock, 1);
    let server = spawn(a.clone()).await;
    let (store_b, queue_b) = open().await;
    let b = state(store_b, queue_b, &clock, 1);
    let workers_b = agentweave_server::Workers::start(&b).unwrap();
    let (store_c, queue_c) = open().await;
    let mut c = Some(state(store_c, queue_c, &clock, 1));
    let mut workers_c = agentweave_server::Workers::start(c.as_ref().unwrap());

    let (status, created) = create(
        &server.base,
        ANA,
        json!({"cron": "0 * * * *", "message": "hourly", "thread": "hourly"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();

    for period in 1..=PERIODS {
        clock.advance(Duration::from_millis(HOUR_MS));
        // The three fire loops race; so do three explicit passes.
        let c_pass = async {
            match &c {
                Some(c) => agentweave_server::fire_schedules(c).await.unwrap(),
                None => 0,
            }
        };
        let (x, y, z) = tokio::join!(
            agentweave_server::fire_schedules(&a),
            agentweave_server::fire_schedules(&b),
            c_pass
        );
        let (x, y) = (x.unwrap(), y.unwrap());
        assert!(
            x + y + z <= 1,
            "period {period} enqueued by {x} + {y} + {z} passes"
        );
        let wanted = run_id(&id, START_MS + period * HOUR_MS);
        let mut waited = 0;
        while queue.get(&wanted).await.unwrap().is_none() {
            assert!(waited < 2_000, "period {period} never fired");
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += 1;
        }
        if period == 20 {
            // The third server stops (its workers hand back what they hold) ...
            workers_c.take().unwrap().stop().await;
            c = None;
        }
        if period == 25 {
            // ... and starts again on the same store, with new connections.
            let (store_c, queue_c) = open().await;
            let restarted = state(store_c, queue_c, &clock, 1);
            workers_c = agentweave_server::Workers::start(&restarted);
            c = Some(restarted);
        }
    }

    // Every run ends; each hour has exactly one.
    let thread = "echo.acme.hourly";
    let mut waited = 0;
    let runs = loop {
        let runs = queue.thread_runs(thread).await.unwrap();
        if runs.iter().all(|r| r.status == QueueStatus::Done) {
            break runs;
        }
        assert!(waited < 6_000, "the schedule's runs did not all end");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    };
    let mut per_due = std::collections::BTreeMap::<u64, usize>::new();
    for run in &runs {
        *per_due
            .entry(run.input["schedule"]["due_ms"].as_u64().unwrap())
            .or_default() += 1;
        assert_eq!(
            run.outcome.as_ref().unwrap()["status"],
            "success",
            "{run:?}"
        );
        assert_eq!(run.input["by"], "ana");
    }
    let expected: std::collections::BTreeMap<u64, usize> =
        (1..=PERIODS).map(|p| (START_MS + p * HOUR_MS, 1)).collect();
    assert_eq!(per_due, expected, "each period fired exactly once");
    assert_eq!(runs.len() as u64, PERIODS);

    workers_b.stop().await;
    if let Some(w) = workers_c {
        w.stop().await;
    }
    drop(server);
}

/// A `agentweave-server-demo` process on `store` (`--sqlite PATH` or `--postgres URL`) with a run
/// queue, its schedules read against the clock in the file `clock`: the process and its base
/// URL.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn demo_process(
    store: &[String],
    clock: &std::path::Path,
) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_flow-server-demo"))
        .args(store)
        .env("AGENTFLOW_TOKEN", TOKEN)
        .env("AGENTFLOW_QUEUE", "1")
        .env("AGENTFLOW_QUEUE_WORKERS", "1")
        .env("AGENTFLOW_LEASE_MS", "2000")
        .env("AGENTFLOW_SCHEDULE_CLOCK", clock)
        .env("AGENTFLOW_SCHEDULE_POLL_MS", "10")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the demo server starts");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    (child, url)
}

/// Three `agentweave-server-demo` processes on one SQLite file fire an hourly schedule for 50 hours
/// of a clock the test moves (a file every process reads); the third is killed (SIGKILL) after
/// hour 20 and started again after hour 25. Each hour's run is enqueued exactly once.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_server_processes_on_one_sqlite_file_fire_each_period_exactly_once() {
    let dir = std::env::temp_dir().join(format!(
        "agentflow-schedule-processes-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.db");
    let queue = agentweave_runtime::store::SqliteRunQueue::open(&path)
        .await
        .unwrap();
    let store = ["--sqlite".to_owned(), path.display().to_string()];
    fifty_periods_in_processes(&store, &queue, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same on one PostgreSQL database (feature `postgres`; `AGENTFLOW_PG_URL`).
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_server_processes_on_one_postgres_database_fire_each_period_exactly_once() {
    let Some(url) =
        agentweave_runtime::testing::fresh_postgres_database("schedule_processes").await
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!(
        "agentflow-schedule-pg-processes-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let queue = agentweave_runtime::store::PostgresRunQueue::connect(&url)
        .await
        .unwrap();
    let store = ["--postgres".to_owned(), url];
    fifty_periods_in_processes(&store, &queue, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three demo processes on `store` (read by the test through `queue`), their clock a file in
/// `dir`: 50 hourly firings, the third process killed after hour 20 and started again after
/// hour 25; each hour's run is enqueued exactly once.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn fifty_periods_in_processes(store: &[String], queue: &dyn RunQueue, dir: &std::path::Path) {
    const PERIODS: u64 = 50;
    let clock = dir.join("clock");
    let set_clock = |ms: u64| {
        // Written whole, then renamed over: a reader never sees half a number.
        let next = dir.join("clock.next");
        std::fs::write(&next, ms.to_string()).unwrap();
        std::fs::rename(&next, &clock).unwrap();
    };
    set_clock(START_MS);
    let (_a, a) = demo_process(store, &clock).await;
    let (_b, _) = demo_process(store, &clock).await;
    let (c, _) = demo_process(store, &clock).await;
    let mut c = Some(c);

    let created: Value = client()
        .post(format!("{a}/v1/flows/desk/schedules"))
        .bearer_auth(TOKEN)
        .json(&json!({"cron": "0 * * * *", "message": "hello", "thread": "hourly"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();

    for period in 1..=PERIODS {
        set_clock(START_MS + period * HOUR_MS);
        let wanted = run_id(&id, START_MS + period * HOUR_MS);
        let mut waited = 0;
        while queue.get(&wanted).await.unwrap().is_none() {
            assert!(waited < 3_000, "period {period} never fired");
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += 1;
        }
        if period == 20 {
            let mut killed = c.take().unwrap();
            killed.kill().await.unwrap();
        }
        if period == 25 {
            c = Some(demo_process(store, &clock).await.0);
        }
    }
    // Every process had time to find the last hour due (and be refused).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs = queue.thread_runs("desk._.hourly").await.unwrap();
    let mut per_due = std::collections::BTreeMap::<u64, usize>::new();
    for run in &runs {
        *per_due
            .entry(run.input["schedule"]["due_ms"].as_u64().unwrap())
            .or_default() += 1;
    }
    let expected: std::collections::BTreeMap<u64, usize> =
        (1..=PERIODS).map(|p| (START_MS + p * HOUR_MS, 1)).collect();
    assert_eq!(per_due, expected, "each period fired exactly once");
    drop(c);
}
