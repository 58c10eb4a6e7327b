//! Serves the offline demo desk ([`agentweave_server::demo`]) from a store: the process the
//! scale-out and run-queue tests start several times on one store, and a quick way to try the
//! server.
//!
//! ```text
//! agentweave-server-demo [--worker] STORE_DIR [ADDR]          # a FileStore directory
//! agentweave-server-demo [--worker] --postgres URL [ADDR]     # a PostgreSQL database (feature `postgres`)
//! agentweave-server-demo [--worker] --sqlite PATH [ADDR]      # a SQLite database file (feature `sqlite`)
//! ```
//!
//! ADDR defaults to 127.0.0.1:0 (a free port). With `AGENTFLOW_TOKEN` set it requires that
//! bearer token; without, it runs in dev mode (loopback only). It prints
//! `listening on http://ADDR/` once it accepts connections, and stops when its standard input
//! closes (gracefully: its queue workers finish or hand back their runs).
//!
//! Turns are journaled (`Sync`, the server's default): a turn whose process died is finished
//! by the next process started on the store (or by another one, once its lease ran out).
//! The run queue (`AGENTFLOW_QUEUE=1`, or `--worker`): background runs wait in the store's run
//! queue and every process runs workers that take them. `--worker` serves no API, only
//! `GET /v1/health`. `AGENTFLOW_LEASE_MS` sets the queue's and the threads' lease (default
//! 30000), `AGENTFLOW_QUEUE_WORKERS` the workers per process (default 4).
//!
//! Schedules fire from the run queue's store on the system clock; `AGENTFLOW_SCHEDULE_CLOCK=PATH`
//! reads the schedules' clock from a file instead (its text: milliseconds since the Unix epoch,
//! read at each look; a test moves it for every process at once), and
//! `AGENTFLOW_SCHEDULE_POLL_MS` sets how often a process looks for due schedules (default 1000).
//!
//! `AGENTFLOW_LEDGER=PATH` serves three more flows, `pay`, `approved-pay` (an approval first:
//! interrupt `teller`) and `noted-pay` (a slow `note` tool first): a message `pay ID` makes
//! their `pay` tool append `KEY ID PID` to the ledger file, once per idempotency key (a call run again
//! with the same key appends nothing); `AGENTFLOW_PAY_DELAY_MS` is how long a payment takes
//! (default 0), and each payment's start and end go to `PATH.trace`.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::store::{FileRunQueue, JournalStore, RunQueue};
use agentweave_runtime::{
    tool_fn_with_context, ChatModelAgent, CheckpointStore, FileStore, FlowAgent, Role, ScriptStep,
    ScriptedModel, ThreadStore, ToolContext, TurnRouting,
};
use agentweave_server::{AppState, Auth, QueueOptions};
use serde::Deserialize;
use tokio::io::AsyncReadExt;

const USAGE: &str = "usage: agentweave-server-demo [--worker] STORE_DIR [ADDR] | agentweave-server-demo \
                     [--worker] --postgres URL [ADDR] | agentweave-server-demo [--worker] --sqlite PATH [ADDR]";

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

type Failure = Box<dyn std::error::Error>;

async fn run() -> Result<(), Failure> {
    let mut args = std::env::args().skip(1).peekable();
    let worker = args.next_if_eq("--worker").is_some();
    let queued = worker || std::env::var("AGENTFLOW_QUEUE").is_ok_and(|v| v == "1");
    let store = args.next().ok_or(USAGE)?;
    match store.as_str() {
        "--postgres" => {
            let url = args.next().ok_or(USAGE)?;
            let addr = args.next();
            postgres(&url, queued, worker, addr).await
        }
        "--sqlite" => {
            let path = args.next().ok_or(USAGE)?;
            let addr = args.next();
            sqlite(&path, queued, worker, addr).await
        }
        dir => {
            let queue = match queued {
                true => Some(FileRunQueue::new(std::path::Path::new(dir).join("queue"))?),
                false => None,
            };
            serve(FileStore::new(dir)?, queue, worker, args.next()).await
        }
    }
}

