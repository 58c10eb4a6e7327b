//! Steering a running turn ([`RunHandle::steer`]): the message joins the turn at its next safe
//! point (after the tool calls, before the model is asked again), recorded there, in order,
//! once, across an interrupt's checkpoint too; a steer to an ended run is a typed error; the
//! `steer` double-texting strategy.

use std::sync::Arc;

use agentweave_runtime::{
    tool_fn, tool_fn_with_context, ChatModelAgent, DoubleText, FlowAgent, InMemoryStore, Message,
    Role, RunStatus, Runner, ScriptStep, ScriptedModel, SteerError, ToolContext, TurnRequest,
};
use serde_json::json;
use tokio::sync::Notify;

/// A desk whose model calls `lookup` first, then answers with every user message it was
/// given after the first (`heard: ...`), or `done`; `lookup` tells `started` it runs, then
/// waits for `go`.
fn desk(started: Arc<Notify>, go: Arc<Notify>) -> (Runner, ScriptedModel) {
    let model = ScriptedModel::rules()
        .when_with(
            |r| r.messages.iter().any(|m| m.role == Role::Tool),
            |r| {
                let users: Vec<&str> = r
                    .messages
                    .iter()
                    .filter(|m| m.role == Role::User)
                    .map(|m| m.content.as_str())
                    .skip(1)
                    .collect();
                if users.is_empty() {
                    ScriptStep::text("done")
                } else {
                    ScriptStep::text(format!("heard: {}", users.join(" | ")))
                }
            },
        )
        .otherwise(ScriptStep::tool_call("lookup", json!({})))
        .keep_requests(true);
    let lookup = tool_fn(
        "lookup",
        "Looks the order up.",
        move |_: serde_json::Value| {
            let (started, go) = (Arc::clone(&started), Arc::clone(&go));
            async move {
                started.notify_one();
                go.notified().await;
                Ok::<_, std::io::Error>("order 7: a kettle")
            }
        },
    );
    let agent = ChatModelAgent::builder("desk", model.clone())
        .tool(lookup)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .build();
    (runner, model)
}

/// The thread's only turn, as `agent@path: role content` lines.
async fn record(runner: &Runner) -> Vec<String> {
    let records = runner.thread("t").records().await.unwrap();
    assert_eq!(records.len(), 1);
    records[0]
        .events
        .iter()
        .filter_map(|e| {
            let m = e.message.as_ref()?;
            let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
            Some(format!(
                "{}@{}: {:?} {}{}",
                e.agent_name,
                e.run_path,
                m.role,
                m.content,
                if calls.is_empty() {
                    String::new()
                } else {
                    format!(" [calls {}]", calls.join(","))
                }
            ))
        })
        .collect()
}

#[tokio::test]
async fn steers_join_the_turn_after_its_tool_calls_in_order_and_once() {
    let (started, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (runner, model) = desk(Arc::clone(&started), Arc::clone(&go));
    let run = runner
        .start(TurnRequest::new("t", Message::user("refund order 7")))
        .await
        .unwrap();
    // The tool runs: the model has been asked once.
    started.notified().await;
    run.steer(Message::user("also refund the shipping"))
        .unwrap();
    run.steer(Message::user("and email me")).unwrap();
    go.notify_one();
    let outcome = run.wait().await;
    assert_eq!(outcome.status(), RunStatus::Success, "{outcome:?}");
    assert_eq!(model.calls(), 2, "the model is asked again once, with both");
    assert_eq!(
        record(&runner).await,
        [
            "desk@desk: Assistant  [calls lookup]",
            "desk@desk: Tool order 7: a kettle",
            "desk@desk: User also refund the shipping",
            "desk@desk: User and email me",
            "desk@desk: Assistant heard: also refund the shipping | and email me",
        ]
    );
    let second = &model.requests()[1];
    let users: Vec<&str> = second
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        users,
        ["refund order 7", "also refund the shipping", "and email me"]
    );
    assert!(run.undelivered_steers().is_empty());
}

