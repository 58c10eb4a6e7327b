//! Eval sets: our format and ADK's load and run against the desk; bad files say where they
//! are wrong; judges, repeats, simulations and reports behave.

use crate::common;

use agentweave_eval::criteria::{Exchange, Judge, Subject};
use agentweave_eval::report::Report;
use agentweave_eval::set::{
    adk_evalset_from_json, json_schema, read_adk_evalset, AdkOptions, EvalSet, EvalSetError,
    ResponseExpectation,
};
use agentweave_eval::trajectory::{Metrics, Trajectory};
use agentweave_eval::EvalRunner;
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{ChatModelAgent, FlowAgent};

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn judge_model(answer: &str) -> ScriptedModel {
    ScriptedModel::rules()
        .otherwise(ScriptStep::text(answer))
        .named("judge")
}

fn runner() -> EvalRunner {
    EvalRunner::new(common::desk).judge(judge_model(
        r#"{"score": 0.9, "reason": "Gives #1001 and thanks the customer."}"#,
    ))
}

#[tokio::test]
async fn our_eval_set_runs_against_the_desk_and_passes() {
    let set = EvalSet::from_file(fixture("desk.json")).unwrap();
    let report = runner().run(&set).await;
    assert!(report.passed(), "{}", report.table());
    let refund = report.case("refund").unwrap();
    let turn = &refund.runs[0].turns[0];
    let criteria: Vec<&str> = turn.scores.iter().map(|s| s.criterion.as_str()).collect();
    assert_eq!(
        criteria,
        [
            "trajectory (in order)",
            "response contains",
            "response regex",
            "response ROUGE-L",
            "budget"
        ]
    );
    assert_eq!(turn.metrics.model_calls, 4);
    assert_eq!(turn.metrics.tool_calls, 2);
    assert_eq!(turn.metrics.transfers, 1);
    assert_eq!(turn.metrics.usage.total_tokens(), 55);

    // The judge's reasoning is kept, on the whole conversation's scores.
    let complaint = report.case("complaint_then_thanks").unwrap();
    assert_eq!(complaint.runs[0].turns.len(), 2);
    let judge = &complaint.runs[0].case_scores[0];
    assert_eq!(
        (judge.criterion.as_str(), judge.score, judge.reason.as_str()),
        ("judge", 0.9, "Gives #1001 and thanks the customer.")
    );

    let table = report.table();
    assert!(table.contains("refund"), "{table}");
    assert!(table.ends_with("3 passed, 0 failed\n"), "{table}");
    let back: Report = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(back, report);
}

#[tokio::test]
async fn a_failing_expectation_fails_its_case_with_the_reason() {
    let mut set = EvalSet::from_file(fixture("desk.json")).unwrap();
    set.cases[0].turns[0].expect.response[0] = ResponseExpectation::Contains("40 EUR".into());
    let report = runner().run(&set).await;
    assert!(!report.passed());
    let table = report.table();
    assert!(
        table.contains("FAIL    response contains: the answer does not contain \"40 EUR\""),
        "{table}"
    );
    let xml = report.junit_xml();
    assert!(xml.contains("<testcase classname=\"customer-service desk\" name=\"refund\""));
    assert!(
        xml.contains("<failure message=\"pass rate 0.00 under 1.00\">"),
        "{xml}"
    );
    assert!(xml.contains("tests=\"3\" failures=\"1\""), "{xml}");
}