#[cfg(feature = "postgres")]
async fn postgres(
    url: &str,
    queued: bool,
    worker: bool,
    addr: Option<String>,
) -> Result<(), Failure> {
    use agentweave_runtime::store::{PostgresRunQueue, PostgresStore};
    let store = PostgresStore::connect(url).await?;
    let queue = match queued {
        true => Some(PostgresRunQueue::connect(url).await?),
        false => None,
    };
    serve(store, queue, worker, addr).await
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_: &str, _: bool, _: bool, _: Option<String>) -> Result<(), Failure> {
    Err(
        "this agentweave-server-demo was built without PostgreSQL: build it with `--features postgres`"
            .into(),
    )
}

#[cfg(feature = "sqlite")]
async fn sqlite(
    path: &str,
    queued: bool,
    worker: bool,
    addr: Option<String>,
) -> Result<(), Failure> {
    use agentweave_runtime::store::{SqliteRunQueue, SqliteStore};
    let store = SqliteStore::open(path).await?;
    let queue = match queued {
        true => Some(SqliteRunQueue::open(path).await?),
        false => None,
    };
    serve(store, queue, worker, addr).await
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite(_: &str, _: bool, _: bool, _: Option<String>) -> Result<(), Failure> {
    Err(
        "this agentweave-server-demo was built without SQLite: build it with `--features sqlite`"
            .into(),
    )
}

/// A clock read from a file (`AGENTFLOW_SCHEDULE_CLOCK`): its text is the time in milliseconds
/// since the Unix epoch; the epoch itself while the file cannot be read.
struct FileClock(std::path::PathBuf);

impl agentweave_runtime::host::Host for FileClock {
    fn sleep(&self, wait: Duration) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(wait))
    }

    fn now(&self) -> std::time::SystemTime {
        let ms = std::fs::read_to_string(&self.0)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(0);
        std::time::UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn new_id(&self) -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }
}

fn env_ms(name: &str, default: u64) -> Duration {
    Duration::from_millis(
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
    )
}

/// Serves the demo desk (and the `pay` flow with a ledger) from `store` on `addr` until
/// standard input closes; with `queue`, runs background runs from it.
async fn serve<S, Q>(
    store: S,
    queue: Option<Q>,
    worker: bool,
    addr: Option<String>,
) -> Result<(), Failure>
where
    S: ThreadStore + CheckpointStore + JournalStore + Clone,
    Q: RunQueue,
{
    let addr = addr.unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let lease = env_ms("AGENTFLOW_LEASE_MS", 30_000);
    let mut builder = AppState::builder(store.clone())
        .flow("desk", agentweave_server::demo::desk())
        .turn_routing(TurnRouting::Root);
    if let Ok(ledger) = std::env::var("AGENTFLOW_LEDGER") {
        let delay = env_ms("AGENTFLOW_PAY_DELAY_MS", 0);
        builder = builder
            .flow("pay", pay_flow(ledger.clone(), delay, Before::Nothing))
            .flow(
                "approved-pay",
                pay_flow(ledger.clone(), delay, Before::Approval),
            )
            .flow("noted-pay", pay_flow(ledger, delay, Before::Note));
    }
    // Turns are journaled (`Sync`, the server's default) in the store, so a turn whose
    // process died is recovered when a server starts again on the store.
    builder = builder.runners(move |_, runner| runner.lease(lease));
    if let Some(queue) = queue {
        builder = builder.run_queue_with(queue, {
            let mut options = QueueOptions::default();
            options.lease = lease;
            if let Some(n) = std::env::var("AGENTFLOW_QUEUE_WORKERS")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                options.workers = n;
            }
            options.schedule_poll = env_ms("AGENTFLOW_SCHEDULE_POLL_MS", 1_000);
            if let Ok(path) = std::env::var("AGENTFLOW_SCHEDULE_CLOCK") {
                options.schedule_clock =
                    agentweave_server::ScheduleClock::new(FileClock(path.into()));
            }
            options
        });
    }
    let state = match std::env::var("AGENTFLOW_TOKEN") {
        Ok(token) => builder.auth(Auth::bearer(token)),
        Err(_) => builder.dev_mode(),
    }
    .build()?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/", listener.local_addr()?);
    let stdin_closed = async {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    };
    if worker {
        // Health only; the workers run until standard input closes.
        let health = axum::Router::new().route(
            "/v1/health",
            axum::routing::get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        );
        let http = tokio::spawn(async move { axum::serve(listener, health).await });
        agentweave_server::run_workers(state, stdin_closed).await;
        http.abort();
        return Ok(());
    }
    agentweave_server::serve_until(listener, state, stdin_closed).await?;
    Ok(())
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Payment {
    /// The payment's id.
    payment: String,
}