#[tokio::test]
async fn a_steer_to_an_ended_run_is_a_typed_error() {
    let (started, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (runner, _) = desk(started, Arc::clone(&go));
    go.notify_one();
    let run = runner
        .start(TurnRequest::new("t", Message::user("refund order 7")))
        .await
        .unwrap();
    assert_eq!(run.wait().await.status(), RunStatus::Success);
    let err = run.steer(Message::user("too late")).unwrap_err();
    assert!(
        matches!(
            &err,
            SteerError::Ended {
                status: "success",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "run '{}' has already ended (success); it takes no steering message: start a new \
             turn of its thread with the message instead",
            run.id()
        )
    );
    // Nothing of it reached the record.
    assert_eq!(
        record(&runner).await,
        [
            "desk@desk: Assistant  [calls lookup]",
            "desk@desk: Tool order 7: a kettle",
            "desk@desk: Assistant done",
        ]
    );
}

#[tokio::test]
async fn the_steer_strategy_gives_a_new_message_to_the_run_going() {
    let (started, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (runner, model) = desk(Arc::clone(&started), Arc::clone(&go));
    let first = runner
        .start(TurnRequest::new("t", Message::user("refund order 7")))
        .await
        .unwrap();
    started.notified().await;
    let second = runner
        .start(
            TurnRequest::new("t", Message::user("also refund the shipping"))
                .if_busy(DoubleText::Steer),
        )
        .await
        .unwrap();
    assert_eq!(second.id(), first.id(), "the run going is the answer");
    go.notify_one();
    assert_eq!(first.wait().await.status(), RunStatus::Success);
    assert_eq!(model.calls(), 2);
    let records = runner.thread("t").records().await.unwrap();
    assert_eq!(records.len(), 1, "one turn: the message joined it");
    assert_eq!(
        record(&runner).await.last().unwrap(),
        "desk@desk: Assistant heard: also refund the shipping"
    );
    assert_eq!("steer".parse::<DoubleText>().unwrap(), DoubleText::Steer);

    // With no run going, the message starts a run of its own.
    go.notify_one();
    let third = runner
        .start(TurnRequest::new("t", Message::user("thanks")).if_busy(DoubleText::Steer))
        .await
        .unwrap();
    assert_ne!(third.id(), first.id());
    assert_eq!(third.wait().await.status(), RunStatus::Success);
}

#[tokio::test]
async fn a_steer_sent_before_an_interrupt_is_taken_in_by_the_resumed_turn() {
    let started = Arc::new(Notify::new());
    let go = Arc::new(Notify::new());
    let (s, g) = (Arc::clone(&started), Arc::clone(&go));
    // `approve` stops for a human's answer the first time, after the test steered.
    let approve = tool_fn_with_context(
        "lookup",
        "Needs an approval.",
        move |cx: ToolContext, _: serde_json::Value| {
            let (s, g) = (Arc::clone(&s), Arc::clone(&g));
            async move {
                if let Some(answer) = cx.resume_data() {
                    return Ok(format!("approved: {answer}"));
                }
                s.notify_one();
                g.notified().await;
                Err(cx.interrupt(json!("approve?")))
            }
        },
    );
    let model = ScriptedModel::rules()
        .when_with(
            |r| r.messages.iter().any(|m| m.role == Role::Tool),
            |r| {
                let last = r.messages.last().unwrap();
                ScriptStep::text(format!("{:?}: {}", last.role, last.content))
            },
        )
        .otherwise(ScriptStep::tool_call("lookup", json!({})));
    let agent = ChatModelAgent::builder("desk", model)
        .tool(approve)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .build();
    let first = runner
        .start(TurnRequest::new("t", Message::user("refund order 7")))
        .await
        .unwrap();
    started.notified().await;
    first.steer(Message::user("also the shipping")).unwrap();
    go.notify_one();
    assert_eq!(first.wait().await.status(), RunStatus::Interrupted);
    assert_eq!(
        first.undelivered_steers().len(),
        1,
        "not taken before the checkpoint"
    );
    let resumed = runner
        .start(TurnRequest::resume(
            "t",
            [("desk".to_owned(), json!("yes"))],
        ))
        .await
        .unwrap();
    let outcome = resumed.wait().await;
    assert_eq!(outcome.status(), RunStatus::Success, "{outcome:?}");
    assert!(first.undelivered_steers().is_empty(), "taken once");
    let records = runner.thread("t").records().await.unwrap();
    let last: Vec<String> = records
        .last()
        .unwrap()
        .events
        .iter()
        .filter_map(|e| e.message.as_ref())
        .map(|m| format!("{:?} {}", m.role, m.content))
        .collect();
    assert!(
        last.ends_with(&[
            "User also the shipping".to_owned(),
            "Assistant User: also the shipping".to_owned()
        ]),
        "{last:#?}"
    );
}

/// A desk for the recovery test: the model calls `lookup`, then (once the steer is in) `ship`,
/// then answers with the user messages after the first. `ship` blocks forever when `hang`
/// (the dying worker's), else answers at once (the recovering worker's).
fn shipping_desk(
    store: &InMemoryStore,
    started: Arc<Notify>,
    go: Arc<Notify>,
    shipping: Arc<Notify>,
    hang: bool,
) -> (Runner, ScriptedModel) {
    let model = ScriptedModel::rules()
        .when_with(
            |r| {
                r.messages
                    .iter()
                    .any(|m| m.tool_name.as_deref() == Some("ship"))
            },
            |r| {
                let users: Vec<&str> = r
                    .messages
                    .iter()
                    .filter(|m| m.role == Role::User)
                    .map(|m| m.content.as_str())
                    .skip(1)
                    .collect();
                ScriptStep::text(format!("heard: {}", users.join(" | ")))
            },
        )
        .when_with(
            |r| r.messages.iter().any(|m| m.role == Role::Tool),
            |_| ScriptStep::tool_call("ship", json!({})),
        )
        .otherwise(ScriptStep::tool_call("lookup", json!({})));
    let lookup = tool_fn(
        "lookup",
        "Looks the order up.",
        move |_: serde_json::Value| {
            let (started, go) = (Arc::clone(&started), Arc::clone(&go));
            async move {
                started.notify_one();
                go.notified().await;
                Ok::<_, std::io::Error>("order 7: a kettle")
            }
        },
    );
    let ship = tool_fn("ship", "Ships the order.", move |_: serde_json::Value| {
        let shipping = Arc::clone(&shipping);
        async move {
            shipping.notify_one();
            if hang {
                std::future::pending::<()>().await;
            }
            Ok::<_, std::io::Error>("shipped")
        }
    })
    .with_idempotent(true);
    let agent = ChatModelAgent::builder("desk", model.clone())
        .tool(lookup)
        .tool(ship)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(store.clone())
        .journal_store(store.clone())
        .durability(agentweave_runtime::Durability::Sync)
        .lease(std::time::Duration::from_millis(60))
        .build();
    (runner, model)
}

#[tokio::test]
async fn a_turn_that_died_after_taking_a_steer_is_recovered_with_it_in_place() {
    let store = InMemoryStore::new();
    let (started, go, shipping) = (
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
    );
    let (dying, _) = shipping_desk(
        &store,
        Arc::clone(&started),
        Arc::clone(&go),
        Arc::clone(&shipping),
        true,
    );
    let run = dying
        .start(TurnRequest::new("t", Message::user("refund order 7")))
        .await
        .unwrap();
    started.notified().await;
    run.steer(Message::user("also refund the shipping"))
        .unwrap();
    go.notify_one();
    // The worker took the steer in, asked the model again and hangs in `ship`: it is as good
    // as dead (no event flows, so its lease runs out).
    shipping.notified().await;

    let (other, model) = shipping_desk(
        &store,
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
        false,
    );
    let turn = loop {
        match other.recover("t").await {
            Err(agentweave_runtime::RecoverError::Leased { .. }) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await
            }
            other => break other.unwrap().expect("a dead turn to recover"),
        }
    };
    let outcome = turn.finish().await;
    assert!(
        matches!(outcome, agentweave_runtime::TurnOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(
        record(&other).await,
        [
            "desk@desk: Assistant  [calls lookup]",
            "desk@desk: Tool order 7: a kettle",
            "desk@desk: User also refund the shipping",
            "desk@desk: Assistant  [calls ship]",
            "desk@desk: Tool shipped",
            "desk@desk: Assistant heard: also refund the shipping",
        ]
    );
    // The journaled replies were not asked again: only the last answer was.
    assert_eq!(model.calls(), 1);
}
