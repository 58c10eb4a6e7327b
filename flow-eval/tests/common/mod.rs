//! The customer-service desk of the examples, built at run time for the eval tests: `triage`
//! hands refunds to `refund` and complaints to `complaint`; every model is scripted.

#![allow(dead_code)]

use agentweave_eval::CaseEnv;
use agentweave_runtime::model::{ScriptStep, ScriptedModel, Usage};
use agentweave_runtime::{set_sub_agents, tool_fn, ChatModelAgent, FlowAgent};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupOrder {
    order_id: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct IssueRefund {
    order_id: u64,
    amount_eur: f64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LogComplaint {
    summary: String,
}

pub fn desk(env: &CaseEnv) -> FlowAgent {
    let triage = ScriptedModel::rules()
        .when_last_user_contains(
            "refund",
            ScriptStep::transfer("refund").with_usage(Usage::new(50, 5)),
        )
        .when_last_user_contains(
            "broken",
            ScriptStep::transfer("complaint").with_usage(Usage::new(50, 5)),
        )
        .otherwise(
            ScriptStep::text("Hello! I can help with refunds and complaints.")
                .with_usage(Usage::new(40, 10)),
        )
        .named("triage-script");
    let refund = ScriptedModel::rules()
        .after_tool(
            "issue_refund",
            "Done: 39 EUR for order 42 are on their way back to you.",
        )
        .after_tool(
            "lookup_order",
            ScriptStep::tool_call("issue_refund", json!({"order_id": 42, "amount_eur": 39.0})),
        )
        .otherwise(ScriptStep::tool_call(
            "lookup_order",
            json!({"order_id": 42}),
        ))
        .named("refund-script");
    let complaint = ScriptedModel::rules()
        .after_tool(
            "log_complaint",
            ScriptStep::exit("Your complaint is logged as #1001; we will call you tomorrow."),
        )
        .otherwise(ScriptStep::tool_call(
            "log_complaint",
            json!({"summary": "The kettle arrived broken."}),
        ))
        .named("complaint-script");
    let triage = ChatModelAgent::builder("triage", env.model(triage))
        .description("The front desk.")
        .build()
        .unwrap();
    let refund = ChatModelAgent::builder("refund", env.model(refund))
        .description("Refunds orders.")
        .tool_arc(env.tool(tool_fn(
            "lookup_order",
            "Finds an order.",
            |a: LookupOrder| async move {
                Ok::<_, String>(format!(
                    "order {}: one electric kettle, 39.00 EUR",
                    a.order_id
                ))
            },
        )))
        .tool_arc(env.tool(tool_fn(
            "issue_refund",
            "Pays an amount back.",
            |a: IssueRefund| async move {
                Ok::<_, String>(format!(
                    "refunded {:.2} EUR for order {}",
                    a.amount_eur, a.order_id
                ))
            },
        )))
        .build()
        .unwrap();
    let complaint = ChatModelAgent::builder("complaint", env.model(complaint))
        .description("Takes complaints.")
        .tool_arc(env.tool(tool_fn(
            "log_complaint",
            "Records a complaint.",
            |a: LogComplaint| async move {
                Ok::<_, String>(format!("complaint #1001 logged: {}", a.summary))
            },
        )))
        .exit_tool(true)
        .build()
        .unwrap();
    set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund), FlowAgent::new(complaint)],
    )
    .unwrap()
}
