//! The engine driven through its effects with no Temporal at all: a pump answers each effect
//! the turn asks (a model call, a tool call, a human's answer) by calling what the activities
//! call. The turn gives the in-process runner's events, JSON for JSON; an approval's answer
//! resumes the tool call with it (approved: the tool runs; refused: the model is told). Runs in
//! `cargo test --workspace`: no server, no protoc.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use agentweave_runtime::host::ManualHost;
use agentweave_runtime::model::ScriptStep;
use agentweave_runtime::{
    set_sub_agents, tool_fn_with_context, AgentEvent, ChatModelAgent, FlowAgent, InMemoryStore,
    Message, NeedsApproval, Runner, ToolContext, ToolError, TurnRequest,
};
use agentweave_temporal::turn::{drive, start_turn, Started, ThreadLog};
use agentweave_temporal::{call_model, call_tool, Effect, Effects, Flows, Outcome};
use futures::StreamExt;
use serde_json::json;

// Also a module of `support`, which builds only with the SDK: this one builds without it.
#[allow(clippy::duplicate_mod)]
#[path = "../support/stateless.rs"]
mod stateless;
use stateless::stateless;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Amount {
    amount: u32,
}

/// desk -> billing, which pays (under approval when `approve` is set) and says it is done.
fn desk(paid: Arc<AtomicUsize>, approve: bool) -> FlowAgent {
    let pay = tool_fn_with_context("pay", "Pays.", move |cx: ToolContext, args: Amount| {
        let paid = paid.clone();
        async move {
            paid.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(format!(
                "paid {} under {}",
                args.amount,
                cx.idempotency_key()
            ))
        }
    });
    let billing = ChatModelAgent::builder(
        "billing",
        stateless(vec![
            ScriptStep::tool_call("pay", json!({ "amount": 30 })),
            ScriptStep::text("billing is done"),
        ]),
    )
    .description("Pays bills.");
    let billing = if approve {
        billing.tool(NeedsApproval::always(Arc::new(pay)))
    } else {
        billing.tool(pay)
    }
    .build()
    .unwrap();
    let front = ChatModelAgent::builder("desk", stateless(vec![ScriptStep::transfer("billing")]))
        .description("The desk.")
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(front), [FlowAgent::new(billing)]).unwrap()
}

/// Runs one turn of `flow` through its effects, each answered as the activities answer it;
/// a question is answered with `answer`.
async fn through_effects(flow: FlowAgent, answer: serde_json::Value) -> (Vec<AgentEvent>, usize) {
    let flows = Flows::new();
    flows.insert("desk", flow.clone());
    let effects = Effects::new(SystemTime::UNIX_EPOCH, 7);
    let log = ThreadLog::new("t");
    let asked = Arc::new(AtomicUsize::new(0));
    let (events, _) = start_turn(
        &flow,
        "desk",
        &effects,
        &log,
        Message::user("pay my bill"),
        agentweave_runtime::CancelSignal::new(),
    );
    let (events, stopped) = drive(
        events,
        &effects,
        |_, effect| -> Started<'static> {
            let flows = flows.clone();
            let answer = answer.clone();
            let asked = asked.clone();
            Box::pin(async move {
                match effect {
                    Effect::Model(call) => Outcome::Model(
                        call_model(&flows, &call)
                            .await
                            .unwrap()
                            .map_err(|e| e.to_string()),
                    ),
                    Effect::Tool(call) => {
                        Outcome::Tool(call_tool(&flows, &call).await.map_err(|e| e.to_string()))
                    }
                    Effect::Sleep(_) => Outcome::Slept,
                    Effect::Answer(_) => {
                        asked.fetch_add(1, Ordering::SeqCst);
                        Outcome::Answered(answer)
                    }
                }
            })
        },
        || {},
        Box::pin(futures::future::pending()),
    )
    .await;
    assert!(!stopped, "nothing stops the turn");
    (events, asked.load(Ordering::SeqCst))
}

fn json_of(events: &[AgentEvent]) -> Vec<serde_json::Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(e.to_json().unwrap()).unwrap())
        .collect()
}

fn said(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e.message_output().map(|m| m.content.clone()))
        .collect()
}

#[tokio::test]
async fn a_turn_driven_through_its_effects_gives_the_in_process_runners_events() {
    let paid = Arc::new(AtomicUsize::new(0));
    let (events, _) = through_effects(desk(paid.clone(), false), json!(null)).await;
    assert_eq!(paid.load(Ordering::SeqCst), 1);

    let here = Arc::new(AtomicUsize::new(0));
    let runner = Runner::builder(desk(here, false))
        .stores(InMemoryStore::new())
        .host(Arc::new(ManualHost::new()))
        .build();
    let expected: Vec<AgentEvent> = runner
        .turn(TurnRequest::new("t", Message::user("pay my bill")))
        .await
        .unwrap()
        .collect()
        .await;
    // The idempotency scope is each host's fresh id: the tool's text names it; the rest is
    // the same, JSON for JSON.
    let scrub = |v: Vec<serde_json::Value>| -> Vec<String> {
        v.iter()
            .map(|e| {
                let text = e.to_string();
                match text.find("under ") {
                    Some(at) => text[..at].to_owned(),
                    None => text,
                }
            })
            .collect()
    };
    assert_eq!(scrub(json_of(&events)), scrub(json_of(&expected)));
    assert!(said(&events).iter().any(|s| s == "billing is done"));
}

#[tokio::test]
async fn an_approved_call_runs_and_a_refused_one_does_not() {
    let paid = Arc::new(AtomicUsize::new(0));
    let (events, asked) = through_effects(desk(paid.clone(), true), json!(true)).await;
    assert_eq!(asked, 1, "one question");
    assert_eq!(paid.load(Ordering::SeqCst), 1, "approved: paid once");
    assert!(
        said(&events).iter().any(|s| s.starts_with("paid 30")),
        "{:?}",
        said(&events)
    );

    let paid = Arc::new(AtomicUsize::new(0));
    let (events, asked) = through_effects(desk(paid.clone(), true), json!(false)).await;
    assert_eq!(asked, 1);
    assert_eq!(paid.load(Ordering::SeqCst), 0, "refused: nothing paid");
    assert!(
        said(&events).iter().any(|s| s.contains("was not approved")),
        "{:?}",
        said(&events)
    );
}
