// Its own test binary, not a module of tests/it: a kill harness: it starts `agentweave-server-demo`
// processes and SIGKILLs one mid-way, with trial counts CI sets for this binary alone.
//! Every door durable after a crash: for each door that starts or continues a turn (15:
//! `/turns`, background and streamed `/runs`, `/resume`, `/runs` with `resume`,
//! `/runs/{run}/resume` of a cancelled run, the Agent Protocol's background, waited and
//! streamed runs and its `command.resume`, A2A `SendMessage` and `SendStreamingMessage`, an
//! A2A answer to a task waiting for input, AG-UI runs and resumes), a `agentweave-server-demo`
//! process on a SQLite file (turns journaled in `Sync`, the server's default) is SIGKILLed
//! mid-way through a paid tool, at a random point (inside the tool, before or after it wrote
//! its payment, or just after it returned), and started again on the same file. The client
//! then does what a careful client of that protocol does: it reads the thread until the turn
//! it sent is recorded (it never sends it again first), then sends the same request again
//! with the same key (`Idempotency-Key`, A2A `messageId`, AG-UI `runId`).
//!
//! After each trial: the server finished the dead turn by itself (recorded, complete, in order:
//! the user's message, the tool call, its result, the answer); the payment is in the ledger
//! exactly once; the resend ran nothing (one turn in the thread, still one payment) and
//! answered the recorded turn (or, where the protocol has no way to answer a recorded run
//! again, a clear error naming it); nothing is left pending.
//!
//! The same on PostgreSQL (feature `postgres`, a fresh database per trial; skipped with a
//! message when `AGENTFLOW_PG_URL` is not set, unless `AGENTFLOW_REQUIRE_COMPONENTS` is).
//!
//! `AGENTFLOW_DOOR_KILL_TRIALS` sets the trials per door on SQLite (default 2; CI 10; a soak
//! 100), `AGENTFLOW_DOOR_KILL_PG_TRIALS` on PostgreSQL (default 2; CI 3). The trials of a door
//! run in parallel (`AGENTFLOW_DOOR_KILL_PARALLEL`, default 4), each with its own server and
//! store.

#![cfg(any(feature = "sqlite", feature = "postgres"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{read_sse, TOKEN};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the `pay` tool takes (the kill lands somewhere in it, or just after it).
const PAY_MS: u64 = 120;
/// The threads' lease: the dead process's lease runs out this long after its last renewal.
const LEASE_MS: u64 = 600;

/// The doors under test.
#[derive(Debug, Clone, Copy)]
enum Door {
    /// `POST .../turns` (SSE).
    Turns,
    /// `POST .../runs` (background: 202 and the run id).
    BackgroundRuns,
    /// `POST .../runs` with `"stream": true`.
    StreamedRuns,
    /// `POST .../resume`: the answer to the approval the thread waits on, then the payment.
    Resume,
    /// `POST .../runs` with `resume`: the answer as a background run.
    RunsResume,
    /// The Agent Protocol's `runs/wait` with `command.resume`.
    AgentProtocolResume,
    /// A2A `SendMessage` answering the task that waits for input.
    A2aAnswer,
    /// AG-UI `POST /agui/{flow}` with `resume`.
    AguiResume,
    /// `POST .../runs/{run}/resume`: the continuation of a run cancelled at a safe point.
    CancelledRunResume,
    /// The Agent Protocol's `POST /v1/threads/{thread}/runs/wait`.
    AgentProtocolWait,
    /// The Agent Protocol's background `POST /v1/threads/{thread}/runs`.
    AgentProtocolBackground,
    /// The Agent Protocol's `POST /v1/threads/{thread}/runs/stream`.
    AgentProtocolStream,
    /// A2A `SendMessage`.
    A2aSend,
    /// A2A `SendStreamingMessage`.
    A2aStream,
    /// AG-UI `POST /agui/{flow}`.
    Agui,
}

