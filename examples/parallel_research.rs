//! Single-turn research agents in parallel: `lead` delegates to `research`, a parallel workflow
//! node marked `single_turn`; its two researchers run at once, without the user, and their
//! answers return to `lead`, which runs again in the same turn and writes the recommendation.
//!
//! ```text
//! cargo run --example parallel_research
//! ```
//!
//! `lead` sees only the researchers' answers, not the rest of what they did (scoped history),
//! and reads them as its task result: an array, one answer per researcher.
//!
//! The third researcher, `crawler`, is an LLM agent (on a scripted model here) whose tool
//! `crawl` streams its progress: each page it reads reaches the caller as a `tool_progress`
//! event at the tool's run path while the tool runs; the model gets the whole result.

use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::prelude::*;
use agentweave::{event::EventOutput, tool::tool_fn_with_context, tool::ToolContext};
use futures::StreamExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Crawl {
    /// How many pages of the forum to read.
    pages: u32,
}

/// An LLM researcher whose tool reports each page it reads.
pub fn crawler() -> ChatModelAgent {
    let model = ScriptedModel::rules()
        .after_tool(
            "crawl",
            ScriptStep::text("On the forum, 3 threads of 3 praise the Brisk 2000's lid."),
        )
        .otherwise(ScriptStep::tool_call(
            "crawl",
            serde_json::json!({"pages": 3}),
        ));
    let crawl = tool_fn_with_context(
        "crawl",
        "Reads the pages of a kettle forum.",
        |cx: ToolContext, a: Crawl| async move {
            for page in 1..=a.pages {
                cx.progress(serde_json::json!({"page": page, "of": a.pages}))
                    .await;
            }
            Ok::<_, String>(format!(
                "{} pages: the Brisk 2000's lid is praised",
                a.pages
            ))
        },
    );
    ChatModelAgent::builder("crawler", model)
        .description("Reads what a forum says.")
        .tool(crawl)
        .build()
        .expect("the crawler")
}

/// Compares the prices of the kettles the customer asked about.
#[agent]
async fn prices(cx: &AgentContext) {
    cx.say("The Brisk 2000 costs 39 EUR, the Hearth 12 costs 55 EUR.");
}

/// Reads what buyers say about them.
#[agent]
async fn reviews(cx: &AgentContext) {
    cx.say("Buyers rate the Brisk 2000 4.6 of 5 and the Hearth 12 3.9 of 5.");
}

/// Asks for research, then recommends a kettle from what came back.
#[agent(transfers = [research])]
async fn lead(cx: &AgentContext, input: AgentInput) -> Option<LeadTransfer> {
    let Some(found) = cx.run_context().task_result() else {
        cx.say("Let me look into prices and reviews.");
        return Some(LeadTransfer::Research);
    };
    let answers = found.result.as_array().map_or(0, Vec::len);
    cx.say(format!(
        "{answers} researchers answered ({} messages in my input). I recommend the Brisk 2000: \
         cheaper and better rated.",
        input.messages.len()
    ));
    None
}

flow! {
    /// A lead with two researchers working at once.
    pub Lab: lead => [
        /// Researches prices and reviews at once, then returns to the lead.
        research(single_turn) = parallel [prices, reviews, dyn crawler],
    ]
}

#[tokio::main]
async fn main() {
    let lab: FlowAgent = Lab::builder()
        .crawler(|_| crawler())
        .build()
        .expect("the lab")
        .into();
    println!("lab: {}\n", lab.shape());
    println!("user: Which kettle should I buy?");
    let mut events = Runner::new(lab).run("Which kettle should I buy?");
    while let Some(event) = events.next().await {
        let path = event.run_path().to_string();
        if let Some(m) = event.message_output() {
            if !m.content.is_empty() {
                println!("  [{path}] {}", m.content);
            }
        }
        if let Some(EventOutput::Custom(data)) = &event.output {
            if let Some(p) = data.get("tool_progress") {
                println!(
                    "  [{path}] progress: page {} of {}",
                    p["progress"]["page"], p["progress"]["of"]
                );
            }
        }
        match &event.action {
            Some(Action::TransferToAgent(to)) => println!("  [{path}] => delegate to {to}"),
            Some(Action::Finish(result)) => println!("  [{path}] => finished: {result}"),
            _ => {}
        }
        if let Some(e) = &event.error {
            println!("  [{path}] error: {e}");
        }
    }
}