/// The payment a request's last user message names (`pay ID`).
fn payment_of(r: &agentweave_runtime::ChatRequest) -> ScriptStep {
    let id = r
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content.strip_prefix("pay "))
        .unwrap_or("unknown")
        .trim()
        .to_owned();
    ScriptStep::tool_call("pay", serde_json::json!({ "payment": id }))
}

/// Whether the request's last message is the result of tool `name`.
fn after(r: &agentweave_runtime::ChatRequest, name: &str) -> bool {
    r.messages
        .last()
        .is_some_and(|m| m.role == Role::Tool && m.tool_name.as_deref() == Some(name))
}

/// What a pay flow's model asks for before the payment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Before {
    /// Nothing: it pays at once (`pay`).
    Nothing,
    /// An approval: a tool that waits for a human's answer (`approved-pay`, interrupt
    /// `teller`).
    Approval,
    /// A note: a tool that takes twice a payment's time (`noted-pay`: a run cancelled
    /// `after_tools` while it writes stops before the payment).
    Note,
}

/// A pay flow: its `pay` tool appends each payment to `ledger` once per idempotency key;
/// `before` says what the model asks for first.
fn pay_flow(ledger: String, delay: Duration, before: Before) -> FlowAgent {
    let rules = ScriptedModel::rules().when(|r| after(r, "pay"), ScriptStep::text("paid"));
    let model = match before {
        Before::Nothing => rules.otherwise_with(payment_of),
        Before::Approval => rules
            .when_with(|r| after(r, "approve"), payment_of)
            .otherwise(ScriptStep::tool_call("approve", serde_json::json!({}))),
        Before::Note => rules
            .when_with(|r| after(r, "note"), payment_of)
            .otherwise(ScriptStep::tool_call("note", serde_json::json!({}))),
    };
    let ledger = Arc::new(ledger);
    let mut teller = ChatModelAgent::builder("teller", model);
    if before == Before::Note {
        teller = teller.tool(tool_fn_with_context(
            "note",
            "Notes the payment down.",
            move |_: ToolContext, _: serde_json::Value| async move {
                tokio::time::sleep(delay * 2).await;
                Ok::<_, std::io::Error>("noted".to_owned())
            },
        ));
    }
    if before == Before::Approval {
        teller = teller.tool(tool_fn_with_context(
            "approve",
            "Asks a human to approve the payment.",
            |cx: ToolContext, _: serde_json::Value| async move {
                match cx.resume_data() {
                    None => Err(cx.interrupt(serde_json::json!("approve the payment?"))),
                    Some(answer) => Ok(format!("approved: {answer}")),
                }
            },
        ));
    }
    let teller = teller
        .tool(tool_fn_with_context(
            "pay",
            "Pays a payment once.",
            move |cx: ToolContext, p: Payment| {
                let ledger = ledger.clone();
                async move {
                    let key = cx.idempotency_key();
                    let pid = std::process::id();
                    append(
                        &format!("{ledger}.trace"),
                        &format!("start {key} {} {pid}\n", p.payment),
                    )?;
                    tokio::time::sleep(delay).await;
                    let seen = std::fs::read_to_string(&*ledger).unwrap_or_default();
                    let paid = seen
                        .lines()
                        .any(|l| l.split(' ').next() == Some(key.as_str()));
                    if !paid {
                        append(&ledger, &format!("{key} {} {pid}\n", p.payment))?;
                    }
                    append(
                        &format!("{ledger}.trace"),
                        &format!("end {key} {} {pid}\n", p.payment),
                    )?;
                    Ok::<_, std::io::Error>(format!("paid {}", p.payment))
                }
            },
        ))
        .build()
        .expect("teller");
    FlowAgent::new(teller)
}

/// Appends `line` to the file at `path` (one write: lines of processes do not interleave).
fn append(path: &str, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(line.as_bytes())?;
    file.sync_data()
}
