//! An offline customer-service desk to try the server with: `triage` routes a request to
//! `refund` (whose `issue_refund` tool waits for a human's approval) or `complaint`; every agent
//! runs on a scripted model, so each run is the same and needs no network. The `serve` example,
//! the server's tests and its benchmark serve it.
//!
//! | the user writes | what happens |
//! | --- | --- |
//! | a message containing `refund` | `triage` transfers to `refund`, which looks order 42 up and asks to refund 39 EUR: the run stops for approval; approved (`{"approve": true}`) it pays and says so, denied it apologises |
//! | a message containing `broken` | `triage` transfers to `complaint`, which logs the complaint and exits with its number |
//! | anything else | `triage` answers itself |

use agentweave_runtime::model::ChatRequest;
use agentweave_runtime::{
    set_sub_agents, tool_fn, tool_fn_with_context, ChatModelAgent, FlowAgent, Role, ScriptStep,
    ScriptedModel, ToolContext,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Order {
    /// The order number.
    order_id: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// The order to refund.
    order_id: u64,
    /// The amount, in euros.
    amount_eur: f64,
}

#[derive(Deserialize, JsonSchema)]
struct Complaint {
    /// What went wrong.
    summary: String,
}

/// The desk's tree: `triage => [refund, complaint]`.
///
/// ```
/// let desk = agentweave_server::demo::desk();
/// assert_eq!(desk.shape(), "triage(refund,complaint)");
/// ```
pub fn desk() -> FlowAgent {
    let triage = ChatModelAgent::builder(
        "triage",
        ScriptedModel::rules()
            .when_last_user_contains("refund", ScriptStep::transfer("refund"))
            .when_last_user_contains("broken", ScriptStep::transfer("complaint"))
            .otherwise("Hello! I can help with refunds and complaints.")
            // A served desk answers for days: keep no log of its requests.
            .keep_requests(false),
    )
    .description("The front desk: finds out what the customer needs.")
    .build()
    .expect("triage");

    let tool_said = |word: &'static str| {
        move |r: &ChatRequest| {
            r.messages
                .last()
                .is_some_and(|m| m.role == Role::Tool && m.content.starts_with(word))
        }
    };
    let refund = ChatModelAgent::builder(
        "refund",
        ScriptedModel::rules()
            .when(
                tool_said("refunded"),
                ScriptStep::text("Done: 39 EUR for order 42 are on their way back to you."),
            )
            .when(
                tool_said("declined"),
                ScriptStep::text("Sorry: the refund for order 42 was not approved."),
            )
            .after_tool(
                "lookup_order",
                ScriptStep::tool_call("issue_refund", json!({"order_id": 42, "amount_eur": 39.0})),
            )
            .otherwise(ScriptStep::tool_call("lookup_order", json!({"order_id": 42})))
            .keep_requests(false),
    )
    .description("Refunds orders once a human approves.")
    .tool(tool_fn(
        "lookup_order",
        "Finds an order by its number.",
        |a: Order| async move {
            Ok::<_, String>(format!("order {}: one electric kettle, 39.00 EUR", a.order_id))
        },
    ))
    .tool(tool_fn_with_context(
        "issue_refund",
        "Pays an amount back for an order; a human approves every refund.",
        |cx: ToolContext, a: Refund| async move {
            match cx
                .resume_data()
                .and_then(|d| d.get("approve"))
                .and_then(|v| v.as_bool())
            {
                Some(true) => Ok(format!("refunded {:.2} EUR for order {}", a.amount_eur, a.order_id)),
                Some(false) => Ok(format!("declined: no refund for order {}", a.order_id)),
                // An approval, in a tool approval's shape: A2A clients may answer it in text.
                None => Err(cx.interrupt(json!({
                    "question": format!("Approve a refund of {:.2} EUR for order {}?", a.amount_eur, a.order_id),
                    "approval": {"tool": "issue_refund", "arguments": {"order_id": a.order_id, "amount_eur": a.amount_eur}},
                }))),
            }
        },
    ))
    .build()
    .expect("refund");

    let complaint =
        ChatModelAgent::builder(
            "complaint",
            ScriptedModel::rules()
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
                .keep_requests(false),
        )
        .description("Takes complaints about broken or missing goods.")
        .tool(tool_fn(
            "log_complaint",
            "Records a complaint.",
            |a: Complaint| async move {
                Ok::<_, String>(format!("complaint #1001 logged: {}", a.summary))
            },
        ))
        .exit_tool(true)
        .build()
        .expect("complaint");

    set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund), FlowAgent::new(complaint)],
    )
    .expect("desk tree")
}
