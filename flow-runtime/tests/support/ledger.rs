//! The paying desk of the crash-recovery tests: one turn of four model calls, two paying
//! tools that append to a ledger file (deduplicated by their idempotency key), a transfer and
//! a sequential workflow step.
//!
//! `desk` (its model calls `pay`, then transfers to `settle`) => `settle`, a sequential
//! workflow of `refunder` (its model calls `refund`, then answers) and `receipt` (a code
//! agent that says the receipt is written).

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentweave_runtime::{
    set_sub_agents, tool_fn_with_context, ChatModelAgent, FlowAgent, FnAgent, ScriptStep,
    ScriptedModel, Sequential, ToolContext,
};
use serde_json::json;

use super::processes::{append, lines};

/// Where a ledger line says which payment it is: `KEY TOOL AMOUNT`.
pub fn payments(ledger: &Path) -> Vec<String> {
    lines(ledger)
}

/// A paying tool `name`: pays `amount` once per idempotency key (a retried call with the
/// same key finds its line and does not pay again), pausing `pause` before and after the
/// payment (so that a kill can land inside the tool).
fn paying_tool(name: &'static str, ledger: PathBuf, pause: Duration) -> agentweave_runtime::FnTool {
    tool_fn_with_context(
        name,
        "Pays an amount.",
        move |cx: ToolContext, args: serde_json::Value| {
            let ledger = ledger.clone();
            async move {
                let amount = args["amount"].as_u64().unwrap_or(0);
                let key = cx.idempotency_key();
                append(&calls_of(&ledger), &format!("{key} {name}"));
                tokio::time::sleep(pause).await;
                let paid = lines(&ledger)
                    .iter()
                    .any(|l| l.starts_with(&format!("{key} ")));
                if !paid {
                    append(&ledger, &format!("{key} {name} {amount}"));
                }
                tokio::time::sleep(pause).await;
                Ok::<_, std::io::Error>(format!("{name}: {amount} paid"))
            }
        },
    )
}

/// The file where the paying tools log each of their executions (a retried call too).
pub fn calls_of(ledger: &Path) -> PathBuf {
    ledger.with_extension("calls")
}

/// The desk (see the module docs); `refund_idempotent: false` declares `refund` not
/// idempotent.
pub fn paying_desk(ledger: PathBuf, pause: Duration, refund_idempotent: bool) -> FlowAgent {
    let desk_model = ScriptedModel::rules()
        .after_tool("pay", ScriptStep::transfer("settle"))
        .otherwise(ScriptStep::tool_call("pay", json!({ "amount": 10 })));
    let desk = ChatModelAgent::builder("desk", desk_model)
        .tool(paying_tool("pay", ledger.clone(), pause))
        .build()
        .unwrap();
    let refunder_model = ScriptedModel::rules()
        .after_tool("refund", ScriptStep::text("refunded 5"))
        .otherwise(ScriptStep::tool_call("refund", json!({ "amount": 5 })));
    let refunder = ChatModelAgent::builder("refunder", refunder_model)
        .tool(paying_tool("refund", ledger, pause).with_idempotent(refund_idempotent))
        .build()
        .unwrap();
    let receipt = FnAgent::new("receipt", |cx, _| async move {
        cx.say("receipt written");
        Ok(())
    });
    let settle = Sequential::new("settle")
        .with_sub_agents([FlowAgent::new(refunder), FlowAgent::new(receipt)])
        .unwrap();
    set_sub_agents(FlowAgent::new(desk), [settle]).unwrap()
}

/// The ledger lines an uninterrupted turn writes: one `pay` and one `refund`.
pub fn paid_once(ledger: &Path) -> (usize, usize) {
    let lines = payments(ledger);
    let count = |tool: &str| {
        lines
            .iter()
            .filter(|l| l.split(' ').nth(1) == Some(tool))
            .count()
    };
    (count("pay"), count("refund"))
}

/// The paying desk behind an approval: `desk`'s model first calls `approve` (a tool that stops
/// for a human's answer), then `pay`, then transfers to `settle` as in [`paying_desk`]. The
/// resume of its turn runs every paying step.
pub fn approving_desk(ledger: PathBuf, pause: Duration) -> FlowAgent {
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human to approve the refund.",
        |cx: ToolContext, _: serde_json::Value| async move {
            match cx.resume_data() {
                None => Err(cx.interrupt(json!("approve the refund?"))),
                Some(answer) => Ok(format!("approved: {answer}")),
            }
        },
    );
    let desk_model = ScriptedModel::rules()
        .after_tool(
            "approve",
            ScriptStep::tool_call("pay", json!({ "amount": 10 })),
        )
        .after_tool("pay", ScriptStep::transfer("settle"))
        .otherwise(ScriptStep::tool_call("approve", json!({})));
    let desk = ChatModelAgent::builder("desk", desk_model)
        .tool(approve)
        .tool(paying_tool("pay", ledger.clone(), pause))
        .build()
        .unwrap();
    let refunder_model = ScriptedModel::rules()
        .after_tool("refund", ScriptStep::text("refunded 5"))
        .otherwise(ScriptStep::tool_call("refund", json!({ "amount": 5 })));
    let refunder = ChatModelAgent::builder("refunder", refunder_model)
        .tool(paying_tool("refund", ledger, pause))
        .build()
        .unwrap();
    let receipt = FnAgent::new("receipt", |cx, _| async move {
        cx.say("receipt written");
        Ok(())
    });
    let settle = Sequential::new("settle")
        .with_sub_agents([FlowAgent::new(refunder), FlowAgent::new(receipt)])
        .unwrap();
    set_sub_agents(FlowAgent::new(desk), [settle]).unwrap()
}

/// A desk whose model asks `clerk`, an agent tool (its events surfaced), which pays `refund`
/// and answers; then the desk pays `pay` and answers. The clerk's steps run inside the tool.
pub fn clerk_desk(ledger: PathBuf, pause: Duration) -> FlowAgent {
    let clerk_model = ScriptedModel::rules()
        .after_tool("refund", ScriptStep::text("refund noted"))
        .otherwise(ScriptStep::tool_call("refund", json!({ "amount": 5 })));
    let clerk = ChatModelAgent::builder("clerk", clerk_model)
        .description("Pays refunds and notes them.")
        .tool(paying_tool("refund", ledger.clone(), pause))
        .build()
        .unwrap();
    let desk_model = ScriptedModel::rules()
        .after_tool(
            "clerk",
            ScriptStep::tool_call("pay", json!({ "amount": 10 })),
        )
        .after_tool("pay", ScriptStep::text("all settled"))
        .otherwise(ScriptStep::tool_call(
            "clerk",
            json!({ "request": "refund 5" }),
        ));
    let desk = ChatModelAgent::builder("desk", desk_model)
        .tool(agentweave_runtime::AgentTool::new(FlowAgent::new(clerk)).surface_events(true))
        .tool(paying_tool("pay", ledger, pause))
        .build()
        .unwrap();
    FlowAgent::new(desk)
}