#[tokio::test]
async fn an_adk_evalset_loads_and_runs() {
    let set = read_adk_evalset(fixture("desk.evalset.json"), &AdkOptions::default()).unwrap();
    assert_eq!(set.name, "Customer-service desk (ADK evalset)");
    let ids: Vec<&str> = set.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["refund_order_42", "broken_kettle", "opening_hours"]);
    // Tool uses from `tool_uses` and from camelCase invocation events.
    let steps = &set.cases[1].turns[0]
        .expect
        .trajectory
        .as_ref()
        .unwrap()
        .steps;
    assert_eq!(steps[0].tool.as_deref(), Some("log_complaint"));
    assert_eq!(
        set.cases[2].simulation.as_ref().unwrap().opening,
        "Hi, are you open on Sundays?"
    );

    let report = runner()
        .persona(
            ScriptedModel::rules()
                .otherwise(ScriptStep::text("Thanks! DONE"))
                .named("persona"),
        )
        .run(&set)
        .await;
    assert!(report.passed(), "{}", report.table());
    let kettle = report.case("broken_kettle").unwrap();
    let criteria: Vec<&str> = kettle.runs[0].turns[0]
        .scores
        .iter()
        .map(|s| s.criterion.as_str())
        .collect();
    assert_eq!(
        criteria,
        ["trajectory (exact)", "response ROUGE-L", "judge"]
    );
    // The simulated user said its opening, then stopped.
    assert_eq!(report.case("opening_hours").unwrap().runs[0].turns.len(), 1);
}

#[test]
fn a_malformed_eval_set_names_the_file_line_and_field() {
    let text = "{\n  \"name\": \"x\",\n  \"cases\": [\n    {\"id\": \"a\", \"turns\": [\n      {\"user\": \"hi\", \"expect\": {\"response\": [{\"containz\": \"x\"}]}}\n    ]}\n  ]\n}";
    let e = EvalSet::from_json("evals/x.json", text).unwrap_err();
    let EvalSetError::Malformed {
        line,
        field,
        message,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*line, 5);
    assert_eq!(field, "cases[0].turns[0].expect.response[0]");
    assert!(message.contains("unknown variant `containz`"), "{message}");
    assert!(
        e.to_string()
            .starts_with("eval set evals/x.json, line 5, column "),
        "{e}"
    );

    let text = r#"{"name": "x", "cases": [{"id": "a", "turns": [{"user": "hi",
        "expect": {"trajectory": {"steps": [{"tool": "t", "transfer": "u"}]}}}]}]}"#;
    let e = EvalSet::from_json("x.json", text).unwrap_err();
    assert_eq!(
        e.to_string(),
        "eval set x.json: field `cases[0].turns[0].expect.trajectory.steps[0]`: a step is a \
         tool call or a transfer, not both"
    );
    let text = r#"{"name": "x", "cases": [{"id": "a", "turns": [{"user": "hi",
        "expect": {"response": [{"regex": "(unclosed"}]}}]}]}"#;
    let e = EvalSet::from_json("x.json", text).unwrap_err().to_string();
    assert!(
        e.contains("`cases[0].turns[0].expect.response[0]`: not a regular expression"),
        "{e}"
    );
    let text = r#"{"name": "x", "cases": [{"id": "a", "turns": [{"user": "a"}]}, {"id": "a", "turns": [{"user": "b"}]}]}"#;
    let e = EvalSet::from_json("x.json", text).unwrap_err().to_string();
    assert!(e.contains("two cases are named `a`"), "{e}");

    let e = adk_evalset_from_json(
        "a.evalset.json",
        r#"{"eval_set_id": "s", "eval_cases": [{"eval_id": 3}]}"#,
        &AdkOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("field `eval_cases[0].eval_id`"),
        "{e}"
    );
}

#[test]
fn the_committed_json_schema_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evalset.schema.json");
    let mut fresh = serde_json::to_string_pretty(&json_schema()).unwrap();
    fresh.push('\n');
    if std::env::var_os("AGENTFLOW_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "flow-eval/evalset.schema.json is stale: run AGENTFLOW_WRITE_SCHEMA=1 cargo test -p agentweave-eval --test it -- evalset::"
    );
    // The fixture follows it.
    let schema: serde_json::Value = serde_json::from_str(&committed).unwrap();
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("desk.json")).unwrap()).unwrap();
    assert!(jsonschema::is_valid(&schema, &fixture));
}