impl Door {
    /// The flow the door's trial pays through.
    fn flow(self) -> &'static str {
        match self {
            Door::CancelledRunResume => "noted-pay",
            _ if self.answers() => "approved-pay",
            _ => "pay",
        }
    }

    /// Whether the thread's turn asks for something before the payment (an approval, a note):
    /// its whole record has one more tool call and result.
    fn asks_first(self) -> bool {
        self.answers() || matches!(self, Door::CancelledRunResume)
    }

    /// Whether the door answers an approval (its thread's turn waits for it; the answer pays).
    fn answers(self) -> bool {
        matches!(
            self,
            Door::Resume
                | Door::RunsResume
                | Door::AgentProtocolResume
                | Door::A2aAnswer
                | Door::AguiResume
        )
    }
}

/// Where a trial's server keeps its store.
#[derive(Debug, Clone)]
enum Backend {
    Sqlite,
    #[allow(dead_code)]
    Postgres,
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small random number generator (xorshift), seeded per trial.
struct Dice(u64);

impl Dice {
    fn new(salt: u64) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
        Dice((nanos ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Starts `agentweave-server-demo` on the store `store` names (`--sqlite PATH`, `--postgres URL`),
/// paying into `ledger`.
async fn server(store: &[String], ledger: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flow-server-demo"))
        .args(store)
        .env("AGENTFLOW_TOKEN", TOKEN)
        .env("AGENTFLOW_LEDGER", ledger)
        .env("AGENTFLOW_LEASE_MS", LEASE_MS.to_string())
        .env("AGENTFLOW_PAY_DELAY_MS", PAY_MS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the demo server starts");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).await.unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    (child, url)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The request the door sends for `payment` on `thread`, with `key`; the response.
async fn send(
    door: Door,
    base: &str,
    thread: &str,
    payment: &str,
    key: &str,
    cancelled: &str,
) -> reqwest::Result<reqwest::Response> {
    let client = reqwest::Client::new();
    let message = format!("pay {payment}");
    let ap_input = json!({
        "assistant_id": "pay",
        "input": { "messages": [{ "role": "user", "content": message }] },
    });
    let a2a = |method: &str| {
        json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": { "message": {
                "messageId": key,
                "contextId": thread,
                "role": "ROLE_USER",
                "parts": [{ "text": message }],
            } },
        })
    };
    let request = match door {
        Door::Turns => client
            .post(format!("{base}/v1/flows/pay/threads/{thread}/turns"))
            .header("Idempotency-Key", format!("\"{key}\""))
            .json(&json!({ "message": message })),
        Door::BackgroundRuns | Door::StreamedRuns => client
            .post(format!("{base}/v1/flows/pay/threads/{thread}/runs"))
            .header("Idempotency-Key", key)
            .json(&json!({
                "message": message,
                "stream": matches!(door, Door::StreamedRuns),
            })),
        Door::Resume => client
            .post(format!(
                "{base}/v1/flows/approved-pay/threads/{thread}/resume"
            ))
            .header("Idempotency-Key", key)
            .json(&json!({ "interrupt_id": "teller", "data": true })),
        Door::CancelledRunResume => client
            .post(format!(
                "{base}/v1/flows/noted-pay/threads/{thread}/runs/{cancelled}/resume"
            ))
            .header("Idempotency-Key", key),
        Door::RunsResume => client
            .post(format!(
                "{base}/v1/flows/approved-pay/threads/{thread}/runs"
            ))
            .header("Idempotency-Key", key)
            .json(&json!({ "resume": { "teller": true } })),
        Door::AgentProtocolResume => client
            .post(format!("{base}/v1/threads/{thread}/runs/wait"))
            .header("Idempotency-Key", key)
            .json(&json!({ "assistant_id": "approved-pay", "command": { "resume": true } })),
        Door::A2aAnswer => client
            .post(format!("{base}/a2a/approved-pay"))
            .json(&json!({
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": { "message": {
                    "messageId": key,
                    "contextId": thread,
                    "taskId": format!("{thread}.0"),
                    "role": "ROLE_USER",
                    "parts": [{ "text": "yes" }],
                } },
            })),
        Door::AguiResume => client
            .post(format!("{base}/agui/approved-pay"))
            .json(&json!({
                "threadId": thread,
                "runId": key,
                "messages": [{ "id": "m1", "role": "user", "content": message }],
                "resume": [{ "interruptId": "teller", "status": "resolved", "payload": true }],
                "tools": [],
                "context": [],
                "state": {},
                "forwardedProps": {},
            })),
        Door::AgentProtocolWait => client
            .post(format!("{base}/v1/threads/{thread}/runs/wait"))
            .header("Idempotency-Key", key)
            .json(&ap_input),
        Door::AgentProtocolBackground => client
            .post(format!("{base}/v1/threads/{thread}/runs"))
            .header("Idempotency-Key", key)
            .json(&ap_input),
        Door::AgentProtocolStream => client
            .post(format!("{base}/v1/threads/{thread}/runs/stream"))
            .header("Idempotency-Key", key)
            .json(&ap_input),
        Door::A2aSend => client
            .post(format!("{base}/a2a/pay"))
            .json(&a2a("SendMessage")),
        Door::A2aStream => client
            .post(format!("{base}/a2a/pay"))
            .json(&a2a("SendStreamingMessage")),
        Door::Agui => client.post(format!("{base}/agui/pay")).json(&json!({
            "threadId": thread,
            "runId": key,
            "messages": [{ "id": "m1", "role": "user", "content": message }],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        })),
    };
    request.bearer_auth(TOKEN).send().await
}

