//! A tool interrupts an LLM agent's turn; the run resumes from a checkpoint and the tool call
//! runs again with the caller's answer.

use std::collections::HashMap;

use flow_runtime::model::{ScriptStep, ScriptedModel};
use flow_runtime::{
    set_sub_agents, tool_fn_with_context, AgentEvent, ChatModelAgent, FlowAgent, FnAgent,
    InMemoryStore, Message, MessageRef, Role, Runner, Session, ToolContext, ToolError,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// Amount in euros.
    amount: u32,
}

fn desk(model: ScriptedModel) -> FlowAgent {
    let issue = tool_fn_with_context(
        "issue_refund",
        "Pays money back once a human approves.",
        |cx: ToolContext, args: Refund| async move {
            match cx.resume() {
                None => Err(ToolError::interrupt(
                    "issue_refund",
                    json!({ "approve": format!("refund {} EUR?", args.amount) }),
                    Some(json!({ "amount": args.amount })),
                )),
                Some(r) if r.data == Some(json!("yes")) => Ok(format!(
                    "refunded {} EUR",
                    r.state.as_ref().unwrap()["amount"]
                )),
                Some(_) => Ok("refund refused by a human".to_owned()),
            }
        },
    );
    let refund = ChatModelAgent::builder("refund", model)
        .tool(issue)
        .build()
        .unwrap();
    let triage = FnAgent::new("triage", |cx, _| async move {
        cx.transfer("refund");
        Ok(())
    });
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap()
}

fn script() -> ScriptedModel {
    ScriptedModel::rules()
        .after_tool("issue_refund", "All done.")
        .otherwise(ScriptStep::tool_call(
            "issue_refund",
            json!({ "amount": 40 }),
        ))
}

fn text(e: &AgentEvent) -> String {
    match (e.message_output(), e.interrupt()) {
        (_, Some(i)) => format!("{} interrupt {} {}", e.run_path(), i.id, i.info),
        (Some(m), _) if !m.tool_calls.is_empty() => {
            format!("{} {} calls {}", e.run_path(), m.role, m.tool_calls[0].name)
        }
        (Some(m), _) => format!("{} {}: {}", e.run_path(), m.role, m.content),
        _ => format!("{} {:?} {:?}", e.run_path(), e.action, e.error),
    }
}

#[tokio::test]
async fn a_tool_interrupt_is_resumed_with_the_callers_answer() {
    let model = script();
    let runner = Runner::new(desk(model.clone())).checkpoint_store(InMemoryStore::new());
    let first: Vec<AgentEvent> = runner
        .run_checkpointed(
            "t1",
            Session::new(),
            [MessageRef::new(Message::user("refund me"))],
        )
        .collect()
        .await;
    let first: Vec<String> = first.iter().map(text).collect();
    assert_eq!(
        first[first.len() - 2..],
        [
            "triage/refund assistant calls issue_refund".to_owned(),
            r#"triage/refund interrupt triage/refund [{"call_id":"call_1_1","info":{"approve":"refund 40 EUR?"},"tool":"issue_refund"}]"#.to_owned(),
        ]
    );

    let resumed: Vec<AgentEvent> = runner
        .resume(
            "t1",
            HashMap::from([("triage/refund".to_owned(), json!("yes"))]),
        )
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(
        resumed.iter().map(text).collect::<Vec<_>>(),
        [
            "triage/refund tool: refunded 40 EUR",
            "triage/refund assistant: All done.",
        ]
    );
    // After resume the model sees the conversation as if nothing had stopped.
    let last = model.requests().pop().unwrap();
    let roles: Vec<(Role, String)> = last
        .messages
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect();
    assert_eq!(
        roles.last().unwrap(),
        &(Role::Tool, "refunded 40 EUR".to_owned())
    );
    assert_eq!(roles[roles.len() - 2].0, Role::Assistant);
}

#[tokio::test]
async fn resuming_a_tool_interrupt_without_data_runs_the_call_again_unapproved() {
    let runner = Runner::new(desk(script())).checkpoint_store(InMemoryStore::new());
    let _: Vec<AgentEvent> = runner
        .run_checkpointed(
            "t2",
            Session::new(),
            [MessageRef::new(Message::user("refund"))],
        )
        .collect()
        .await;
    let again: Vec<AgentEvent> = runner
        .resume("t2", HashMap::new())
        .await
        .unwrap()
        .collect()
        .await;
    // No data: the tool is told it was resumed, sees no approval, and refuses.
    assert_eq!(
        again.iter().map(text).collect::<Vec<_>>(),
        [
            "triage/refund tool: refund refused by a human",
            "triage/refund assistant: All done.",
        ]
    );
}
