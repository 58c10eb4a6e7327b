// Its own test binary, not a module of tests/it: a kill harness: it starts copies of this test
// binary as workers and SIGKILLs them mid-way (`--exact` entries by name).
//! A worker process SIGKILLed in the middle of a multi-agent turn with a paid tool: two worker
//! processes serve the thread's task queue; when the paying call starts on one of them, that
//! worker is killed at a random moment of the call and a new worker process takes its place.
//! The turn completes, with the in-process runner's answer, and the payment is made once (the
//! tool's call may run again under the same idempotency key; the ledger keeps one payment per
//! key).
//!
//! `AGENTFLOW_TEMPORAL_KILL_TRIALS` sets the number of trials (default 3). Needs the dev server
//! (see tests/it/temporal.rs).

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentweave_temporal::{worker_flows, ThreadStart, ThreadWorkflow, TurnRequest};
use support::*;
use temporalio_client::{WorkflowExecuteUpdateOptions, WorkflowStartOptions};

const QUEUE_ENV: &str = "FLOW_TEMPORAL_TEST_WORKER_QUEUE";
const LEDGER_ENV: &str = "FLOW_TEMPORAL_TEST_LEDGER";
const FLOW: &str = "desk-kill";
/// How long the paying call takes: the window the kill aims at.
const PAY_DELAY: Duration = Duration::from_millis(1500);

/// The worker processes' entry: a worker of the queue its parent names, until it is killed.
/// In an ordinary test run (no queue named) it does nothing.
#[test]
fn worker_process() {
    let Ok(queue) = std::env::var(QUEUE_ENV) else {
        return;
    };
    let ledger = Ledger::at(std::path::Path::new(&std::env::var(LEDGER_ENV).unwrap()));
    worker_flows().insert(FLOW, desk(&ledger, 30, PAY_DELAY));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = agentweave_temporal::connect(&address()).await.unwrap();
        agentweave_temporal::run_worker(client, &queue)
            .await
            .unwrap();
    });
}

fn spawn_worker(queue: &str, ledger: &Ledger) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "worker_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(QUEUE_ENV, queue)
        .env(LEDGER_ENV, &ledger.0)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// A number in `0..n`, from the OS's randomness (through the random token of `ids`).
fn random_below(n: u64) -> u64 {
    let token = agentweave_runtime::ids::unique_token();
    u64::from_str_radix(&token[..16], 16).unwrap_or(0) % n.max(1)
}

struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_turn_leaves_the_turn_complete_and_each_payment_made_once() {
    let Some(client) = server().await else { return };
    let trials: usize = std::env::var("AGENTFLOW_TEMPORAL_KILL_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(3);
    for trial in 0..trials {
        let ledger = Ledger::new();
        let queue = unique("kill");
        let mut workers = Workers(vec![
            spawn_worker(&queue, &ledger),
            spawn_worker(&queue, &ledger),
        ]);
        let thread = unique("thread");
        client
            .start_workflow(
                ThreadWorkflow::run,
                ThreadStart {
                    tool_timeout_ms: Some(3000),
                    ..ThreadStart::new(FLOW, thread.as_str())
                },
                WorkflowStartOptions::new(queue.as_str(), thread.as_str()).build(),
            )
            .await
            .unwrap();
        let running = {
            let handle = client.get_workflow_handle::<ThreadWorkflow>(thread.as_str());
            tokio::spawn(async move {
                handle
                    .execute_update(
                        ThreadWorkflow::turn,
                        TurnRequest::new("ana", "please pay my bill"),
                        WorkflowExecuteUpdateOptions::default(),
                    )
                    .await
            })
        };

        // The paying call starts on one of the workers: kill that one at a random moment of
        // the call, and start another in its place.
        let started = Instant::now();
        let pid = loop {
            if let Some((pid, _)) = ledger.starts().first() {
                break *pid;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "trial {trial}: the paying call never started"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        tokio::time::sleep(Duration::from_millis(random_below(
            PAY_DELAY.as_millis() as u64 + 200,
        )))
        .await;
        let victim = workers
            .0
            .iter_mut()
            .find(|c| c.id() == pid)
            .unwrap_or_else(|| panic!("trial {trial}: the paying process {pid} is not a worker"));
        victim.kill().unwrap();
        victim.wait().unwrap();
        workers.0.push(spawn_worker(&queue, &ledger));

        let result = tokio::time::timeout(Duration::from_secs(120), running)
            .await
            .unwrap_or_else(|_| panic!("trial {trial}: the turn did not end in 120 s"))
            .unwrap()
            .unwrap_or_else(|e| panic!("trial {trial}: the turn failed: {e}"));
        let said: Vec<&str> = result
            .events
            .iter()
            .filter_map(|e| e["message"]["content"].as_str())
            .collect();
        assert!(said.contains(&"billing paid 30"), "trial {trial}: {said:?}");
        assert!(said.contains(&"paid 30"), "trial {trial}: {said:?}");
        let payments = ledger.payments();
        assert_eq!(
            payments.values().copied().collect::<Vec<_>>(),
            [30],
            "trial {trial}: one payment (calls: {:?})",
            ledger.calls()
        );
        eprintln!(
            "trial {trial}: killed worker {pid}, {} call(s) started, {} made, 1 payment",
            ledger.starts().len(),
            ledger.calls().len()
        );
    }
}
