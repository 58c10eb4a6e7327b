// Its own test binary, not a module of tests/it: a kill harness: it starts copies of this test
// binary as workers and SIGKILLs them mid-way (`--exact` entries by name).
//! The ledger crash test across OS processes, on every durable backend: in each trial a
//! worker process runs one turn of the paying desk (four model calls, two paying tools that
//! append to a ledger file keyed by their idempotency key, a transfer, a sequential workflow
//! step), journaled in `Sync` mode, and is killed with SIGKILL at a random point (after a
//! random number of payments and a random pause: during a model call, inside a tool, between
//! a tool's end and its step's append, during an append). This process then recovers the turn
//! ([`Runner::recover`](agentweave_runtime::Runner::recover)) once the lease ran out.
//!
//! After each trial: the turn completed; the ledger holds each payment exactly once; the
//! thread's record equals an uninterrupted run's; the journal reads whole (no torn step) and
//! equals the record. Counts printed: 0 doubles, 0 losses, 0 corrupt.
//! `AGENTFLOW_KILL_TRIALS` sets the trials (CI: 200; default 10), run four at once
//! (`AGENTFLOW_KILL_LANES`; `AGENTFLOW_KILL_SEED` repeats a run's kill points).
//!
//! PostgreSQL tests need `AGENTFLOW_PG_URL` (see `.ci/postgres.sh`).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::store::ThreadRecord;
use agentweave_runtime::RunnerBuilder;
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    turn_journal_id, Durability, InMemoryStore, Message, RecoverError, Runner, TurnOutcome,
};
use support::ledger::{paid_once, paying_desk};
use support::processes::{
    in_lanes, lanes, lines, worker_orders, Dice, NamedStore, Orders, Workers,
};

/// The lease of the turns that are killed: short, so the recovery waits little.
const LEASE: Duration = Duration::from_millis(300);
/// The pause inside each paying tool, before and after its payment.
const PAUSE: Duration = Duration::from_millis(1);

async fn runner_on(backend: &str, ledger: &Path) -> Runner {
    RunnerBuilder::from(
        NamedStore::open(backend)
            .await
            .journaled_runner(paying_desk(ledger.to_path_buf(), PAUSE, true)),
    )
    .durability(Durability::Sync)
    .lease(LEASE)
    .build()
}

/// Runs only as a worker process of the tests below: one turn of thread `ROLE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_worker() {
    let Some(Orders {
        role,
        backend,
        work,
        ..
    }) = worker_orders()
    else {
        return;
    };
    let runner = runner_on(&backend, &work.join(format!("{role}.ledger"))).await;
    let turn = runner
        .turn(TurnRequest::new(&role, Message::user("settle my order")))
        .await
        .unwrap();
    turn.finish().await;
    std::process::exit(0);
}

/// What the trials found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Audit {
    /// Payments missing from the ledger, or turns that did not complete.
    losses: usize,
    /// Payments made twice.
    doubles: usize,
    /// Records that differ from an uninterrupted run's, journals that do not read whole or
    /// differ from the record.
    corrupt: usize,
}

fn timeless(mut record: ThreadRecord) -> ThreadRecord {
    record.at_ms = 0;
    record
}

/// The record of an uninterrupted turn.
async fn reference(work: &Path) -> ThreadRecord {
    let store = InMemoryStore::new();
    let runner = Runner::builder(paying_desk(work.join("reference.ledger"), PAUSE, true))
        .stores(store.clone())
        .journal_store(store)
        .durability(Durability::Sync)
        .build();
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("settle my order")))
        .await
        .unwrap();
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
    timeless(runner.thread("t").records().await.unwrap().remove(0))
}