#[tokio::test]
async fn a_judge_that_answers_garbage_is_a_scored_failure() {
    let conversation = [Exchange {
        user: "hi".into(),
        answer: Some("hello".into()),
    }];
    let subject = Subject {
        conversation: &conversation,
        response: Some("hello"),
        trajectory: &Trajectory::default(),
        metrics: &Metrics::default(),
    };
    let judge = Judge::new(judge_model("I'd give it a solid B+!"));
    let score = judge.grade(&["Greets.".into()], 0.5, &subject).await;
    assert!(!score.passed);
    assert_eq!(score.score, 0.0);
    assert!(
        score
            .reason
            .starts_with("the judge's answer is not {\"score\": 0..1"),
        "{}",
        score.reason
    );
    assert!(score.reason.contains("solid B+"), "{}", score.reason);

    // Its prompt is documented and overridable.
    let judge = Judge::new(judge_model("{\"score\": 1}"))
        .with_prompt("Rubric: {rubric} / Said: {response}");
    assert_eq!(
        judge.prompt_for(&["Greets.".into()], &subject),
        "Rubric: 1. Greets. / Said: hello"
    );
    let score = judge.grade(&["Greets.".into()], 0.5, &subject).await;
    assert!(score.passed);
}

#[tokio::test]
async fn repeats_report_a_pass_rate_with_its_interval_and_fail_under_the_threshold() {
    let set = EvalSet::from_json(
        "inline.json",
        r#"{"name": "flaky", "cases": [
        {"id": "coin", "repeats": 4, "pass_rate": 0.75,
         "turns": [{"user": "hi", "expect": {"response": [{"contains": "yes"}]}}]}]}"#,
    )
    .unwrap();
    // A model that answers yes, no, yes, no across the runs (one call per run).
    let model = ScriptedModel::new(["yes", "no", "yes", "no"].map(ScriptStep::text));
    let report = EvalRunner::new(move |_| {
        FlowAgent::new(
            ChatModelAgent::builder("coin", model.clone())
                .build()
                .unwrap(),
        )
    })
    .run(&set)
    .await;
    let case = report.case("coin").unwrap();
    assert_eq!((case.runs.len(), case.passes, case.pass_rate), (4, 2, 0.5));
    assert!(
        (case.interval.0 - 0.150).abs() < 0.001 && (case.interval.1 - 0.850).abs() < 0.001,
        "{:?}",
        case.interval
    );
    assert!(!case.passed);
    assert!(
        report.table().contains("2/4 [0.15, 0.85]"),
        "{}",
        report.table()
    );
}

#[tokio::test]
async fn a_scripted_persona_talks_until_its_script_ends() {
    let set = EvalSet::from_json("inline.json", r#"{"name": "sim", "cases": [
        {"id": "chatty", "simulation": {"opening": "My kettle arrived broken!", "script": ["Thanks!", "Bye"], "max_turns": 5},
         "expect": {"trajectory": {"mode": "in_order", "args": "ignore", "steps": [{"tool": "log_complaint"}]},
                    "judge": {"rubric": ["Helpful."]}}}]}"#).unwrap();
    let report = runner().run(&set).await;
    let run = &report.case("chatty").unwrap().runs[0];
    let said: Vec<&str> = run.turns.iter().map(|t| t.user.as_str()).collect();
    assert_eq!(said, ["My kettle arrived broken!", "Thanks!", "Bye"]);
    assert!(report.passed(), "{}", report.table());
}

#[tokio::test]
async fn the_html_report_lists_every_case_and_marks_the_path() {
    let set = EvalSet::from_file(fixture("desk.json")).unwrap();
    let html = runner().run(&set).await.html();
    for id in ["refund", "complaint_then_thanks", "greeting"] {
        assert!(html.contains(&format!("<h2 id=\"case-{id}\">")), "{id}");
    }
    assert!(html.contains("<svg"));
    assert!(html.contains("g.agent[data-name=\"refund\"] rect{stroke:#2b6cb0"));
    assert!(html.contains("path[data-from=\"triage\"][data-to=\"refund\"]{stroke:#dd6b20"));
    assert!(
        html.contains("<li>tool lookup_order {&quot;order_id&quot;:42} (triage/refund)</li>"),
        "{html}"
    );
}
