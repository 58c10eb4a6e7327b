//! The customer-service desk: `triage` hands each request to `refund` or `complaint`, which use
//! tools to do the work. The tree is declared with `flow!` (checked at compile time); its three
//! nodes are LLM agents built at run time and given to the flow's builder.
//!
//! `refund` is a task (`dyn refund(task)`): over the turns of a thread it asks the customer for
//! the order number and the reason, then finishes with a typed `RefundOutcome` (its
//! `finish_task` tool), which returns to `triage`; triage closes the conversation in the same
//! turn. `complaint` is a plain transfer: it answers the customer itself.
//!
//! ```text
//! cargo run --example customer_service                                 # offline, scripted models
//! OPENAI_API_KEY=… cargo run --example customer_service --features openai
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 \
//!     cargo run --example customer_service --features openai            # a local Ollama server
//! OPENAI_MODEL_REFUND=gpt-4.1 …                                          # one agent's own model
//! ```
//!
//! Offline, every agent runs on a `ScriptedModel` with keyword rules, so the run is the same
//! every time. With `OPENAI_BASE_URL` or `OPENAI_API_KEY` set and the `openai` feature, a real
//! model decides instead, with the same tools and transfer rules (`EnvModels` chooses).

use agentweave::model::{EnvModels, ScriptStep, ScriptedModel};
use agentweave::TurnRequest;
use agentweave::{
    event::EventPrinter, flow, tool::tool_fn, ChatModelAgent, FlowAgent, Message, Runner,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the refund desk returns to the front desk when it is done.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct RefundOutcome {
    /// The order refunded.
    order_id: u64,
    /// Why the customer wanted the money back.
    reason: String,
    /// How much was paid back, in euros (0 if nothing was).
    refunded_eur: f64,
}

/// Arguments of `lookup_order`.
#[derive(Deserialize, JsonSchema)]
struct LookupOrder {
    /// The order number, as printed on the receipt.
    order_id: u64,
}

/// Arguments of `issue_refund`.
#[derive(Deserialize, JsonSchema)]
struct IssueRefund {
    /// The order to refund.
    order_id: u64,
    /// The amount to pay back, in euros.
    amount_eur: f64,
}

/// Arguments of `log_complaint`.
#[derive(Deserialize, JsonSchema)]
struct LogComplaint {
    /// One sentence saying what went wrong.
    summary: String,
}

/// The orders this shop knows about.
fn order(id: u64) -> Option<(&'static str, f64)> {
    match id {
        42 => Some(("one electric kettle", 39.0)),
        7 => Some(("two mugs", 12.5)),
        _ => None,
    }
}

flow! {
    /// The customer-service desk: the front desk routes each request to refunds or complaints.
    pub CustomerService: dyn triage => [dyn refund(task), dyn complaint]
}

pub fn desk(models: &EnvModels) -> FlowAgent {
    // Each agent is named once, in `flow!` above: the builder hands every `dyn` node its name
    // and its legal transfer targets (typed), and the agent takes its name from the node. A
    // target that is not legal for the node (`CustomerServiceTriageTarget::Escalation`) does
    // not compile.
    CustomerService::builder()
        .triage(|node| {
            use CustomerServiceTriageTarget::{Complaint, Refund};
            let script = ScriptedModel::rules()
                // The refund task's outcome came back: close the conversation.
                .when(
                    |r| r.messages.last().is_some_and(|m| m.content.contains("[refund]")),
                    "Your refund of 39 EUR for order 42 is on its way. Thank you, goodbye!",
                )
                .when_last_user_contains("refund", ScriptStep::transfer(Refund.as_str()))
                .when_last_user_contains("broken", ScriptStep::transfer(Complaint.as_str()))
                .otherwise("Hello! I can help with refunds and complaints.")
                .named("triage-script");
            ChatModelAgent::builder_with_arc(node, models.model_for("triage", script).expect("a client for the configured model"))
                .description("The front desk: finds out what the customer needs.")
                .instruction(
                    "You are the front desk of a small shop. Hand refund requests to the refund \
                     agent and complaints about broken or missing goods to the complaint agent. \
                     When the refund agent reports its outcome, tell the customer what was \
                     refunded and say goodbye. Answer anything else yourself, in one or two \
                     sentences.",
                )
                .build()
                .expect("triage agent")
        })
        .refund(|node| {
            // Turn 1: asks for the order; turn 2 (the number): looks it up, asks why; turn 3
            // (the reason): refunds, then finishes its task with the outcome.
            let script = ScriptedModel::rules()
                .after_tool(
                    "issue_refund",
                    ScriptStep::tool_call(
                        "finish_task",
                        json!({"order_id": 42, "reason": "it arrived broken", "refunded_eur": 39.0}),
                    ),
                )
                .after_tool("lookup_order", "Order 42, one kettle. What went wrong with it?")
                .when_last_user_contains(
                    "broken",
                    ScriptStep::tool_call(
                        "issue_refund",
                        json!({"order_id": 42, "amount_eur": 39.0}),
                    ),
                )
                .when_last_user_contains(
                    "42",
                    ScriptStep::tool_call("lookup_order", json!({"order_id": 42})),
                )
                .otherwise("Of course. What is the order number?")
                .named("refund-script");
            ChatModelAgent::builder_with_arc(node, models.model_for("refund", script).expect("a client for the configured model"))
                .description("Refunds orders: looks them up and pays the money back.")
                .instruction(
                    "You handle refunds. Ask the customer for the order number and look the \
                     order up; ask why they want the money back; refund its price; then call \
                     finish_task with the outcome.",
                )
                .tool(tool_fn(
                    "lookup_order",
                    "Finds an order by its number: what it contains and what it cost.",
                    |a: LookupOrder| async move {
                        match order(a.order_id) {
                            Some((items, price)) => Ok(format!(
                                "order {}: {items}, {price:.2} EUR, delivered",
                                a.order_id
                            )),
                            None => Err(format!("there is no order {}", a.order_id)),
                        }
                    },
                ))
                .tool(tool_fn(
                    "issue_refund",
                    "Pays an amount back for an order.",
                    |a: IssueRefund| async move {
                        match order(a.order_id) {
                            Some((_, price)) if a.amount_eur <= price => Ok(format!(
                                "refunded {:.2} EUR for order {}",
                                a.amount_eur, a.order_id
                            )),
                            Some((_, price)) => Err(format!(
                                "order {} cost {price:.2} EUR; refund at most that",
                                a.order_id
                            )),
                            None => Err(format!("there is no order {}", a.order_id)),
                        }
                    },
                ))
                .returns::<RefundOutcome>()
                .build()
                .expect("refund agent")
        })
        .complaint(|node| {
            let script = ScriptedModel::rules()
                .after_tool(
                    "log_complaint",
                    ScriptStep::exit(
                        "Your complaint is logged as #1001; we will call you tomorrow.",
                    ),
                )
                .otherwise(ScriptStep::tool_call(
                    "log_complaint",
                    json!({"summary": "The kettle arrived broken."}),
                ))
                .named("complaint-script");
            ChatModelAgent::builder_with_arc(node, models.model_for("complaint", script).expect("a client for the configured model"))
                .description("Takes complaints about broken or missing goods.")
                .instruction(
                    "You take complaints. Log the complaint with one sentence, then call exit \
                     with what you tell the customer.",
                )
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
        .expect("each node's agent takes its name from the node")
        .into()
}

#[tokio::main]
async fn main() {
    // Scripted offline; OPENAI_API_KEY / OPENAI_BASE_URL (with the `openai` feature) for a
    // real model, OPENAI_MODEL_REFUND for the refund desk's own.
    let models = EnvModels::from_env();
    println!("({})\n", models.describe());
    let desk = desk(&models);
    println!("desk: {}\n", desk.shape());
    // A refund is a conversation: three turns of one thread. The second and third go to the
    // refund task (the agent that answered last); when it finishes, triage closes.
    let runner = Runner::builder(desk.clone())
        .thread_store(agentweave::store::InMemoryStore::new())
        .build();
    for said in [
        "I want a refund, please.",
        "Order 42.",
        "It arrived broken.",
    ] {
        println!("user: {said}");
        let mut turn = runner
            .turn(TurnRequest::new("ada", Message::user(said)))
            .await
            .expect("a turn of the thread");
        let mut printer = EventPrinter::stdout();
        while let Some(event) = turn.next().await {
            printer.print(&event).await.expect("stdout");
        }
        println!();
    }
    let questions = [
        ("My kettle arrived broken!", false),
        ("Hi, are you open on Sundays?", true),
    ];
    for (question, streaming) in questions {
        println!(
            "user: {question}{}",
            if streaming { " (streaming)" } else { "" }
        );
        let mut events = Runner::builder(desk.clone())
            .streaming(streaming)
            .build()
            .run(question);
        let mut printer = EventPrinter::stdout();
        while let Some(event) = events.next().await {
            printer.print(&event).await.expect("stdout");
        }
        println!();
    }
}
