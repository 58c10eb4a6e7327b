//! An eval case covers an approval: the runner keeps the checkpoints of its interrupts, and a
//! turn's `resume` answers them (approve or deny per interrupt), so the case scores the whole
//! turn, its continuation included. A turn that stops with no answer left fails, naming the
//! interrupt and what to add.

use std::sync::{Arc, Mutex};

use agentweave_eval::set::{EvalCase, EvalSet, ResponseExpectation, ResumeAnswer, TurnCase};
use agentweave_eval::{CaseEnv, EvalRunner};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{tool_fn, ChatModelAgent, FlowAgent, NeedsApproval};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct IssueRefund {
    order_id: u64,
}

/// A refund desk whose `issue_refund` asks a human first; `paid` lists the refunds it paid.
fn desk(paid: &Arc<Mutex<Vec<u64>>>) -> impl Fn(&CaseEnv) -> FlowAgent + Send + Sync + 'static {
    let paid = Arc::clone(paid);
    move |env: &CaseEnv| {
        let model = ScriptedModel::rules()
            .after_tool("issue_refund", ScriptStep::text("Refund handled."))
            .otherwise(ScriptStep::tool_call(
                "issue_refund",
                json!({"order_id": 42}),
            ));
        let paid = Arc::clone(&paid);
        let issue = env.tool(tool_fn(
            "issue_refund",
            "Pays an order back.",
            move |a: IssueRefund| {
                let paid = Arc::clone(&paid);
                async move {
                    paid.lock().unwrap().push(a.order_id);
                    Ok::<_, String>(format!("refunded order {}", a.order_id))
                }
            },
        ));
        let agent = ChatModelAgent::builder("refund", env.model(model))
            .tool(NeedsApproval::always(issue))
            .build()
            .unwrap();
        FlowAgent::new(agent)
    }
}

fn case(id: &str, resume: Vec<ResumeAnswer>) -> EvalSet {
    let mut turn = TurnCase::new("refund order 42")
        .response(ResponseExpectation::Contains("Refund handled".into()));
    for answer in resume {
        turn = turn.resume(answer);
    }
    EvalSet::new("approvals").case(EvalCase::new(id).turn(turn))
}

#[tokio::test]
async fn an_approved_call_runs_and_the_case_scores_the_continued_turn() {
    let paid = Arc::new(Mutex::new(Vec::new()));
    let report = EvalRunner::new(desk(&paid))
        .run(&case("approve", vec![ResumeAnswer::approve()]))
        .await;
    assert!(report.passed(), "{}", report.table());
    assert_eq!(*paid.lock().unwrap(), [42]);
    let turn = &report.cases[0].runs[0].turns[0];
    assert_eq!(turn.answer.as_deref(), Some("Refund handled."));
    // The turn's events hold the interrupt and, after it, the tool's result.
    let interrupted = turn
        .events
        .iter()
        .position(|e| matches!(e.action, Some(agentweave_runtime::Action::Interrupted(_))))
        .expect("the turn stopped for the approval");
    assert!(turn.events[interrupted..].iter().any(|e| e
        .message
        .as_ref()
        .is_some_and(|m| m.content == "refunded order 42")));
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_reads_the_reason() {
    let paid = Arc::new(Mutex::new(Vec::new()));
    let report = EvalRunner::new(desk(&paid))
        .run(&case("deny", vec![ResumeAnswer::deny("over the limit")]))
        .await;
    assert!(report.passed(), "{}", report.table());
    assert!(paid.lock().unwrap().is_empty());
    let turn = &report.cases[0].runs[0].turns[0];
    assert!(
        turn.events.iter().any(|e| e
            .message
            .as_ref()
            .is_some_and(|m| m.content.contains("over the limit"))),
        "{:#?}",
        turn.events
    );
}

#[tokio::test]
async fn an_interrupt_without_an_answer_fails_the_case_saying_what_to_add() {
    let paid = Arc::new(Mutex::new(Vec::new()));
    let report = EvalRunner::new(desk(&paid))
        .run(&case("none", vec![]))
        .await;
    assert!(!report.passed());
    let error = report.cases[0].runs[0].error.clone().unwrap();
    assert!(error.contains("interrupt 'refund'"), "{error}");
    assert!(error.contains("\"resume\""), "{error}");
    assert!(paid.lock().unwrap().is_empty());
}

#[test]
fn resume_answers_read_from_json_and_bad_ones_are_refused() {
    let set = EvalSet::from_json(
        "inline.json",
        r#"{"name": "a", "cases": [{"id": "c", "turns": [{"user": "refund order 42",
            "resume": [{"approve": false, "reason": "no"}, {"interrupt": "refund", "data": 7}]}]}]}"#,
    )
    .unwrap();
    let resume = &set.cases[0].turns[0].resume;
    assert_eq!(
        resume[0].resume_data().unwrap(),
        json!({"approve": false, "reason": "no"})
    );
    assert_eq!(resume[1].interrupt.as_deref(), Some("refund"));
    assert_eq!(resume[1].resume_data().unwrap(), json!(7));
    let error = EvalSet::from_json(
        "inline.json",
        r#"{"name": "a", "cases": [{"id": "c", "turns": [{"user": "x",
            "resume": [{"approve": true, "data": 1}]}]}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("cases[0].turns[0].resume[0]"), "{error}");
}
