//! The engine's authority over answers, through the library's doors: a runner with an
//! `AnswerRule` refuses, before anything runs, answers given by nobody, by a caller without the
//! grant, or by the turn's own requester when the rule wants another approver, on a streamed
//! turn (`Runner::turn`) and a background run (`Runner::start`) alike; the approver's answer
//! runs once and is recorded as theirs. A runner without a rule leaves it to its caller.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::store::Refusal;
use agentweave_runtime::{
    tool_fn, AnswerRule, Caller, ChatModelAgent, FlowAgent, InMemoryStore, Message, Runner,
    RunnerBuilder, ScriptStep, ScriptedModel, ThreadError, Tool, ToolApprovals, TurnOutcome,
    TurnRequest,
};
use serde_json::{json, Value};

/// A cashier whose `pay` tool needs an approval; `paid` counts the payments.
fn cashier(paid: &Arc<AtomicUsize>) -> RunnerBuilder {
    let paid = Arc::clone(paid);
    let pay = tool_fn("pay", "Pays.", move |_: HashMap<String, Value>| {
        let paid = Arc::clone(&paid);
        async move {
            paid.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>("paid".to_owned())
        }
    });
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(pay)];
    let model = ScriptedModel::rules()
        .after_tool("pay", ScriptStep::text("Paid."))
        .otherwise(ScriptStep::tool_call("pay", json!({})));
    let agent = ChatModelAgent::builder("cashier", model)
        .tools(ToolApprovals::new().always("pay").apply(tools))
        .build()
        .unwrap();
    Runner::builder(FlowAgent::new(agent)).stores(InMemoryStore::new())
}

/// Starts a turn of `thread` as `ana` (who may chat and approve); gives the interrupt's id.
async fn ask(runner: &Runner, thread: &str) -> String {
    let ana = Caller::new("ana").grants(["chat", "approve"]);
    let turn = runner
        .turn(TurnRequest::new(thread, Message::user("pay")).by(ana))
        .await
        .unwrap();
    match turn.finish().await {
        TurnOutcome::Interrupted { interrupts, .. } => interrupts[0].id.clone(),
        other => panic!("the payment should wait for an approval: {other:?}"),
    }
}

fn approve(thread: &str, id: &str) -> TurnRequest {
    TurnRequest::resume(thread, [(id.to_owned(), json!(true))])
}

fn refusal(result: Result<impl std::fmt::Debug, ThreadError>) -> Refusal {
    match result {
        Err(ThreadError::Forbidden { refusal, .. }) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_runner_with_a_rule_refuses_nobody_the_unscoped_and_the_requester() {
    let paid = Arc::new(AtomicUsize::new(0));
    let runner = cashier(&paid)
        .answer_rule(AnswerRule::new("approve").approver_not_requester(true))
        .build();
    let id = ask(&runner, "t").await;

    assert_eq!(
        refusal(runner.turn(approve("t", &id)).await),
        Refusal::Nobody
    );
    assert_eq!(
        refusal(runner.turn(approve("t", &id).by("ben")).await),
        Refusal::MissingGrant {
            caller: "ben".into(),
            grant: "approve".into()
        }
    );
    let ana = Caller::new("ana").grants(["chat", "approve"]);
    assert_eq!(
        refusal(runner.turn(approve("t", &id).by(ana.clone())).await),
        Refusal::OwnRequest {
            caller: "ana".into()
        }
    );
    // A background run is the same request through the same pipeline.
    assert_eq!(
        refusal(runner.start(approve("t", &id).by(ana)).await),
        Refusal::OwnRequest {
            caller: "ana".into()
        }
    );
    assert_eq!(paid.load(Ordering::SeqCst), 0, "nothing ran");

    let ben = Caller::new("ben").grants(["approve"]);
    let turn = runner.turn(approve("t", &id).by(ben)).await.unwrap();
    assert_eq!(turn.final_output().await.unwrap().unwrap().content, "Paid.");
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    let records = runner.thread("t").records().await.unwrap();
    assert_eq!(records[0].by.as_deref(), Some("ana"));
    assert_eq!(records.last().unwrap().by.as_deref(), Some("ben"));
}

#[tokio::test]
async fn a_tool_may_need_a_stronger_grant_and_a_runner_without_a_rule_checks_nothing() {
    let paid = Arc::new(AtomicUsize::new(0));
    let runner = cashier(&paid)
        .answer_rule(AnswerRule::new("approve").tool_grant("pa*", "admin"))
        .build();
    let id = ask(&runner, "t").await;
    let ben = Caller::new("ben").grants(["approve"]);
    assert_eq!(
        refusal(runner.turn(approve("t", &id).by(ben)).await),
        Refusal::MissingGrant {
            caller: "ben".into(),
            grant: "admin".into()
        }
    );
    let root = Caller::new("root").grants(["admin"]);
    let turn = runner.turn(approve("t", &id).by(root)).await.unwrap();
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
    assert_eq!(paid.load(Ordering::SeqCst), 1);

    // No rule: the library's caller decides; an answer by nobody runs.
    let open = cashier(&paid).build();
    let id = ask(&open, "u").await;
    let turn = open.turn(approve("u", &id)).await.unwrap();
    assert!(matches!(turn.finish().await, TurnOutcome::Completed { .. }));
    assert_eq!(paid.load(Ordering::SeqCst), 2);
}
