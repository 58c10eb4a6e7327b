//! A trajectory through an agent tool and a parallel workflow: recorded with run paths, and
//! matched in each mode and with each kind of argument matching.

use agentweave_eval::criteria::match_trajectory;
use agentweave_eval::set::{ArgsMatch, ExpectedStep, MatchMode, TrajectoryExpectation};
use agentweave_eval::trajectory::{Trajectory, TrajectoryRecorder};
use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{tool_fn, AgentTool, ChatModelAgent, FlowAgent, Parallel, Runner};
use futures::StreamExt;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    q: String,
    #[serde(default)]
    limit: Option<u32>,
}

/// A lane of the research workflow: an LLM agent calling its search tool once.
fn lane(name: &str, tool: &'static str) -> FlowAgent {
    let model = ScriptedModel::rules()
        .after_tool(tool, ScriptStep::text(format!("{name}: 3 results")))
        .otherwise(ScriptStep::tool_call(
            tool,
            json!({"q": "otters", "limit": 3}),
        ))
        .named(format!("{name}-model"));
    let search = tool_fn(tool, "Searches.", |a: Query| async move {
        Ok::<_, String>(format!("found {} about {}", a.limit.unwrap_or(10), a.q))
    });
    FlowAgent::new(
        ChatModelAgent::builder(name, model)
            .tool(search)
            .build()
            .unwrap(),
    )
}

/// `assistant` calls the `research` tree as a tool; `research` runs `web` and `papers` in
/// parallel, each calling its own search tool.
async fn run() -> Trajectory {
    let research = Parallel::new("research")
        .with_sub_agents([lane("web", "search_web"), lane("papers", "search_papers")])
        .unwrap();
    let model = ScriptedModel::rules()
        .after_tool("research", "Otters are well studied.")
        .otherwise(ScriptStep::tool_call(
            "research",
            json!({"request": "otters"}),
        ))
        .named("assistant-model");
    let assistant = ChatModelAgent::builder("assistant", model)
        .tool(AgentTool::new(research).with_description("Researches a topic."))
        .build()
        .unwrap();
    let recorder = TrajectoryRecorder::new();
    let events: Vec<_> = Runner::builder(FlowAgent::new(assistant))
        .middleware(recorder.clone())
        .build()
        .run("What is known about otters?")
        .collect()
        .await;
    assert!(events.iter().all(|e| e.error.is_none()));
    recorder.take().0
}

fn expect(mode: MatchMode, args: ArgsMatch, steps: Vec<ExpectedStep>) -> TrajectoryExpectation {
    TrajectoryExpectation { mode, args, steps }
}

#[tokio::test]
async fn the_recorder_sees_inside_agent_tools_and_parallel_lanes() {
    let t = run().await;
    let mut agents = t.agents();
    agents.sort();
    assert_eq!(
        agents,
        [
            "assistant",
            "assistant/research",
            "assistant/research/papers",
            "assistant/research/web"
        ]
    );
    let mut tools = t.tools();
    tools.sort();
    assert_eq!(tools, ["research", "search_papers", "search_web"]);
    assert_eq!(t.tools()[0], "research", "the agent tool is called first");
}

#[tokio::test]
async fn exact_mode_needs_every_step_in_order_and_nothing_else() {
    let t = run().await;
    // The lanes' order is what the run shows; exact mode holds it to that order.
    let lanes: Vec<&str> = t.tools()[1..].to_vec();
    let steps = |order: &[&str]| -> Vec<ExpectedStep> {
        std::iter::once(ExpectedStep::tool("research", json!({"request": "otters"})))
            .chain(
                order
                    .iter()
                    .map(|tool| ExpectedStep::tool(*tool, json!({"q": "otters", "limit": 3}))),
            )
            .collect()
    };
    let score = match_trajectory(
        &expect(MatchMode::Exact, ArgsMatch::Exact, steps(&lanes)),
        &t,
    );
    assert!(score.passed, "{}", score.reason);
    assert_eq!(score.score, 1.0);

    let swapped = [lanes[1], lanes[0]];
    let score = match_trajectory(
        &expect(MatchMode::Exact, ArgsMatch::Exact, steps(&swapped)),
        &t,
    );
    assert!(!score.passed);
    assert!(
        score.reason.starts_with("step 2: expected `tool "),
        "{}",
        score.reason
    );

    let score = match_trajectory(
        &expect(MatchMode::Exact, ArgsMatch::Exact, steps(&lanes[..1])),
        &t,
    );
    assert!(!score.passed);
    assert!(
        score.reason.starts_with("2 steps expected, 3 taken"),
        "{}",
        score.reason
    );
}

#[tokio::test]
async fn in_order_mode_allows_steps_between_but_not_another_order() {
    let t = run().await;
    // Agents by run path, then a tool call made inside the agent tool's parallel lane.
    let steps = vec![
        ExpectedStep::agent("assistant"),
        ExpectedStep::agent("assistant/research/web"),
        ExpectedStep::tool("search_web", json!({"q": "otters"})).by("web"),
    ];
    let score = match_trajectory(&expect(MatchMode::InOrder, ArgsMatch::Subset, steps), &t);
    assert!(score.passed, "{}", score.reason);

    let steps = vec![
        ExpectedStep::tool("search_web", json!({})),
        ExpectedStep::tool("research", json!({})),
    ];
    let score = match_trajectory(&expect(MatchMode::InOrder, ArgsMatch::Ignore, steps), &t);
    assert!(!score.passed);
    assert_eq!(score.score, 0.5);
    assert!(
        score
            .reason
            .starts_with("`tool research {}` was not taken after"),
        "{}",
        score.reason
    );
}

#[tokio::test]
async fn any_order_mode_takes_the_steps_in_any_order() {
    let t = run().await;
    let steps = vec![
        ExpectedStep::tool("search_papers", json!({"q": "otters"})).by("assistant/research/papers"),
        ExpectedStep::tool("search_web", json!({"q": "otters"})),
        ExpectedStep::tool("research", json!({"request": "otters"})),
    ];
    let score = match_trajectory(
        &expect(MatchMode::AnyOrder, ArgsMatch::Subset, steps.clone()),
        &t,
    );
    assert!(score.passed, "{}", score.reason);

    // The same steps with exact arguments: `limit` is missing from the lanes' expectations.
    let score = match_trajectory(
        &expect(MatchMode::AnyOrder, ArgsMatch::Exact, steps.clone()),
        &t,
    );
    assert!(!score.passed);
    assert!((score.score - 1.0 / 3.0).abs() < 1e-9, "{}", score.score);
    assert!(
        score.reason.starts_with("not taken: `tool search_papers"),
        "{}",
        score.reason
    );

    // Ignoring arguments, wrong ones match too; a tool never called does not.
    let mut wrong = steps;
    wrong[1] = ExpectedStep::tool("search_web", json!({"q": "beavers"}));
    wrong.push(ExpectedStep::tool("search_maps", json!({})));
    let score = match_trajectory(&expect(MatchMode::AnyOrder, ArgsMatch::Ignore, wrong), &t);
    assert!(!score.passed);
    assert_eq!(score.score, 0.75);
    assert!(
        score.reason.starts_with("not taken: `tool search_maps {}`"),
        "{}",
        score.reason
    );
}

#[tokio::test]
async fn an_empty_tool_list_expects_no_tool_call() {
    let t = run().await;
    let score = match_trajectory(&expect(MatchMode::Exact, ArgsMatch::Exact, vec![]), &t);
    assert!(!score.passed);
    assert!(
        score.reason.contains("0 steps expected, 3 taken"),
        "{}",
        score.reason
    );
}