/// The thread as `GET /v1/flows/{flow}/threads/{thread}` answers it (`None`: not yet
/// recorded).
async fn thread_of(base: &str, flow: &str, thread: &str) -> Option<Value> {
    let response = reqwest::Client::new()
        .get(format!("{base}/v1/flows/{flow}/threads/{thread}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .ok()?;
    (response.status() == 200).then_some(())?;
    response.json().await.ok()
}

/// One trial of `door`: kill, restart, read, resend; panics with what went wrong.
async fn trial(door: Door, backend: Backend, n: usize) -> Option<(Duration, bool)> {
    let began = Instant::now();
    let dir = std::env::temp_dir().join(format!(
        "agentflow-door-kill-{}-{door:?}-{backend:?}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store: Vec<String> = match backend {
        Backend::Sqlite => {
            let db: PathBuf = dir.join("store.sqlite");
            vec!["--sqlite".into(), db.display().to_string()]
        }
        Backend::Postgres => vec!["--postgres".into(), postgres_database().await?],
    };
    let flow = door.flow();
    let ledger = dir.join("ledger");
    let trace = PathBuf::from(format!("{}.trace", ledger.display()));
    let thread = format!("t{n}");
    let payment = format!("P{n:03}");
    let key = format!("key-{door:?}-{n}");
    let mut dice = Dice::new(n as u64 + 1);

    // The request, and a kill at a random point of its paid tool (or just after it).
    let (mut first, base) = server(&store, &ledger).await;
    let mut cancelled = String::new();
    if let Door::CancelledRunResume = door {
        // A run cancelled at a safe point (after its note, before the payment); its
        // continuation is the door.
        let client = reqwest::Client::new();
        let runs = format!("{base}/v1/flows/{flow}/threads/{thread}/runs");
        let run: Value = client
            .post(&runs)
            .bearer_auth(TOKEN)
            .json(&json!({ "message": format!("pay {payment}") }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        cancelled = run["run_id"].as_str().unwrap().to_owned();
        // Cancelled once it runs: a cancel that reaches a run still pending has no safe point
        // to wait for, and ends it where it is.
        for _ in 0..1_000 {
            let info: Value = client
                .get(format!("{runs}/{cancelled}"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if info["status"] != "pending" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let stop = client
            .post(format!("{runs}/{cancelled}/cancel"))
            .bearer_auth(TOKEN)
            .json(&json!({ "mode": "after_tools" }))
            .send()
            .await
            .unwrap();
        assert_eq!(stop.status(), 202);
        let outcome: Value = client
            .get(format!("{runs}/{cancelled}/wait"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            (
                outcome["status"].as_str(),
                outcome["at_safe_point"].as_bool()
            ),
            (Some("cancelled"), Some(true)),
            "{outcome}"
        );
        assert!(
            lines(&trace).is_empty(),
            "nothing paid before the continuation"
        );
    }
    if door.answers() {
        // The turn stops for the approval (nothing paid yet); the resume is the door.
        let asked = common::read_sse(
            reqwest::Client::new()
                .post(format!("{base}/v1/flows/{flow}/threads/{thread}/turns"))
                .bearer_auth(TOKEN)
                .json(&json!({ "message": format!("pay {payment}") }))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let done = &asked.last().unwrap().data;
        assert_eq!(done["interrupts"][0]["id"], "teller", "{asked:#?}");
    }
    let sending = {
        let base = base.clone();
        let (thread, payment, key) = (thread.clone(), payment.clone(), key.clone());
        let cancelled = cancelled.clone();
        tokio::spawn(async move {
            // Read what comes until the connection dies with the server.
            if let Ok(response) = send(door, &base, &thread, &payment, &key, &cancelled).await {
                let _ = response.bytes().await;
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !lines(&trace).iter().any(|l| l.starts_with("start ")) {
        assert!(
            Instant::now() < deadline,
            "{door:?} {n}: the tool never started"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(dice.below(PAY_MS + 40))).await;
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    // Whether the kill came after the tool wrote its payment (else inside it, before).
    let paid_before = lines(&ledger)
        .iter()
        .any(|l| l.split(' ').nth(1) == Some(payment.as_str()));
    let _ = sending.await;

    // The server starts again on the same file and finishes the dead turn by itself: the
    // client reads the thread until the turn is recorded, sending nothing.
    let (mut second, base) = server(&store, &ledger).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let recorded = loop {
        if let Some(t) = thread_of(&base, flow, &thread).await {
            if t["turns"] == 1 && t["pending"] == json!([]) {
                break t;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{door:?} {n}: the server did not finish the dead turn by itself"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    check_thread(door, n, &recorded, &payment);

    // The same request, sent again with the same key: nothing runs again.
    let again = send(door, &base, &thread, &payment, &key, &cancelled)
        .await
        .unwrap();
    check_resend(door, n, again, &payment).await;
    let after = thread_of(&base, flow, &thread).await.unwrap();
    assert_eq!(
        after["turns"], 1,
        "{door:?} {n}: the resend ran a second turn"
    );
    check_thread(door, n, &after, &payment);

    let paid: Vec<String> = lines(&ledger)
        .into_iter()
        .filter(|l| l.split(' ').nth(1) == Some(payment.as_str()))
        .collect();
    assert_eq!(
        paid.len(),
        1,
        "{door:?} {n}: paid {} times: {paid:?}",
        paid.len()
    );

    drop(second.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(10), second.wait()).await;
    let _ = second.start_kill();
    let _ = std::fs::remove_dir_all(&dir);
    Some((began.elapsed(), paid_before))
}

/// A fresh PostgreSQL database for one trial (`None`: no server, the test is skipped).
#[cfg(feature = "postgres")]
async fn postgres_database() -> Option<String> {
    agentweave_runtime::testing::fresh_postgres_database("door_kill").await
}

#[cfg(not(feature = "postgres"))]
async fn postgres_database() -> Option<String> {
    None
}

/// The thread holds the whole turn, in order, and waits on nothing.
fn check_thread(door: Door, n: usize, thread: &Value, payment: &str) {
    let messages = thread["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["message"]["role"].as_str().unwrap_or(""))
        .collect();
    let whole: &[&str] = match door.asks_first() {
        // The approval's (or the note's) call and answer come before the payment.
        true => &[
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
        ],
        false => &["user", "assistant", "tool", "assistant"],
    };
    assert_eq!(
        roles, whole,
        "{door:?} {n}: the turn is whole and in order: {messages:#?}"
    );
    let content = |k: usize| &messages[k]["message"]["content"];
    assert_eq!(content(0), &json!(format!("pay {payment}")));
    assert_eq!(content(roles.len() - 2), &json!(format!("paid {payment}")));
    assert_eq!(content(roles.len() - 1), "paid");
    assert_eq!(
        thread["pending"],
        json!([]),
        "{door:?} {n}: nothing is left pending"
    );
}

/// What the resend answered: the recorded turn (or a clear error naming it).
async fn check_resend(door: Door, n: usize, response: reqwest::Response, payment: &str) {
    let status = response.status().as_u16();
    match door {
        Door::Turns | Door::StreamedRuns | Door::Resume => {
            let events = read_sse(response).await;
            let done = &events.last().unwrap().data;
            assert_eq!(done["output"], "paid", "{door:?} {n}: {events:#?}");
            let paid_event = events.iter().any(|e| {
                e.name == "event" && e.data["message"]["content"] == format!("paid {payment}")
            });
            assert!(
                paid_event,
                "{door:?} {n}: the recorded turn's events: {events:#?}"
            );
        }
        Door::BackgroundRuns | Door::RunsResume | Door::CancelledRunResume => {
            assert_eq!(status, 202, "{door:?} {n}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["status"], "success", "{door:?} {n}: {body}");
            assert_eq!(body["outcome"]["output"], "paid", "{door:?} {n}: {body}");
        }
        Door::AgentProtocolWait | Door::AgentProtocolResume => {
            // The thread's values, as the first wait would have answered them.
            assert_eq!(status, 200, "{door:?} {n}");
            let body: Value = response.json().await.unwrap();
            let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
            assert_eq!(
                last.unwrap_or_default()["content"],
                "paid",
                "{door:?} {n}: {body}"
            );
        }
        Door::AgentProtocolBackground => {
            assert_eq!(status, 200, "{door:?} {n}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["status"], "success", "{door:?} {n}: {body}");
        }
        Door::AgentProtocolStream => {
            assert_eq!(status, 409, "{door:?} {n}");
            let body: Value = response.json().await.unwrap();
            let message = body["error"]["message"].as_str().unwrap_or("");
            assert!(
                message.contains("nothing ran again"),
                "{door:?} {n}: {body}"
            );
        }
        Door::A2aSend | Door::A2aAnswer => {
            // The recorded task.
            let body: Value = response.json().await.unwrap();
            let task = &body["result"]["task"];
            assert_eq!(task["id"], format!("t{n}.0"), "{door:?} {n}: {body}");
            assert_eq!(
                task["status"]["state"], "TASK_STATE_COMPLETED",
                "{door:?} {n}: {body}"
            );
        }
        Door::A2aStream => {
            let text = response.text().await.unwrap();
            // A stream answers the error as its one event.
            let json = text
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .unwrap_or(&text);
            let body: Value = serde_json::from_str(json.trim()).unwrap();
            let message = body["error"]["message"].as_str().unwrap_or("");
            assert!(
                message.contains("nothing ran again") && message.contains(&format!("'t{n}.0'")),
                "{door:?} {n}: the resend names the task: {body}"
            );
        }
        Door::Agui | Door::AguiResume => {
            assert_eq!(status, 409, "{door:?} {n}");
            let body: Value = response.json().await.unwrap();
            let message = body["error"]["message"].as_str().unwrap_or("");
            assert!(
                message.contains("nothing ran again"),
                "{door:?} {n}: {body}"
            );
        }
    }
}

/// Runs the trials of `door` on `backend`, some at once; prints the figures.
async fn trials(door: Door, backend: Backend) {
    let count = match backend {
        Backend::Sqlite => env_count("AGENTFLOW_DOOR_KILL_TRIALS", 2),
        Backend::Postgres => env_count("AGENTFLOW_DOOR_KILL_PG_TRIALS", 2),
    };
    let parallel = env_count("AGENTFLOW_DOOR_KILL_PARALLEL", 4).max(1);
    let began = Instant::now();
    let mut longest = Duration::ZERO;
    let mut after_payment = 0;
    for chunk in (0..count).collect::<Vec<_>>().chunks(parallel) {
        let runs = chunk
            .iter()
            .map(|&n| tokio::spawn(trial(door, backend.clone(), n)));
        for run in futures::future::join_all(runs).await {
            match run.expect("a trial panicked") {
                Some((took, paid_before)) => {
                    longest = longest.max(took);
                    after_payment += usize::from(paid_before);
                }
                None => return, // no PostgreSQL server: skipped (said so above)
            }
        }
    }
    eprintln!(
        "{door:?}: {count} trials on {backend:?} (killed {} times inside the tool before its \
         payment, {after_payment} after it), {count} payments each made once, 0 twice, 0 lost; \
         {:.1} s in all (longest trial {:.1} s)",
        count - after_payment,
        began.elapsed().as_secs_f64(),
        longest.as_secs_f64()
    );
}

/// A test per door and store.
macro_rules! door_tests {
    ($($door:ident => $sqlite:ident, $postgres:ident;)*) => {$(
        #[cfg(feature = "sqlite")]
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $sqlite() {
            trials(Door::$door, Backend::Sqlite).await;
        }

        #[cfg(feature = "postgres")]
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $postgres() {
            trials(Door::$door, Backend::Postgres).await;
        }
    )*};
}

door_tests! {
    Turns => turns_survive_a_kill_on_sqlite, turns_survive_a_kill_on_postgres;
    BackgroundRuns => background_runs_survive_a_kill_on_sqlite, background_runs_survive_a_kill_on_postgres;
    StreamedRuns => streamed_runs_survive_a_kill_on_sqlite, streamed_runs_survive_a_kill_on_postgres;
    Resume => resumes_survive_a_kill_on_sqlite, resumes_survive_a_kill_on_postgres;
    AgentProtocolWait => agent_protocol_waited_runs_survive_a_kill_on_sqlite, agent_protocol_waited_runs_survive_a_kill_on_postgres;
    AgentProtocolBackground => agent_protocol_background_runs_survive_a_kill_on_sqlite, agent_protocol_background_runs_survive_a_kill_on_postgres;
    AgentProtocolStream => agent_protocol_streamed_runs_survive_a_kill_on_sqlite, agent_protocol_streamed_runs_survive_a_kill_on_postgres;
    A2aSend => a2a_messages_survive_a_kill_on_sqlite, a2a_messages_survive_a_kill_on_postgres;
    A2aStream => a2a_streamed_messages_survive_a_kill_on_sqlite, a2a_streamed_messages_survive_a_kill_on_postgres;
    Agui => agui_runs_survive_a_kill_on_sqlite, agui_runs_survive_a_kill_on_postgres;
    RunsResume => background_resumes_survive_a_kill_on_sqlite, background_resumes_survive_a_kill_on_postgres;
    AgentProtocolResume => agent_protocol_resumes_survive_a_kill_on_sqlite, agent_protocol_resumes_survive_a_kill_on_postgres;
    A2aAnswer => a2a_answers_survive_a_kill_on_sqlite, a2a_answers_survive_a_kill_on_postgres;
    AguiResume => agui_resumes_survive_a_kill_on_sqlite, agui_resumes_survive_a_kill_on_postgres;
    CancelledRunResume => cancelled_run_resumes_survive_a_kill_on_sqlite, cancelled_run_resumes_survive_a_kill_on_postgres;
}
