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

use agentflow::prelude::*;
use futures::StreamExt;

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
        research(single_turn) = parallel [prices, reviews],
    ]
}

#[tokio::main]
async fn main() {
    let lab: FlowAgent = Lab::new().expect("the lab").into();
    println!("lab: {}\n", lab.shape());
    println!("user: Which kettle should I buy?");
    let mut events = Runner::new(lab).query("Which kettle should I buy?");
    while let Some(event) = events.next().await {
        let path = event.run_path().to_string();
        if let Some(m) = event.message_output() {
            if !m.content.is_empty() {
                println!("  [{path}] {}", m.content);
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
