//! Typed expectations from `flow!`: a trajectory written with the desk's generated types
//! (`Desk::trajectory()`, `DeskAgent`, `DeskTriageTarget`) runs through the eval runner
//! offline (scripted models), in each mode; one that the run does not follow fails with a
//! reason naming the step. The `trajectory!` macro writes the same with the agents' names.
//! (That one naming an agent or a transfer the flow lacks does not compile is in
//! `tests/ui/fail/trajectory_*.rs`.)

use agentweave::eval::criteria::match_trajectory;
use agentweave::eval::set::{
    ArgsMatch, EvalCase, EvalSet, ExpectedStep, MatchMode, TrajectoryExpectation, TurnCase,
};
use agentweave::eval::EvalRunner;
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::{flow, tool::tool_fn, trajectory, ChatModelAgent, FlowAgent};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    order_id: u64,
    #[serde(default)]
    amount_eur: Option<f64>,
}

flow! {
    /// The desk: triage routes refunds and complaints.
    Desk: dyn triage => [dyn refund, dyn complaint]
}

/// The desk on scripted models: triage sends "refund" requests to refund and "broken" ones to
/// complaint; refund looks the order up, then refunds it; complaint answers.
fn desk() -> FlowAgent {
    Desk::builder()
        .triage(|node| {
            let model = ScriptedModel::rules()
                .when_last_user_contains("refund", ScriptStep::transfer("refund"))
                .when_last_user_contains("broken", ScriptStep::transfer("complaint"))
                .otherwise("How can I help?")
                .named("triage-model");
            ChatModelAgent::builder(node, model).build().unwrap()
        })
        .refund(|node| {
            let model = ScriptedModel::rules()
                .after_tool("issue_refund", "Refunded 39 EUR.")
                .after_tool(
                    "lookup_order",
                    ScriptStep::tool_call(
                        "issue_refund",
                        json!({"order_id": 42, "amount_eur": 39.0}),
                    ),
                )
                .otherwise(ScriptStep::tool_call(
                    "lookup_order",
                    json!({"order_id": 42}),
                ))
                .named("refund-model");
            let tool = |name: &'static str| {
                tool_fn(name, "Orders.", |o: Order| async move {
                    Ok::<_, String>(format!("order {} ({:?})", o.order_id, o.amount_eur))
                })
            };
            ChatModelAgent::builder(node, model)
                .tool(tool("lookup_order"))
                .tool(tool("issue_refund"))
                .build()
                .unwrap()
        })
        .complaint(|node| {
            let model = ScriptedModel::rules()
                .otherwise("Sorry about the kettle; it is logged.")
                .named("complaint-model");
            ChatModelAgent::builder(node, model).build().unwrap()
        })
        .build()
        .unwrap()
        .into()
}

fn refund_case(id: &str, trajectory: impl Into<TrajectoryExpectation>) -> EvalCase {
    EvalCase::new(id).turn(TurnCase::new("I want a refund for order 42.").trajectory(trajectory))
}

#[test]
fn a_typed_spec_lowers_to_the_eval_expectation() {
    let spec = Desk::trajectory()
        .agent(DeskAgent::Triage)
        .transfer(DeskTriageTarget::Refund)
        .tool_by(DeskAgent::Refund, "lookup_order", json!({"order_id": 42}))
        .tool_called("issue_refund")
        .in_order()
        .args_subset();
    assert_eq!(spec.flow_name(), "Desk");
    let lowered = TrajectoryExpectation::from(spec);
    assert_eq!(
        lowered,
        TrajectoryExpectation {
            mode: MatchMode::InOrder,
            args: ArgsMatch::Subset,
            steps: vec![
                ExpectedStep::agent("triage"),
                ExpectedStep::transfer("refund").by("triage"),
                ExpectedStep::tool("lookup_order", json!({"order_id": 42})).by("refund"),
                ExpectedStep {
                    tool: Some("issue_refund".into()),
                    ..ExpectedStep::default()
                },
            ],
        }
    );
}

#[tokio::test]
async fn typed_expectations_pass_through_the_eval_runner_in_each_mode() {
    let set = EvalSet::new("typed desk")
        // Agents and transfers, exactly: the tool calls are not compared.
        .case(refund_case(
            "exact",
            Desk::trajectory()
                .agent(DeskAgent::Triage)
                .transfer(DeskTriageTarget::Refund)
                .agent(DeskAgent::Refund),
        ))
        // Tool calls with arguments, in order, arguments as a subset.
        .case(refund_case(
            "in_order",
            Desk::trajectory()
                .transfer(DeskTriageTarget::Refund)
                .tool_by(DeskAgent::Refund, "lookup_order", json!({"order_id": 42}))
                .tool("issue_refund", json!({"order_id": 42}))
                .in_order()
                .args_subset(),
        ))
        // The tools in the other order, arguments exactly.
        .case(refund_case(
            "any_order",
            Desk::trajectory()
                .tool("issue_refund", json!({"order_id": 42, "amount_eur": 39}))
                .tool("lookup_order", json!({"order_id": 42}))
                .any_order(),
        ))
        // The same checks written with names, which `trajectory!` checks at compile time.
        .case(refund_case(
            "macro",
            trajectory!(Desk:
                agent triage,
                transfer triage -> refund,
                tool lookup_order({"order_id": 42}) by refund,
                tool issue_refund,
            )
            .in_order()
            .args_subset(),
        ));
    let report = EvalRunner::new(|_| desk()).run(&set).await;
    assert!(report.passed(), "{}", report.table());
    assert_eq!(report.cases.len(), 4);
    let runs = &report.case("in_order").unwrap().runs;
    let score = &runs[0].turns[0].scores[0];
    assert_eq!(score.criterion, "trajectory (in order)");
    assert_eq!(score.score, 1.0);
    // A transfer refund makes back to triage is typed by refund's own target enum.
    assert_eq!(
        TrajectoryExpectation::from(Desk::trajectory().transfer(DeskRefundTarget::Triage)).steps,
        [ExpectedStep::transfer("triage").by("refund")]
    );
}

#[tokio::test]
async fn a_typed_expectation_the_run_does_not_follow_fails_with_its_reason() {
    // A complaint goes to complaint; the case expects refund's path (legal in the flow, but
    // not what this run does).
    let set = EvalSet::new("typed desk").case(
        EvalCase::new("broken kettle").turn(
            TurnCase::new("My kettle arrived broken.").trajectory(
                Desk::trajectory()
                    .agent(DeskAgent::Triage)
                    .transfer(DeskTriageTarget::Refund)
                    .agent(DeskAgent::Refund),
            ),
        ),
    );
    let report = EvalRunner::new(|_| desk()).run(&set).await;
    assert!(!report.passed());
    let case = report.case("broken kettle").unwrap();
    let turn = &case.runs[0].turns[0];
    let score = &turn.scores[0];
    assert!(!score.passed);
    assert_eq!(score.score, 0.0);
    assert!(
        score.reason.contains(
            "step 2: expected `transfer triage -> refund`, got `transfer triage -> complaint`"
        ),
        "{}",
        score.reason
    );
    // The same spec scores the recorded trajectory directly, too.
    let direct = match_trajectory(
        &Desk::trajectory()
            .agent(DeskAgent::Triage)
            .transfer(DeskTriageTarget::Complaint)
            .agent(DeskAgent::Complaint)
            .into(),
        &turn.trajectory,
    );
    assert!(direct.passed, "{}", direct.reason);
}
