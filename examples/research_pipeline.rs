//! A research pipeline of workflow agents: a drafter writes, two reviewers read the draft at
//! the same time, then a reviser and an approver loop until the approver is satisfied.
//!
//! ```text
//! cargo run --example research_pipeline
//! ```
//!
//! ```text
//! research (Sequential)
//! ├── drafter          a ChatModelAgent; asks the `librarian` agent tool for sources
//! ├── reviews (Parallel)
//! │   ├── style        each reviewer sees the draft, never the other reviewer
//! │   └── facts
//! └── revise (Loop, at most 4 rounds)
//!     ├── reviser      reads both reviews (the join point) and the approver's last word
//!     └── approver     approves the second revision with BreakLoop
//! ```
//!
//! Runs offline: the two model-driven agents use `ScriptedModel`s, the rest are `FnAgent`s.
//! Every event is printed with its run path.

use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::prelude::*;
use agentweave::workflow::AgentTool;
use agentweave::workflow::Loop;
use agentweave::workflow::Parallel;
use agentweave::workflow::Sequential;
use agentweave::RunRequest;
use agentweave::Session;
use futures::StreamExt;
use serde_json::json;

/// The librarian: an agent tree used as a tool by the drafter.
fn librarian() -> FlowAgent {
    let librarian = FnAgent::new("librarian", |cx, input| async move {
        let topic = input.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        cx.say(format!(
            "Two sources on {topic}: Kenyon (1969) on sea otter diets, Estes (1974) on kelp forests."
        ));
        Ok(())
    })
    .with_description("Finds sources on a topic.");
    FlowAgent::new(librarian)
}

pub fn drafter() -> Result<FlowAgent, Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        ScriptStep::tool_call("librarian", json!({ "request": "sea otters" })),
        ScriptStep::text(
            "Draft: Sea otters eat urchins (Kenyon 1969), which lets kelp forests grow \
             (Estes 1974).",
        ),
    ])
    .named("drafter-model");
    let agent = ChatModelAgent::builder("drafter", model)
        .description("Writes the first draft.")
        .instruction("Write a short draft on the user's topic. Cite sources.")
        .tool(AgentTool::new(librarian()).surface_events(true))
        .build()?;
    Ok(FlowAgent::new(agent))
}

pub fn reviewers() -> Result<FlowAgent, agentweave::FlowError> {
    let style = FnAgent::new("style", |cx, input| async move {
        let sees_other = input.messages.iter().any(|m| m.content.contains("[facts]"));
        cx.say(format!(
            "Style: split the sentence in two. (I saw the other review: {sees_other})"
        ));
        Ok(())
    });
    let facts = ScriptedModel::new([ScriptStep::text(
        "Facts: Kenyon studied diets, not kelp; the kelp claim is Estes's.",
    )])
    .named("facts-model");
    let facts = ChatModelAgent::builder("facts", facts)
        .instruction("Check the draft's claims against its sources.")
        .build()
        .expect("a valid agent");
    Parallel::new("reviews")
        .with_description("Reviews the draft for style and facts at once.")
        .with_sub_agents([FlowAgent::new(style), FlowAgent::new(facts)])
}

pub fn revise() -> Result<FlowAgent, agentweave::FlowError> {
    let reviser = FnAgent::new("reviser", |cx, input| async move {
        let round = 1 + input
            .messages
            .iter()
            .filter(|m| m.content.starts_with("Revision"))
            .count();
        let reviews = input
            .messages
            .iter()
            .filter(|m| m.content.contains("[style]") || m.content.contains("[facts]"))
            .count();
        cx.say(format!("Revision {round}, addressing {reviews} reviews."));
        Ok(())
    });
    let approver = FnAgent::new("approver", |cx, input| async move {
        let latest = input
            .messages
            .iter()
            .rev()
            .find(|m| m.content.contains("[reviser] said: Revision"))
            .map(|m| m.content.clone())
            .unwrap_or_default();
        if latest.contains("Revision 2") {
            cx.say("Approved.");
            cx.break_loop();
        } else {
            cx.say("Not yet: tighten the conclusion.");
        }
        Ok(())
    });
    Loop::new("revise", 4)
        .with_description("Revises until the approver is satisfied.")
        .with_sub_agents([FlowAgent::new(reviser), FlowAgent::new(approver)])
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pipeline = Sequential::new("research")
        .with_description("Drafts, reviews and revises a short research note.")
        .with_sub_agents([drafter()?, reviewers()?, revise()?])?;
    println!("tree: {}\n", pipeline.shape());
    let question = "Write a note on sea otters and kelp.";
    println!("user: {question}");
    let session = Session::new();
    let mut events = Runner::new(pipeline)
        .run(RunRequest::new([Message::user(question)]).session(std::sync::Arc::clone(&session)));
    let mut errors = 0;
    let mut printer = agentweave::event::EventPrinter::stdout().indent("");
    while let Some(event) = events.next().await {
        errors += usize::from(event.error.is_some());
        printer.print(&event).await?;
    }
    println!("\n{} events recorded in the session", session.len());
    if errors > 0 {
        return Err(format!("the run reported {errors} error(s)").into());
    }
    Ok(())
}
