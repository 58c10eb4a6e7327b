//! The customer-service desk: `triage` hands each request to `refund` or `complaint`, which use
//! tools to do the work. The tree is declared with `flow!` (checked at compile time); its three
//! nodes are LLM agents built at run time and given to the flow's builder.
//!
//! ```text
//! cargo run --example customer_service                                 # offline, scripted models
//! OPENAI_API_KEY=… cargo run --example customer_service --features openai
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 \
//!     cargo run --example customer_service --features openai -- --openai  # a local Ollama server
//! ```
//!
//! Offline, every agent runs on a `ScriptedModel` with keyword rules, so the run is the same
//! every time. With `--openai` (or `OPENAI_BASE_URL` / `OPENAI_API_KEY` set) and the `openai`
//! feature, a real model decides instead, with the same tools and transfer rules.

use std::sync::Arc;

use agentflow::model::{ChatModel, ScriptStep, ScriptedModel};
use agentflow::{flow, tool_fn, ChatModelAgent, EventPrinter, FlowAgent, Runner};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

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

/// Which models drive the agents.
enum Models {
    Scripted,
    #[cfg(feature = "openai")]
    OpenAi(Arc<dyn ChatModel>),
}

impl Models {
    fn pick(scripted: ScriptedModel, models: &Models) -> Arc<dyn ChatModel> {
        match models {
            Models::Scripted => Arc::new(scripted),
            #[cfg(feature = "openai")]
            Models::OpenAi(model) => Arc::clone(model),
        }
    }
}

fn choose_models() -> Models {
    let asked = std::env::args().any(|a| a == "--openai")
        || std::env::var_os("OPENAI_BASE_URL").is_some()
        || std::env::var_os("OPENAI_API_KEY").is_some();
    if !asked {
        println!("(offline: scripted models; see the file's docs for a real model)\n");
        return Models::Scripted;
    }
    #[cfg(feature = "openai")]
    {
        use agentflow::model::{OpenAiChatModel, OpenAiConfig};
        let config = OpenAiConfig::from_env();
        println!("(model {} at {})\n", config.model, config.base_url);
        match OpenAiChatModel::new(config) {
            Ok(model) => return Models::OpenAi(Arc::new(model)),
            Err(e) => println!("cannot use the OpenAI model ({e}); running offline\n"),
        }
    }
    #[cfg(not(feature = "openai"))]
    println!(
        "(this build has no OpenAI support: run `cargo run --example customer_service --features openai \
         -- --openai`; running offline with scripted models)\n"
    );
    Models::Scripted
}

flow! {
    /// The customer-service desk: the front desk routes each request to refunds or complaints.
    pub CustomerService: dyn triage => [dyn refund, dyn complaint]
}

fn desk(models: &Models) -> FlowAgent {
    // Each agent is named once, in `flow!` above: the builder hands every `dyn` node its name
    // and its legal transfer targets (typed), and the agent takes its name from the node. A
    // target that is not legal for the node (`CustomerServiceTriageTarget::Escalation`) does
    // not compile.
    CustomerService::builder()
        .triage(|node| {
            use CustomerServiceTriageTarget::{Complaint, Refund};
            let script = ScriptedModel::rules()
                .when_last_user_contains("refund", ScriptStep::transfer(Refund.as_str()))
                .when_last_user_contains("broken", ScriptStep::transfer(Complaint.as_str()))
                .otherwise("Hello! I can help with refunds and complaints.")
                .named("triage-script");
            ChatModelAgent::builder_with_arc(node, Models::pick(script, models))
                .description("The front desk: finds out what the customer needs.")
                .instruction(
                    "You are the front desk of a small shop. Hand refund requests to the refund \
                     agent and complaints about broken or missing goods to the complaint agent. \
                     Answer anything else yourself, in one or two sentences.",
                )
                .build()
                .expect("triage agent")
        })
        .refund(|node| {
            let script = ScriptedModel::rules()
                .after_tool(
                    "issue_refund",
                    "Done: 39 EUR for order 42 are on their way back to you.",
                )
                .after_tool(
                    "lookup_order",
                    ScriptStep::tool_call(
                        "issue_refund",
                        json!({"order_id": 42, "amount_eur": 39.0}),
                    ),
                )
                .otherwise(ScriptStep::tool_call(
                    "lookup_order",
                    json!({"order_id": 42}),
                ))
                .named("refund-script");
            ChatModelAgent::builder_with_arc(node, Models::pick(script, models))
                .description("Refunds orders: looks them up and pays the money back.")
                .instruction(
                    "You handle refunds. Look the order up first, then refund its price and tell \
                     the customer how much comes back.",
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
            ChatModelAgent::builder_with_arc(node, Models::pick(script, models))
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
    let models = choose_models();
    let desk = desk(&models);
    println!("desk: {}\n", desk.shape());
    let questions = [
        ("I want a refund for order 42, please.", false),
        ("My kettle arrived broken!", false),
        ("Hi, are you open on Sundays?", true),
    ];
    for (question, streaming) in questions {
        println!(
            "user: {question}{}",
            if streaming { " (streaming)" } else { "" }
        );
        let mut events = Runner::new(desk.clone())
            .streaming(streaming)
            .query(question);
        let mut printer = EventPrinter::stdout();
        while let Some(event) = events.next().await {
            printer.print(&event).await.expect("stdout");
        }
        println!();
    }
}
