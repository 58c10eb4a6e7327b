// Its own test binary, not a module of tests/it: a kill harness: it starts copies of this test
// binary as workers and SIGKILLs them mid-way (`--exact` entries by name).
//! The turn lease across OS processes, on every durable backend: the test binary runs itself
//! again as worker processes (`turn_worker`, selected by environment variables).
//!
//! - `*_turn_race`: in each of 10 trials, 2 processes start a turn on one thread at the same
//!   moment. The winner holds the thread until the loser has tried (its tool waits for that),
//!   so the loser always meets a running turn: it gets `ThreadError::Busy` before any model
//!   or tool call. Exactly one tool execution and one record per trial.
//! - `*_turn_takeover`: a worker is killed with SIGKILL inside the tool of its turn; while its
//!   lease runs, the thread is busy; after it ran out, a new turn takes the thread over,
//!   runs, and is recorded as the thread's first turn (the killed turn recorded nothing).
//! - `*_resumed_turn_kills`: in each trial a worker runs a turn of three approval steps (a
//!   turn, then three resumes of it, each interrupted again but the last) and is killed with
//!   SIGKILL at a random point (after a random number of the steps' payments, plus a random
//!   pause); the test process then brings the thread to its end. Every step's result is in the
//!   thread exactly once and paid with one idempotency key: counts printed, 0 doubles, 0
//!   losses, 0 corrupt. `AGENTFLOW_KILL_TRIALS` sets the trials (CI: 200; default 20), run
//!   four at once (`AGENTFLOW_KILL_LANES`; `AGENTFLOW_KILL_SEED` repeats a run's kill points).
//!
//! PostgreSQL tests need `AGENTFLOW_PG_URL` (see `.ci/postgres.sh`).

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::store::RecordStart;
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    tool_fn, ChatModelAgent, FlowAgent, Message, ScriptStep, ScriptedModel, ThreadError,
    TurnOutcome,
};
use support::processes::{
    append, barrier, in_lanes, lanes, lines, runner_on, worker_orders, Dice, Orders, Workers,
};
use support::steps::{audit, drive, step_desk, Audit};

const TRIALS: usize = 10;
const WORKERS: usize = 2;
/// The lease of the turn that is killed: short, so the test waits little for the takeover.
const HELD_LEASE: Duration = Duration::from_secs(5);

/// The lease of the step turns that are killed at random points.
const STEPS_LEASE: Duration = Duration::from_millis(400);

/// What the turn a process runs now is called: its tool logs it.
type Label = Arc<Mutex<String>>;

/// The desk: its model calls the `work` tool, then answers. The tool logs the `label` of the
/// turn to `tool.log`, then waits until the file `release-<label>` exists (with `hang`,
/// forever: the worker will be killed there).
fn desk(work: PathBuf, hang: bool, label: Label) -> FlowAgent {
    let tool = tool_fn("work", "Does the work.", move |_: serde_json::Value| {
        let work = work.clone();
        let what = label.lock().unwrap().clone();
        async move {
            append(&work.join("tool.log"), &what);
            if hang {
                futures::future::pending::<()>().await;
            }
            while !work.join(format!("release-{what}")).exists() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Ok::<_, std::io::Error>("worked".to_string())
        }
    });
    let model = ScriptedModel::rules()
        .after_tool("work", ScriptStep::text("done"))
        .otherwise(ScriptStep::tool_call("work", serde_json::json!({})));
    FlowAgent::new(
        ChatModelAgent::builder("desk", model)
            .tool(tool)
            .build()
            .unwrap(),
    )
}

fn label(text: &str) -> Label {
    Arc::new(Mutex::new(text.to_owned()))
}

