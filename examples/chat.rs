//! A conversation of four turns with the customer-service desk, kept in a thread.
//!
//! ```text
//! cargo run --example chat
//! ```
//!
//! Each user message is one turn of the thread `customer-7`: the runner loads the thread from
//! the store, starts the turn at the agent that answered the previous one (or at the root for
//! the first), and appends the turn's events when it ends. Every turn is served by a new
//! `Runner` on the same `FileStore` directory, as a restarted server (or another worker) would
//! serve it: nothing lives in memory between turns. The models are scripted, so it runs offline
//! and the same every time.

use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::TurnRequest;
use agentweave::{
    flow, run::TurnOutcome, run::TurnRouting, store::FileStore, tool::tool_fn, ChatModelAgent,
    FlowAgent, Message, Runner,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

flow! {
    /// The customer-service desk: the front desk routes each request to refunds or complaints.
    pub Desk: dyn triage => [dyn refund, dyn complaint]
}

/// Arguments of `log_complaint`.
#[derive(Deserialize, JsonSchema)]
struct LogComplaint {
    /// One sentence saying what went wrong.
    summary: String,
}

/// Arguments of `issue_refund`.
#[derive(Deserialize, JsonSchema)]
struct IssueRefund {
    /// The order to refund.
    order_id: u64,
}

/// The scripted models: what each agent answers, call after call, over the whole conversation.
pub struct Models {
    triage: ScriptedModel,
    refund: ScriptedModel,
    complaint: ScriptedModel,
}

impl Models {
    pub(crate) fn new() -> Self {
        Models {
            triage: ScriptedModel::new([
                ScriptStep::transfer("complaint"), // turn 1
                ScriptStep::transfer("refund"),    // turn 3, handed back by complaint
            ]),
            complaint: ScriptedModel::new([
                // turn 1: log it, then end the turn with an answer
                ScriptStep::tool_call(
                    "log_complaint",
                    json!({"summary": "The kettle arrived broken."}),
                ),
                ScriptStep::exit("Sorry about the kettle: complaint #1001 is logged."),
                // turn 2: the follow-up comes straight back here
                ScriptStep::text("Our team calls you tomorrow between 9 and 12 about #1001."),
                // turn 3: a refund is not this desk's job
                ScriptStep::transfer("triage"),
            ]),
            refund: ScriptedModel::new([
                ScriptStep::tool_call("issue_refund", json!({"order_id": 42})),
                ScriptStep::text("Done: 39 EUR for order 42 are on their way back to you."),
                ScriptStep::text("You're welcome! Anything else about your refund?"),
            ]),
        }
    }

    /// The desk, built anew (as each worker would build it); the models keep their place in
    /// their scripts.
    pub fn desk(&self) -> FlowAgent {
        // Each agent is named once, in `flow!`: every `dyn` node hands its builder closure the
        // node (its name and typed transfer targets).
        Desk::builder()
            .triage(|node| {
                ChatModelAgent::builder(node, self.triage.clone())
                    .instruction(
                        "You are the front desk. Hand refunds and complaints to their desks.",
                    )
                    .build()
                    .expect("triage agent")
            })
            .refund(|node| {
                ChatModelAgent::builder(node, self.refund.clone())
                    .instruction("You handle refunds.")
                    .tool(tool_fn(
                        "issue_refund",
                        "Pays an order's price back.",
                        |a: IssueRefund| async move {
                            Ok::<_, String>(format!("refunded 39.00 EUR for order {}", a.order_id))
                        },
                    ))
                    .build()
                    .expect("refund agent")
            })
            .complaint(|node| {
                ChatModelAgent::builder(node, self.complaint.clone())
                    .instruction("You take complaints about broken goods.")
                    .tool(tool_fn(
                        "log_complaint",
                        "Records a complaint and returns its number.",
                        |a: LogComplaint| async move {
                            Ok::<_, String>(format!("complaint #1001 logged: {}", a.summary))
                        },
                    ))
                    .exit_tool(true)
                    .build()
                    .expect("complaint agent")
            })
            .build()
            .expect("each node is filled by an agent of its name")
            .into()
    }
}

fn describe(m: &Message) -> String {
    let mut text = format!("{}: {}", m.role, m.content);
    for call in &m.tool_calls {
        text.push_str(&format!(" -> {}({})", call.name, call.arguments));
    }
    text
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("agentflow-chat-{}", std::process::id()));
    let models = Models::new();
    let thread = "customer-7";
    let messages = [
        "My kettle arrived broken.",
        "When will you call me?",
        "Also, I want a refund for order 42.",
        "Thanks!",
    ];
    for (n, text) in messages.into_iter().enumerate() {
        // A new runner per turn, on the same store: a restart loses nothing.
        let store = FileStore::new(&dir).expect("a store in the temp directory");
        let runner = Runner::builder(models.desk())
            .stores(store)
            .turn_routing(TurnRouting::LastAgent)
            .build();
        let mut turn = runner
            .turn(TurnRequest::new(thread, Message::user(text)))
            .await
            .expect("the thread is free");
        println!("turn {} starts at `{}`", n + 1, turn.started_at());
        println!("  user: {text}");
        while let Some(event) = turn.next().await {
            if let Some(m) = event.message_output() {
                println!("  [{}] {}", event.run_path(), describe(m));
            }
        }
        match turn.outcome() {
            Some(TurnOutcome::Completed {
                answered_by,
                answer,
                ..
            }) => {
                let answer = answer.map(|m| m.content).unwrap_or_default();
                println!("  => {answered_by} answered: {answer}\n");
            }
            other => println!("  => {other:?}\n"),
        }
    }

    let runner = Runner::builder(models.desk())
        .stores(FileStore::new(&dir).expect("store"))
        .build();
    let listed = runner.thread(thread).messages().await.expect("readable");
    println!(
        "thread `{thread}`: {} messages in {} turns",
        listed.len(),
        listed.last().map_or(0, |m| m.turn + 1)
    );
    runner.thread(thread).delete().await.expect("deleted");
    let _ = std::fs::remove_dir_all(&dir);
}