/// Brings `thread` to its end after its worker was killed: recovers its turn, or (if the
/// worker died before the turn started, or after it was recorded) finds it recorded or starts
/// it.
async fn bring_to_end(runner: &Runner, thread: &str, trial: usize) -> Option<TurnOutcome> {
    for _ in 0..1000 {
        match runner.recover(thread).await {
            Ok(Some(turn)) => return Some(turn.finish().await),
            Ok(None) => {
                if !runner.thread(thread).records().await.unwrap().is_empty() {
                    return None;
                }
                // Killed before the turn marked its start: nothing ran; the caller retries.
                match runner
                    .turn(TurnRequest::new(thread, Message::user("settle my order")))
                    .await
                {
                    Ok(turn) => return Some(turn.finish().await),
                    Err(agentweave_runtime::ThreadError::Busy { .. }) => {}
                    Err(e) => panic!("trial {trial}: {e}"),
                }
            }
            Err(RecoverError::Leased { .. }) => {}
            Err(e) => panic!("trial {trial}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("trial {trial}: the dead worker's lease never ran out");
}

/// What one trial saw.
#[derive(Default)]
struct Trial {
    audit: Audit,
    killed_mid_turn: bool,
    recovered: bool,
}

async fn ledger_kills(backend: &str, work: &Path) {
    let trials: usize = std::env::var("AGENTFLOW_KILL_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let reference = Arc::new(reference(work).await);
    let seed = Dice::seed();
    println!("{backend}: AGENTFLOW_KILL_SEED={seed}, {} lanes", lanes());
    let (backend, work) = (backend.to_owned(), work.to_owned());
    let seen = in_lanes(trials, {
        let backend = backend.clone();
        move |trial| {
            let (backend, work, reference) = (backend.clone(), work.clone(), reference.clone());
            async move { ledger_trial(&backend, &work, &reference, seed, trial).await }
        }
    })
    .await;
    let mut total = Audit::default();
    for t in &seen {
        total.losses += t.audit.losses;
        total.doubles += t.audit.doubles;
        total.corrupt += t.audit.corrupt;
    }
    println!(
        "{backend}: {trials} trials ({} killed mid-turn, {} turns recovered or retried): {} \
         doubles, {} losses, {} corrupt",
        seen.iter().filter(|t| t.killed_mid_turn).count(),
        seen.iter().filter(|t| t.recovered).count(),
        total.doubles,
        total.losses,
        total.corrupt
    );
    assert_eq!(total, Audit::default());
}

/// One trial: a worker runs the turn and is killed at a random point; this process brings the
/// turn to its end and audits the ledger, the record and the journal.
async fn ledger_trial(
    backend: &str,
    work: &Path,
    reference: &ThreadRecord,
    seed: u64,
    trial: usize,
) -> Trial {
    let mut dice = Dice::for_trial(seed, trial);
    let mut seen = Trial::default();
    let thread = format!("pay-{trial}");
    let ledger = work.join(format!("{thread}.ledger"));
    let calls = support::ledger::calls_of(&ledger);
    let mut worker = Workers::start("recover_worker", &thread, backend, work, 1);
    // Kill after 0 to 2 tool executions had begun, and a pause of up to 4 ms: before,
    // inside or after a tool, a model call or a step's append.
    let started = dice.below(3) as usize;
    let pause = Duration::from_micros(dice.below(4000));
    tokio::task::block_in_place(|| {
        worker.wait_until(|| lines(&calls).len() >= started);
        std::thread::sleep(pause);
    });
    seen.killed_mid_turn = worker.running(0);
    worker.kill(0);
    let runner = runner_on(backend, &ledger).await;
    match bring_to_end(&runner, &thread, trial).await {
        None => {}
        Some(TurnOutcome::Completed { .. }) => seen.recovered = true,
        Some(other) => {
            println!("trial {trial}: the turn did not complete: {other:?}");
            seen.audit.losses += 1;
        }
    }
    // Each payment exactly once.
    let (pays, refunds) = paid_once(&ledger);
    for n in [pays, refunds] {
        match n {
            0 => seen.audit.losses += 1,
            1 => {}
            more => seen.audit.doubles += more - 1,
        }
    }
    // The record equals an uninterrupted run's; the journal reads whole and is the record.
    let records = runner.thread(&thread).records().await.unwrap();
    let journal = runner.journal(&turn_journal_id(&thread, 0)).await;
    let whole = records.len() == 1
        && timeless(records[0].clone()) == *reference
        && journal.is_ok_and(|steps| {
            steps.into_iter().map(|s| s.event).collect::<Vec<_>>() == reference.events
        });
    if !whole {
        println!("trial {trial}: the record or the journal differs: {records:#?}");
        seen.audit.corrupt += 1;
    }
    seen
}

support::processes::on_every_store!("recover": ledger_kills);