/// Runs only as a worker process of the tests below.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_worker() {
    let Some(Orders {
        role,
        backend,
        work,
        me,
    }) = worker_orders()
    else {
        return;
    };
    let log = work.join(format!("worker-{me}.log"));
    match role.as_str() {
        "race" => {
            let current = label("");
            let runner = runner_on(&backend, desk(work.clone(), false, Arc::clone(&current))).await;
            for trial in 0..TRIALS {
                barrier(&work, &format!("go-{trial}"), me, WORKERS);
                let thread = format!("race-{trial}");
                let text = format!("{thread}-from-{me}");
                *current.lock().unwrap() = text.clone();
                match runner
                    .turn(TurnRequest::new(&thread, Message::user(&text)))
                    .await
                {
                    Ok(turn) => {
                        append(&log, &format!("started {thread}"));
                        match turn.finish().await {
                            TurnOutcome::Completed { .. } => {
                                append(&log, &format!("completed {thread}"))
                            }
                            other => append(&log, &format!("error {thread}: {other:?}")),
                        }
                    }
                    Err(ThreadError::Busy { .. }) => append(&log, &format!("busy {thread}")),
                    Err(e) => append(&log, &format!("error {thread}: {e}")),
                }
            }
        }
        "hold" => {
            let runner = RunnerBuilder::from(
                runner_on(&backend, desk(work.clone(), true, label("held-1"))).await,
            )
            .lease(HELD_LEASE)
            .build();
            let turn = runner
                .turn(TurnRequest::new("held", Message::user("held-1")))
                .await
                .unwrap();
            turn.finish().await;
            unreachable!("the tool hangs until this process is killed");
        }
        steps if steps.starts_with("steps-") => {
            let runner = RunnerBuilder::from(
                runner_on(&backend, step_desk(work.join(format!("{steps}.ledger")))).await,
            )
            .lease(STEPS_LEASE)
            .build();
            drive(&runner, steps).await.unwrap();
        }
        other => panic!("unknown role {other}"),
    }
    std::process::exit(0);
}

fn start(role: &str, backend: &str, work: &Path, n: usize) -> Workers {
    Workers::start("turn_worker", role, backend, work, n)
}

fn worker_lines(work: &Path) -> Vec<String> {
    (0..WORKERS)
        .flat_map(|w| lines(&work.join(format!("worker-{w}.log"))))
        .collect()
}

