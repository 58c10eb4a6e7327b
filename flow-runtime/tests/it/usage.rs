//! Token usage: replies and events carry it, whole or streamed; a run totals it per agent and
//! per model; the totals survive an interrupt and resume.

use crate::support;

use std::sync::Arc;

use agentweave_runtime::model::{
    ScriptStep, ScriptedModel, Usage, UsageReport, UsageTotal, USAGE_SESSION_KEY,
};
use agentweave_runtime::{
    tool_fn_with_context, AgentEvent, ChatModelAgent, Checkpoint, CheckpointStore, EventOutput,
    FlowAgent, InMemoryStore, Message, Runner, Session, ToolContext,
};
use agentweave_runtime::{ResumeRequest, RunRequest};
use futures::executor::block_on;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

/// triage (model `triage-model`) transfers to refund (model `refund-model`), which answers.
fn desk() -> FlowAgent {
    let refund = ChatModelAgent::builder(
        "refund",
        ScriptedModel::rules()
            .otherwise(
                ScriptStep::text("Refunded.")
                    .with_usage(Usage::new(150, 5).with_cached_input(120).with_reasoning(3)),
            )
            .named("refund-model"),
    )
    .build()
    .unwrap();
    support::triage_to(refund)
}

/// The usage each event reports, reading streams to their end.
async fn usages(events: &[AgentEvent]) -> Vec<Option<Usage>> {
    let mut out = Vec::new();
    for e in events {
        out.push(match &e.output {
            Some(EventOutput::Stream(s)) => {
                s.fork().collect_message().await.unwrap().usage.map(|u| *u)
            }
            _ => e.usage().copied(),
        });
    }
    out
}

fn expected_report() -> UsageReport {
    let triage = UsageTotal {
        usage: Usage::new(100, 10),
        calls: 1,
    };
    let refund = UsageTotal {
        usage: Usage::new(150, 5).with_cached_input(120).with_reasoning(3),
        calls: 1,
    };
    UsageReport {
        total: Usage::new(250, 15).with_cached_input(120).with_reasoning(3),
        calls: 2,
        by_agent: [("triage".into(), triage), ("refund".into(), refund)].into(),
        by_model: [
            ("triage-model".into(), triage),
            ("refund-model".into(), refund),
        ]
        .into(),
    }
}

#[test]
fn replies_and_events_carry_usage_and_the_run_totals_it_per_agent_and_model() {
    for streaming in [false, true] {
        let session = Session::new();
        let events: Vec<AgentEvent> = block_on(
            Runner::builder(desk())
                .streaming(streaming)
                .build()
                .run(RunRequest::new([Message::user("refund")]).session(Arc::clone(&session)))
                .collect(),
        );
        let got = block_on(usages(&events));
        assert_eq!(
            got,
            [
                Some(Usage::new(100, 10)),
                None, // the transfer tool's result
                Some(Usage::new(150, 5).with_cached_input(120).with_reasoning(3)),
            ],
            "streaming: {streaming}"
        );
        assert_eq!(session.usage(), expected_report(), "streaming: {streaming}");
        // The recorded replies keep their usage too.
        let recorded: Vec<Option<Usage>> = session
            .events()
            .iter()
            .map(|e| e.message_now().and_then(|m| m.usage.as_deref().copied()))
            .collect();
        assert_eq!(recorded, got, "streaming: {streaming}");
    }
}

#[test]
fn usage_serializes_only_when_reported() {
    let plain = Message::assistant("hi");
    assert_eq!(
        serde_json::to_string(&plain).unwrap(),
        r#"{"role":"assistant","content":"hi"}"#
    );
    let with = Message {
        usage: Some(Box::new(Usage::new(3, 1))),
        ..plain
    };
    let text = serde_json::to_string(&with).unwrap();
    assert_eq!(
        text,
        r#"{"role":"assistant","content":"hi","usage":{"input_tokens":3,"output_tokens":1}}"#
    );
    assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), with);
}

#[derive(Deserialize, JsonSchema)]
struct Approval {
    /// What to approve.
    what: String,
}

#[test]
fn usage_totals_survive_an_interrupt_and_resume() {
    let approve = tool_fn_with_context(
        "approve",
        "Asks a human to approve.",
        |cx: ToolContext, a: Approval| async move {
            if cx.is_resuming() {
                return Ok("approved".to_owned());
            }
            Err(cx.interrupt(serde_json::json!({ "approve": a.what })))
        },
    );
    let model = ScriptedModel::rules()
        .after_tool(
            "approve",
            ScriptStep::text("Approved and done.").with_usage(Usage::new(30, 4)),
        )
        .otherwise(
            ScriptStep::tool_call("approve", serde_json::json!({"what": "refund"}))
                .with_usage(Usage::new(20, 2)),
        );
    let agent = ChatModelAgent::builder("clerk", model)
        .tool(approve)
        .build()
        .unwrap();
    let store = InMemoryStore::new();
    let runner = Runner::builder(FlowAgent::new(agent))
        .checkpoint_store(store.clone())
        .build();
    let session = Session::new();
    let first: Vec<AgentEvent> = block_on(
        runner
            .run(
                RunRequest::new([Message::user("go")])
                    .session(Arc::clone(&session))
                    .checkpoint("c1"),
            )
            .collect(),
    );
    assert!(first.last().unwrap().is_interrupt());
    assert_eq!(session.usage().total, Usage::new(20, 2));
    let resumed = block_on(runner.resume(ResumeRequest::new("c1", []))).unwrap();
    let rest: Vec<AgentEvent> = block_on(resumed.collect());
    assert_eq!(
        rest.last().unwrap().message_output().unwrap().content,
        "Approved and done."
    );
    // The checkpoint the finished run left holds the totals, gone on from the saved ones.
    let bytes = block_on(store.get("c1")).unwrap().unwrap();
    let checkpoint = Checkpoint::decode("c1", &bytes).unwrap();
    let report: UsageReport =
        serde_json::from_value(checkpoint.values[USAGE_SESSION_KEY].clone()).unwrap();
    assert_eq!(report.total, Usage::new(50, 6));
    assert_eq!(report.calls, 2);
}
