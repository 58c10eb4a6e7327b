//! A refund that needs a human's approval, across two processes: the refund desk's
//! `issue_refund` tool stops the run until a human answers.
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
use std::time::{SystemTime, UNIX_EPOCH};

use agentweave::model::ChatRequest;
use agentweave::model::ScriptStep;
use agentweave::model::ScriptedModel;
use agentweave::prelude::*;
use agentweave::tool::tool_fn_with_context;
use agentweave::tool::ToolContext;
use agentweave::{event::EventPrinter, store::FileStore, tool::FnTool};
use agentweave::{ResumeRequest, RunRequest};
use futures::StreamExt;
use serde_json::json;

/// The refund tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order to refund.
    order: u32,
    /// The amount in dollars.
    amount: u32,
}

/// `issue_refund` never pays out on the model's word alone: the first call stops the run for a
/// human; resumed, the same call runs again with the human's answer.
fn issue_refund() -> FnTool {
    tool_fn_with_context(
        "issue_refund",
        "Refunds an order. A human approves every refund.",
        |cx: ToolContext, args: Refund| async move {
            let approved = cx
                .resume_data()
                .and_then(|d| d.get("approve"))
                .and_then(|a| a.as_bool());
            match approved {
                Some(true) => Ok(format!(
                    "Approved: ${} refunded for order #{}.",
                    args.amount, args.order
                )),
                Some(false) => Ok(format!("Declined: no refund for order #{}.", args.order)),
                None => Err(cx.interrupt_with_state(
                    json!({
                        "question": format!(
                            "Approve a refund of ${} for order #{}?",
                            args.amount, args.order
                        )
                    }),
                    json!({ "order": args.order, "amount": args.amount }),
                )),
            }
        },
    )
}

/// The refund desk's model, scripted so the example runs offline: it asks for the refund, then
/// tells the customer what the tool answered.
fn refund_model() -> ScriptedModel {
    let tool_said = |word: &'static str| {
        move |r: &ChatRequest| {
            r.messages
                .last()
                .is_some_and(|m| m.role == Role::Tool && m.content.starts_with(word))
        }
    };
    ScriptedModel::rules()
        .when(
            tool_said("Approved"),
            ScriptStep::text("Your refund of $40 for order #1042 is on its way."),
        )
        .when(
            tool_said("Declined"),
            ScriptStep::text("Sorry: the refund for order #1042 was not approved."),
        )
        .otherwise(ScriptStep::tool_call(
            "issue_refund",
            json!({ "order": 1042, "amount": 40 }),
        ))
}

pub fn desk() -> Result<FlowAgent, Box<dyn std::error::Error>> {
    let triage = FnAgent::new("triage", |cx, _| async move {
        cx.say("A refund request: passing it to the refund desk.");
        cx.transfer("refund");
        Ok(())
    })
    .with_description("Decides which desk owns the request.");

    let refund = ChatModelAgent::builder("refund", refund_model())
        .description("Issues refunds once a human approves them.")
        .instruction("You refund orders with the issue_refund tool.")
        .tool(issue_refund())
        .build()?;

    Ok(set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund)],
    )?)
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
    let runner = Runner::builder(desk()?)
        .checkpoint_store(FileStore::open_default()?)
        .build();
    let mut printer = EventPrinter::stdout().indent("");

    let mut events = match args.iter().position(|a| a == "--resume") {
        None => {
            let millis = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
            let id = format!("refund-{millis}");
            let question = Message::user("I want my money back for order #1042");
            println!("user: {}", question.content);
            let mut events = runner.run(RunRequest::new([question]).checkpoint(&id));
            while let Some(event) = events.next().await {
                printer.print(&event).await?;
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
                // The interrupt id is the run path of the agent whose tool asked.
                targets.insert("triage/refund".to_owned(), json!({ "approve": approve }));
            }
            println!("resuming {id}");
            runner.resume(ResumeRequest::new(id, targets)).await?
        }
    };
    while let Some(event) = events.next().await {
        printer.print(&event).await?;
    }
    Ok(())
}
