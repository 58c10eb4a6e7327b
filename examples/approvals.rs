//! Refunds wait for a human's approval in one SQLite store, and two worker processes share the
//! work of resuming them: each approved refund is paid exactly once.
//!
//! ```text
//! cargo run --example approvals
//! ```
//!
//! The first process files five refund requests (each stops at its `issue_refund` tool and is
//! checkpointed), prints the approvals screen (`Checkpoints::pending`), then starts two
//! copies of itself as workers (`--worker 1`, `--worker 2`). Both list the pending approvals
//! and resume them; the store's claim lets exactly one worker resume each one, the other is
//! told it is taken and moves on. The database is `$AGENTFLOW_DB`, or a new file in the
//! temporary directory.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use agentweave::model::ScriptStep;
use agentweave::model::ScriptedModel;
use agentweave::prelude::*;
use agentweave::store::{CheckpointState, CheckpointStore, SqliteStore};
use agentweave::tool::tool_fn_with_context;
use agentweave::tool::ToolContext;
use agentweave::{store::CheckpointError, tool::FnTool};
use agentweave::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

/// The orders to refund: (order, amount in dollars).
const ORDERS: [(u32, u32); 5] = [(1042, 40), (1043, 15), (1044, 99), (1045, 7), (1046, 23)];

/// The refund tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order to refund.
    order: u32,
    /// The amount in dollars.
    amount: u32,
}

/// `issue_refund` stops for a human's approval; resumed with it, it pays. A real payment API
/// would get `cx.idempotency_key()` so that a retried call (after a worker died mid-payment)
/// is not paid twice.
fn issue_refund() -> FnTool {
    tool_fn_with_context(
        "issue_refund",
        "Refunds an order once a human approves.",
        |cx: ToolContext, args: Refund| async move {
            match cx.resume_data().and_then(|d| d.get("approve")) {
                None => Err(cx.interrupt(json!({
                    "question": format!("Refund ${} for order #{}?", args.amount, args.order)
                }))),
                Some(approved) if approved == true => {
                    let worker = std::env::var("APPROVALS_WORKER").unwrap_or_default();
                    println!(
                        "[worker {worker}] paid ${} for order #{} (idempotency key {})",
                        args.amount,
                        args.order,
                        cx.idempotency_key()
                    );
                    Ok(format!("Paid ${} for order #{}.", args.amount, args.order))
                }
                Some(_) => Ok(format!("Declined: order #{}.", args.order)),
            }
        },
    )
}

/// The refund desk, with a scripted model so the example runs offline: it asks for the refund
/// of the order the customer names, then confirms what the tool said.
pub fn desk() -> Result<FlowAgent, Box<dyn std::error::Error>> {
    let mut rules = ScriptedModel::rules().after_tool("issue_refund", ScriptStep::text("Done."));
    for (order, amount) in ORDERS {
        rules = rules.when_any_user_contains(
            &format!("#{order}"),
            ScriptStep::tool_call("issue_refund", json!({ "order": order, "amount": amount })),
        );
    }
    let refund = ChatModelAgent::builder("refund", rules.build())
        .description("Refunds orders once a human approves them.")
        .tool(issue_refund())
        .build()?;
    Ok(FlowAgent::new(refund))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().position(|a| a == "--worker") {
        Some(i) => work(args.get(i + 1).ok_or("--worker needs a number")?).await,
        None => coordinate().await,
    }
}

/// A worker: resumes pending approvals until none is left.
async fn work(me: &str) -> Result<(), Box<dyn std::error::Error>> {
    let store = SqliteStore::open_default().await?;
    let runner = Runner::builder(desk()?).checkpoint_store(store).build();
    let approve = HashMap::from([("refund".to_owned(), json!({ "approve": true }))]);
    loop {
        let pending = runner.checkpoints().pending(10).await?;
        if pending.is_empty() {
            return Ok(());
        }
        for p in pending {
            match runner
                .resume(ResumeRequest::new(&p.id, approve.clone()))
                .await
            {
                Ok(mut events) => {
                    while let Some(event) = events.next().await {
                        if let Some(e) = &event.error {
                            return Err(format!("{}: {e}", p.id).into());
                        }
                    }
                }
                // The other worker has it (or just finished it): nothing runs here.
                Err(CheckpointError::Claimed { .. } | CheckpointError::AlreadyResumed { .. }) => {
                    println!("[worker {me}] {} is taken by the other worker", p.id);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Files the requests, shows the approvals screen, runs two workers, checks the outcome.
async fn coordinate() -> Result<(), Box<dyn std::error::Error>> {
    let (db, temporary) = match std::env::var_os("AGENTFLOW_DB") {
        Some(db) => (PathBuf::from(db), false),
        None => (
            std::env::temp_dir().join(format!("agentflow-approvals-{}.db", std::process::id())),
            true,
        ),
    };
    let store = SqliteStore::open(&db).await?;
    let runner = Runner::builder(desk()?)
        .checkpoint_store(store.clone())
        .build();

    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis();
    let ids: Vec<String> = ORDERS
        .iter()
        .map(|(order, _)| format!("refund-{order}-{stamp}"))
        .collect();
    for ((order, _), id) in ORDERS.iter().zip(&ids) {
        let ask = Message::user(format!("Please refund order #{order}."));
        let events: Vec<AgentEvent> = runner
            .run(RunRequest::new([ask]).checkpoint(id))
            .collect()
            .await;
        if !events.last().is_some_and(AgentEvent::is_interrupt) {
            return Err(format!("{id} did not stop for approval").into());
        }
    }

    println!("Approvals waiting:");
    for p in runner.checkpoints().pending(100).await? {
        for interrupt in &p.interrupts {
            println!(
                "  {}  [{}]  {}",
                p.id, interrupt.id, interrupt.info["question"]
            );
        }
    }

    println!("\nTwo workers approve them all:");
    let exe = std::env::current_exe()?;
    let workers = ["1", "2"].map(|n| {
        Command::new(&exe)
            .args(["--worker", n])
            .env("AGENTFLOW_DB", &db)
            .env("APPROVALS_WORKER", n)
            .spawn()
    });
    for worker in workers {
        let status = worker?.wait()?;
        if !status.success() {
            return Err(format!("a worker failed: {status}").into());
        }
    }

    // Each request ran once: its history is the interrupted checkpoint, then the finished run.
    for id in &ids {
        let states: Vec<CheckpointState> =
            store.history(id).await?.iter().map(|m| m.state).collect();
        if states != [CheckpointState::Resumed, CheckpointState::Finished] {
            return Err(format!("{id} has history {states:?}").into());
        }
    }
    println!(
        "\nAll {} refunds paid, each exactly once; none waits.",
        ids.len()
    );
    if temporary {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
    }
    Ok(())
}
