//! A workflow tree declared with `flow!` behaves exactly like the same tree built by hand with
//! `Sequential`, `Parallel` and `Loop`: same shape, same fingerprint, same events.

use agentweave::history::ContextPolicy;
use agentweave::prelude::*;
use agentweave::workflow::Loop;
use agentweave::workflow::Parallel;
use agentweave::workflow::Sequential;
use futures::StreamExt;

/// Writes the first draft.
#[agent]
async fn drafter(cx: &AgentContext, input: AgentInput) {
    cx.say(format!("draft of {} messages", input.messages.len()));
}

/// Checks the style.
#[agent]
async fn style(cx: &AgentContext) {
    cx.say("style ok");
}

/// Checks the facts.
#[agent]
async fn facts(cx: &AgentContext) {
    cx.say("facts ok");
}

/// Revises the draft.
#[agent]
async fn reviser(cx: &AgentContext, input: AgentInput) {
    cx.say(format!("revised after {} messages", input.messages.len()));
}

/// Approves the revision.
#[agent]
async fn approver(cx: &AgentContext) {
    cx.say("approved");
}

flow! {
    /// Drafts, reviews in parallel, then revises twice.
    Research: pipeline = sequential [
        drafter,
        /// Reviews style and facts at once.
        reviews = parallel [style, facts],
        /// Revises until approved,
        /// twice at most.
        revise = loop(max = 2) [reviser, approver(context = user_input_only)],
    ]
}

fn by_hand() -> FlowAgent {
    let reviews = Parallel::new("reviews")
        .with_description("Reviews style and facts at once.")
        .with_sub_agents([FlowAgent::new(style), FlowAgent::new(facts)])
        .unwrap();
    let revise = Loop::new("revise", 2)
        .with_description("Revises until approved,\ntwice at most.")
        .with_sub_agents([
            FlowAgent::new(reviser),
            FlowAgent::new(approver).context(ContextPolicy::UserInputOnly),
        ])
        .unwrap();
    Sequential::new("pipeline")
        .with_sub_agents([FlowAgent::new(drafter), reviews, revise])
        .unwrap()
}

const SHAPE: &str = "pipeline(drafter^,reviews^(style^,facts^),revise^(reviser^,approver^))";

/// Everything observable about an event, as text.
fn describe(e: &AgentEvent) -> String {
    format!(
        "{} @ {} | {:?} | {:?} | {:?}",
        e.agent_name(),
        e.run_path(),
        e.message_output().map(|m| m.content.clone()),
        e.action,
        e.error.as_ref().map(ToString::to_string)
    )
}

async fn run(flow: FlowAgent, query: &str) -> Vec<String> {
    Runner::new(flow)
        .run(query)
        .map(|e| describe(&e))
        .collect()
        .await
}

#[test]
fn same_shape_and_fingerprint() {
    let declared = Research::new().unwrap();
    let hand = by_hand();
    assert_eq!(declared.flow().shape(), SHAPE);
    assert_eq!(hand.shape(), SHAPE);
    assert_eq!(Research::FINGERPRINT, declared.flow().fingerprint());
    assert_eq!(Research::FINGERPRINT, hand.fingerprint());
    assert_eq!(
        Research::FINGERPRINT,
        agentweave::spec::fingerprint_of(SHAPE)
    );
    assert_eq!(
        Research::AGENTS,
        ["pipeline", "drafter", "reviews", "style", "facts", "revise", "reviser", "approver"]
    );
    assert_eq!(
        Research::path_of("approver").unwrap(),
        ["pipeline", "revise", "approver"]
    );
    // Every sub-agent of a workflow is barred from it.
    let mermaid = Research::mermaid();
    assert!(!mermaid.contains("<-->"), "{mermaid}");
}

#[test]
fn a_doc_comment_on_a_workflow_node_is_its_description() {
    let declared = Research::new().unwrap();
    let hand = by_hand();
    for (name, description) in [
        ("pipeline", ""),
        ("reviews", "Reviews style and facts at once."),
        ("revise", "Revises until approved,\ntwice at most."),
        ("drafter", "Writes the first draft."),
    ] {
        assert_eq!(
            declared.flow().find(name).unwrap().description(),
            description,
            "{name}"
        );
        assert_eq!(
            hand.find(name).unwrap().description(),
            description,
            "{name}"
        );
    }
}

#[tokio::test]
async fn same_events_on_the_same_input() {
    let declared = run(Research::new().unwrap().into(), "write about owls").await;
    let hand = run(by_hand(), "write about owls").await;
    // The parallel lanes may interleave: compare everything as a multiset, and the order of
    // the events outside the parallel lanes exactly.
    let (mut d, mut h) = (declared.clone(), hand.clone());
    d.sort();
    h.sort();
    assert_eq!(d, h);
    let outside = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|e| !e.starts_with("style") && !e.starts_with("facts"))
            .cloned()
            .collect()
    };
    assert_eq!(outside(&declared), outside(&hand));
    assert_eq!(
        outside(&declared),
        [
            "drafter @ pipeline/drafter | Some(\"draft of 1 messages\") | None | None",
            "reviser @ pipeline/drafter/reviews/revise/reviser | Some(\"revised after 4 messages\") | None | None",
            "approver @ pipeline/drafter/reviews/revise/reviser/approver | Some(\"approved\") | None | None",
            "reviser @ pipeline/drafter/reviews/revise/reviser/approver/reviser | Some(\"revised after 6 messages\") | None | None",
            "approver @ pipeline/drafter/reviews/revise/reviser/approver/reviser/approver | Some(\"approved\") | None | None",
        ]
    );
    assert_eq!(declared.len(), 7);
}

/// Lists the tickets to answer.
#[agent]
async fn lister(cx: &AgentContext) {
    cx.say(r#"["t1","t2","t3"]"#);
}

/// Answers one ticket.
#[agent]
async fn ticket(cx: &AgentContext, input: AgentInput) {
    let item = input.messages.last().map(|m| m.content.clone());
    cx.say(format!("answered {}", item.unwrap_or_default()));
}

flow! {
    /// Lists the tickets, then answers each, two at a time.
    Tickets: desk = sequential [
        lister,
        /// Answers every ticket.
        answers = map(last_output, concurrency = 2, on_failure = collect_errors) [ticket],
    ]
}

fn tickets_by_hand() -> FlowAgent {
    use agentweave::workflow::{Map, MapItems, MapPolicy};
    let answers = Map::new("answers", MapItems::LastOutput)
        .concurrency(2)
        .on_failure(MapPolicy::CollectErrors)
        .with_description("Answers every ticket.")
        .with_sub_agents([FlowAgent::new(ticket)])
        .unwrap();
    Sequential::new("desk")
        .with_sub_agents([FlowAgent::new(lister), answers])
        .unwrap()
}

#[tokio::test]
async fn a_map_node_is_the_map_built_by_hand() {
    let declared = Tickets::new().unwrap();
    let hand = tickets_by_hand();
    assert_eq!(declared.flow().shape(), hand.shape());
    assert_eq!(Tickets::FINGERPRINT, hand.fingerprint());
    let declared = run(declared.flow().clone(), "go").await;
    assert_eq!(declared, run(hand, "go").await);
    assert!(
        declared.iter().any(
            |e| e.starts_with("ticket @ desk/lister/answers[2]/ticket | Some(\"answered t3\")")
        ),
        "{declared:#?}"
    );
    assert!(
        declared.last().unwrap().contains(
            r#"{\"results\":[\"answered t1\",\"answered t2\",\"answered t3\"],\"errors\":[]}"#
        ),
        "{declared:#?}"
    );
}
