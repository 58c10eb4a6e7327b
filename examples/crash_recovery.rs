//! A worker killed mid-turn, and its turn recovered by another process, each payment made once.
//!
//! ```text
//! cargo run --example crash_recovery
//! ```
//!
//! The refund desk pays a fee (`charge_fee`), transfers to `refunds`, which pays the refund
//! (`issue_refund`). Both tools append to a ledger file and deduplicate on their call's
//! idempotency key. The example starts itself again as a worker process, which runs the turn
//! journaled in `Sync` mode and is killed with SIGKILL right after `issue_refund` paid, before
//! its result was journaled. Then a new worker process recovers the turn: the fee's model
//! reply and result come from the journal (nothing asked or paid again), `issue_refund` runs
//! again with the same idempotency key (and finds it paid), and the turn is recorded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentweave::model::ScriptStep;
use agentweave::model::ScriptedModel;
use agentweave::prelude::*;
use agentweave::TurnRequest;
use agentweave::{
    run::RecoverError, run::TurnOutcome, set_sub_agents, store::FileStore,
    tool::tool_fn_with_context, tool::ToolContext, Durability,
};
use futures::StreamExt;
use serde_json::json;

const ROLE: &str = "CRASH_RECOVERY_ROLE";
const DIR: &str = "CRASH_RECOVERY_DIR";

/// A paying tool: appends `KEY TOOL AMOUNT` to the ledger unless the key is there already.
/// In the first worker, `issue_refund` then hangs: that worker is killed there.
fn paying(
    name: &'static str,
    amount: u32,
    ledger: PathBuf,
    hang: bool,
) -> agentweave::tool::FnTool {
    tool_fn_with_context(
        name,
        "Pays.",
        move |cx: ToolContext, _: serde_json::Value| {
            let ledger = ledger.clone();
            async move {
                let key = cx.idempotency_key();
                let text = std::fs::read_to_string(&ledger).unwrap_or_default();
                if text.lines().any(|l| l.starts_with(&format!("{key} "))) {
                    println!("[{name}] already paid under key {key}: not paying again");
                } else {
                    let line = format!("{text}{key} {name} {amount}\n");
                    std::fs::write(&ledger, line)?;
                    println!("[{name}] paid {amount} under key {key}");
                }
                if hang {
                    futures::future::pending::<()>().await;
                }
                Ok::<_, std::io::Error>(format!("{name}: {amount} paid"))
            }
        },
    )
}

pub fn desk(ledger: &Path, hang: bool) -> FlowAgent {
    let triage = ChatModelAgent::builder(
        "triage",
        ScriptedModel::rules()
            .after_tool("charge_fee", ScriptStep::transfer("refunds"))
            .otherwise(ScriptStep::tool_call("charge_fee", json!({}))),
    )
    .tool(paying("charge_fee", 2, ledger.to_path_buf(), false))
    .build()
    .unwrap();
    let refunds = ChatModelAgent::builder(
        "refunds",
        ScriptedModel::rules()
            .after_tool(
                "issue_refund",
                ScriptStep::text("Your refund of 40 is paid."),
            )
            .otherwise(ScriptStep::tool_call("issue_refund", json!({}))),
    )
    .tool(paying("issue_refund", 40, ledger.to_path_buf(), hang))
    .build()
    .unwrap();
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refunds)]).unwrap()
}

fn runner(dir: &Path, hang: bool) -> Runner {
    let store = FileStore::new(dir.join("store")).unwrap();
    Runner::builder(desk(&dir.join("ledger"), hang))
        .stores(store.clone())
        .journal_store(store)
        .durability(Durability::Sync)
        .lease(Duration::from_millis(500))
        .build()
}

#[tokio::main]
async fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("worker") => worker().await,
        Ok("recover") => recover().await,
        _ => parent(),
    }
}

/// The first worker: runs the turn until it is killed inside `issue_refund`.
async fn worker() {
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let runner = runner(&dir, true);
    let mut turn = runner
        .turn(TurnRequest::new(
            "order-42",
            Message::user("refund my order"),
        ))
        .await
        .unwrap();
    while let Some(event) = turn.next().await {
        if let Some(m) = event.message_output() {
            println!("worker 1 | {}: {}", event.run_path(), shown(m));
        }
    }
}

/// The second worker: recovers the turn once the first one's lease ran out.
async fn recover() {
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let runner = runner(&dir, false);
    let turn = loop {
        match runner.recover("order-42").await {
            Ok(Some(turn)) => break turn,
            Ok(None) => panic!("nothing to recover"),
            Err(RecoverError::Leased { .. }) => {
                println!("worker 2 | the dead worker's lease still runs; waiting");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    let mut turn = turn;
    while let Some(event) = turn.next().await {
        if let Some(m) = event.message_output() {
            println!("worker 2 | {}: {}", event.run_path(), shown(m));
        }
    }
    println!(
        "worker 2 | outcome: {:?}",
        turn.outcome().map(|o| match o {
            TurnOutcome::Completed { .. } => "completed and recorded",
            TurnOutcome::Interrupted { .. } => "interrupted",
            TurnOutcome::Failed(_) => "failed",
        })
    );
    let records = runner.thread("order-42").records().await.unwrap();
    println!(
        "thread order-42: {} turn recorded, {} events",
        records.len(),
        records[0].events.len()
    );
}

fn shown(m: &Message) -> String {
    let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
    if calls.is_empty() {
        m.content.clone()
    } else {
        format!("(calls {})", calls.join(", "))
    }
}

fn start(role: &str, dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .env(ROLE, role)
        .env(DIR, dir)
        .spawn()
        .unwrap()
}

fn parent() {
    let dir = std::env::temp_dir().join(format!("agentflow-crash-recovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ledger = dir.join("ledger");
    let mut first = start("worker", &dir);
    // Kill the worker once the refund is paid (its result is not journaled yet).
    while !std::fs::read_to_string(&ledger)
        .unwrap_or_default()
        .contains("issue_refund")
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    println!("-- worker 1 killed (SIGKILL) inside issue_refund");
    let status = start("recover", &dir).wait().unwrap();
    assert!(status.success(), "the recovering worker failed");
    let lines = std::fs::read_to_string(&ledger).unwrap();
    println!("-- the ledger, each payment once:");
    for line in lines.lines() {
        println!("   {line}");
    }
    assert_eq!(lines.lines().count(), 2, "each payment once");
    std::fs::remove_dir_all(&dir).unwrap();
}