async fn turn_race(backend: &str, work: &Path) {
    let mut workers = start("race", backend, work, WORKERS);
    // Each trial's winner holds its thread until both workers have tried, then is let go.
    for trial in 0..TRIALS {
        let thread = format!("race-{trial}");
        workers.wait_until(|| {
            let tried = worker_lines(work)
                .iter()
                .filter(|l| {
                    [format!("started {thread}"), format!("busy {thread}")].contains(l)
                        || l.starts_with(&format!("error {thread}"))
                })
                .count();
            tried == WORKERS
        });
        for w in 0..WORKERS {
            std::fs::write(work.join(format!("release-{thread}-from-{w}")), b"").unwrap();
        }
    }
    workers.finish();
    let outcomes = worker_lines(work);
    let errors: Vec<&String> = outcomes.iter().filter(|l| l.starts_with("error")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let runner = runner_on(backend, desk(work.to_path_buf(), false, label(""))).await;
    let ran = lines(&work.join("tool.log"));
    for trial in 0..TRIALS {
        let thread = format!("race-{trial}");
        let count = |what: &str| {
            outcomes
                .iter()
                .filter(|l| **l == format!("{what} {thread}"))
                .count()
        };
        assert_eq!(
            (count("started"), count("completed"), count("busy")),
            (1, 1, 1),
            "trial {trial}"
        );
        // The refused turn ran no tool: one execution per trial, the winner's.
        let executions: Vec<&String> = ran
            .iter()
            .filter(|l| l.starts_with(&format!("{thread}-")))
            .collect();
        assert_eq!(executions.len(), 1, "trial {trial}: {executions:?}");
        let records = runner.thread(&thread).records().await.unwrap();
        assert_eq!(records.len(), 1, "trial {trial}");
        let RecordStart::Turn { input } = &records[0].start else {
            panic!("a turn record")
        };
        assert_eq!(&input[0].content, executions[0]);
    }
}

async fn turn_takeover(backend: &str, work: &Path) {
    let runner = runner_on(backend, desk(work.to_path_buf(), false, label("held-2"))).await;
    let mut holder = start("hold", backend, work, 1);
    // The holder is inside the tool: it holds the thread's lease.
    holder.wait_until(|| !lines(&work.join("tool.log")).is_empty());
    // SIGKILL. Its lease still runs: a new turn is refused before it runs anything.
    holder.kill(0);
    match runner
        .turn(TurnRequest::new("held", Message::user("held-2")))
        .await
    {
        Err(ThreadError::Busy { .. }) => {}
        other => panic!("expected Busy, got {:?}", other.map(|_| ())),
    }
    assert_eq!(lines(&work.join("tool.log")), ["held-1"]);
    // After the lease ran out, a new turn takes the thread over.
    std::fs::write(work.join("release-held-2"), b"").unwrap();
    let mut outcome = None;
    for _ in 0..400 {
        match runner
            .turn(TurnRequest::new("held", Message::user("held-2")))
            .await
        {
            Ok(turn) => {
                outcome = Some(turn.finish().await);
                break;
            }
            Err(ThreadError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("{e}"),
        }
    }
    let outcome = outcome.expect("the dead worker's lease was never taken over");
    assert!(
        matches!(outcome, TurnOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(lines(&work.join("tool.log")), ["held-1", "held-2"]);
    // The killed turn recorded nothing; the new one is the thread's first turn.
    let records = runner.thread("held").records().await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].turn, 0);
    let RecordStart::Turn { input } = &records[0].start else {
        panic!("a turn record")
    };
    assert_eq!(input[0].content, "held-2");
}

async fn resumed_turn_kills(backend: &str, work: &Path) {
    let trials: usize = std::env::var("AGENTFLOW_KILL_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let seed = Dice::seed();
    println!("{backend}: AGENTFLOW_KILL_SEED={seed}, {} lanes", lanes());
    let seen = in_lanes(trials, {
        let (backend, work) = (backend.to_owned(), work.to_owned());
        move |trial| {
            let (backend, work) = (backend.clone(), work.clone());
            async move { resumed_turn_trial(&backend, &work, seed, trial).await }
        }
    })
    .await;
    let mut total = Audit::default();
    for (found, _) in &seen {
        total.losses += found.losses;
        total.doubles += found.doubles;
        total.corrupt += found.corrupt;
    }
    println!(
        "{backend}: {trials} trials ({} killed mid-turn): {} doubles, {} losses, {} corrupt",
        seen.iter().filter(|(_, killed)| *killed).count(),
        total.doubles,
        total.losses,
        total.corrupt
    );
    assert_eq!(total, Audit::default());
}

/// One trial: a worker runs the thread's steps and is killed at a random point; this process
/// brings the thread to its end and audits it. Whether the worker was killed mid-turn.
async fn resumed_turn_trial(backend: &str, work: &Path, seed: u64, trial: usize) -> (Audit, bool) {
    let mut dice = Dice::for_trial(seed, trial);
    let thread = format!("steps-{trial}");
    let ledger = work.join(format!("{thread}.ledger"));
    let mut worker = start(&thread, backend, work, 1);
    // Kill after 0 to 3 payments, and a pause of up to 3 ms: before, inside or after a
    // step's writes.
    let payments = dice.below(support::steps::STEPS + 1) as usize;
    let pause = Duration::from_micros(dice.below(3000));
    tokio::task::block_in_place(|| {
        worker.wait_until(|| lines(&ledger).len() >= payments);
        std::thread::sleep(pause);
    });
    let killed_mid_turn = worker.running(0);
    worker.kill(0);
    // Another process (this one) brings the thread to its end once the lease ran out.
    let runner = RunnerBuilder::from(runner_on(backend, step_desk(ledger.clone())).await)
        .lease(STEPS_LEASE)
        .build();
    let mut finished = false;
    for _ in 0..400 {
        match drive(&runner, &thread).await {
            Ok(()) => {
                finished = true;
                break;
            }
            Err(ThreadError::Busy { .. })
            | Err(ThreadError::Checkpoint(agentweave_runtime::CheckpointError::Claimed {
                ..
            })) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("trial {trial}: {e}"),
        }
    }
    assert!(finished, "trial {trial}: the thread was never taken over");
    (audit(&runner, &thread, &ledger).await, killed_mid_turn)
}

support::processes::on_every_store!("turns": turn_race, turn_takeover, resumed_turn_kills);
