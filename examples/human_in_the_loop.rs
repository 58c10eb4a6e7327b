//! A refund that needs a human's approval, across two processes.
//!
//! ```text
//! cargo run --example human_in_the_loop                               # stops, prints an id
//! cargo run --example human_in_the_loop -- --resume ID --approve      # finishes it
//! cargo run --example human_in_the_loop -- --resume ID --deny
//! ```
//!
//! Checkpoints go to `.agentflow/checkpoints` (or `$AGENTFLOW_CHECKPOINT_DIR`), written
//! atomically, so the second command works in a new process, after a restart, on another day.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use agentflow::prelude::*;
use agentflow::FileStore;
use futures::StreamExt;
use serde_json::json;

fn desk() -> Result<FlowAgent, agentflow::FlowError> {
    let triage = FnAgent::new("triage", |cx, _| async move {
        cx.say("A refund request: passing it to the refund desk.");
        cx.transfer("refund");
        Ok(())
    })
    .with_description("Decides which desk owns the request.");

    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.say("Order #1042 qualifies for a refund of $40.");
        cx.interrupt_with_state(
            json!({ "question": "Approve a refund of $40 for order #1042?" }),
            json!({ "order": 1042, "amount": 40 }),
        );
        Ok(())
    })
    .on_resume(|cx, _input, info| async move {
        let state = info.state().cloned().unwrap_or_default();
        let approved = info
            .data()
            .and_then(|d| d.get("approve"))
            .and_then(|a| a.as_bool());
        match approved {
            Some(true) => cx.say(format!(
                "Approved: ${} refunded for order #{}.",
                state["amount"], state["order"]
            )),
            Some(false) => cx.say(format!(
                "Declined: no refund for order #{}.",
                state["order"]
            )),
            None => cx.interrupt_with_state(
                json!({ "question": "Still waiting: approve the refund?" }),
                state,
            ),
        }
        Ok(())
    })
    .with_description("Issues refunds once a human approves them.");

    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)])
}

fn print(event: &AgentEvent) {
    let path = event.run_path();
    if let Some(m) = event.message_output() {
        if !m.content.is_empty() {
            println!("[{path}] {}: {}", m.role, m.content);
        }
    }
    if let Some(interrupt) = event.interrupt() {
        println!(
            "[{path}] interrupted ({}): {}",
            interrupt.id, interrupt.info
        );
    }
    if let Some(e) = &event.error {
        println!("[{path}] error: {e}");
    }
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
    let runner = Runner::new(desk()?).checkpoint_store(FileStore::open_default()?);

    let mut events = match args.iter().position(|a| a == "--resume") {
        None => {
            let millis = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
            let id = format!("refund-{millis}");
            let question = Message::user("I want my money back for order #1042");
            println!("user: {}", question.content);
            let mut events = runner.run_checkpointed(&id, Session::new(), [Arc::new(question)]);
            while let Some(event) = events.next().await {
                print(&event);
            }
            println!("\ncheckpoint saved: {id}");
            println!(
                "finish it with: cargo run --example human_in_the_loop -- --resume {id} --approve"
            );
            return Ok(());
        }
        Some(i) => {
            let id = args.get(i + 1).ok_or("--resume needs a checkpoint id")?;
            let approve = if args.iter().any(|a| a == "--approve") {
                Some(true)
            } else if args.iter().any(|a| a == "--deny") {
                Some(false)
            } else {
                None
            };
            let mut targets = HashMap::new();
            if let Some(approve) = approve {
                // The interrupt id is the run path of the agent that asked.
                targets.insert("triage/refund".to_owned(), json!({ "approve": approve }));
            }
            println!("resuming {id}");
            runner.resume(id, targets).await?
        }
    };
    while let Some(event) = events.next().await {
        print(&event);
    }
    Ok(())
}
