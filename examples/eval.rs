//! Evaluating the customer-service desk: an eval set of three cases (`examples/eval/desk.json`)
//! runs offline from the cassettes committed beside it, then prints the table and writes the
//! HTML report.
//!
//! ```text
//! cargo run --example eval --features eval                      # replay the cassettes
//! AGENTFLOW_RECORD=1 cargo run --example eval --features eval   # record them again
//! ```
//!
//! Every model and tool of the desk goes through the case's cassette (`env.model`,
//! `env.tool`): replaying, nothing real is called (no refund is paid); recording, the scripted
//! models below answer (put a real `ChatModel` there to record a real one).

use agentweave::eval::set::EvalSet;
use agentweave::eval::{CaseEnv, EvalRunner};
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::{flow, tool::tool_fn, ChatModelAgent, FlowAgent};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Arguments of `lookup_order`.
#[derive(Deserialize, JsonSchema)]
struct LookupOrder {
    /// The order number.
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

flow! {
    /// The customer-service desk: the front desk routes each request to refunds or complaints.
    pub Desk: dyn triage => [dyn refund, dyn complaint]
}

/// The desk, its models and tools recorded or replayed through the case's cassette.
fn desk(env: &CaseEnv) -> FlowAgent {
    Desk::builder()
        .triage(|node| {
            use DeskTriageTarget::{Complaint, Refund};
            let script = ScriptedModel::rules()
                .when_last_user_contains("refund", ScriptStep::transfer(Refund.as_str()))
                .when_last_user_contains("broken", ScriptStep::transfer(Complaint.as_str()))
                .otherwise("Hello! I can help with refunds and complaints.")
                .named("triage-model");
            ChatModelAgent::builder(node, env.model(script))
                .description("The front desk: finds out what the customer needs.")
                .instruction("Hand refunds to refund and complaints to complaint.")
                .build()
                .expect("triage agent")
        })
        .refund(|node| {
            let script = ScriptedModel::rules()
                .after_tool(
                    "issue_refund",
                    "Done: 39 EUR for order 42 are on their way back.",
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
                .named("refund-model");
            ChatModelAgent::builder(node, env.model(script))
                .description("Refunds orders.")
                .instruction("Look the order up first, then refund its price.")
                .tool_arc(env.tool(tool_fn(
                    "lookup_order",
                    "Finds an order by its number.",
                    |a: LookupOrder| async move {
                        Ok::<_, String>(format!(
                            "order {}: one electric kettle, 39.00 EUR",
                            a.order_id
                        ))
                    },
                )))
                .tool_arc(env.tool(tool_fn(
                    "issue_refund",
                    "Pays an amount back for an order.",
                    |a: IssueRefund| async move {
                        Ok::<_, String>(format!(
                            "refunded {:.2} EUR for order {}",
                            a.amount_eur, a.order_id
                        ))
                    },
                )))
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
                .named("complaint-model");
            ChatModelAgent::builder(node, env.model(script))
                .description("Takes complaints about broken or missing goods.")
                .instruction("Log the complaint, then call exit with what you tell the customer.")
                .tool_arc(env.tool(tool_fn(
                    "log_complaint",
                    "Records a complaint and returns its number.",
                    |a: LogComplaint| async move {
                        Ok::<_, String>(format!("complaint #1001 logged: {}", a.summary))
                    },
                )))
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
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/eval");
    let set = match EvalSet::from_file(dir.join("desk.json")) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // The judge is a scripted model here; any ChatModel can judge (its calls are recorded in
    // the cassettes too).
    let judge = ScriptedModel::rules()
        .otherwise(
            r#"{"score": 1, "reason": "Gives the complaint number and says what happens next."}"#,
        )
        .named("judge-model");
    let report = EvalRunner::new(desk)
        .cassettes(dir.join("cassettes"))
        .judge(judge)
        .run(&set)
        .await;
    print!("{}", report.table());
    let html = std::env::temp_dir().join("agentflow-eval-report.html");
    match std::fs::write(&html, report.html()) {
        Ok(()) => println!("HTML report: {}", html.display()),
        Err(e) => eprintln!("could not write the HTML report: {e}"),
    }
    if !report.passed() {
        std::process::exit(1);
    }
}
