//! A customer-service desk: triage reads the request and hands it to the refund or the
//! complaint desk. Runs offline; each event is printed with its run path.
//!
//! ```text
//! cargo run --example customer_service
//! ```

use agentflow::prelude::*;
use futures::StreamExt;

fn desk() -> Result<FlowAgent, agentflow::FlowError> {
    let triage = FnAgent::new("triage", |cx, input| async move {
        let question = input
            .messages
            .last()
            .map(|m| m.content.to_lowercase())
            .unwrap_or_default();
        let desk = if question.contains("refund") || question.contains("money back") {
            "refund"
        } else {
            "complaint"
        };
        cx.say(format!("This is a question for the {desk} desk."));
        cx.transfer(desk);
        Ok(())
    })
    .with_description("Decides which desk owns the request.");

    let refund = FnAgent::new("refund", |cx, _input| async move {
        cx.say("Your refund of order #1042 has been issued; expect it within 3 days.");
        Ok(())
    })
    .with_description("Issues refunds.");

    let complaint = FnAgent::new("complaint", |cx, _input| async move {
        cx.say("We are sorry. Your complaint is filed as case 77.");
        Ok(())
    })
    .with_description("Files complaints.");

    set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund), FlowAgent::new(complaint)],
    )
}

fn print(event: &AgentEvent) {
    let path = event.run_path();
    if let Some(m) = event.message_output() {
        if !m.content.is_empty() {
            println!("[{path}] {}: {}", m.role, m.content);
        }
        for call in &m.tool_calls {
            println!("[{path}] calls {}({})", call.name, call.arguments);
        }
    }
    if let Some(Action::TransferToAgent(to)) = &event.action {
        println!("[{path}] -> transfer to {to}");
    }
    if let Some(e) = &event.error {
        println!("[{path}] error: {e}");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runner = Runner::new(desk()?);
    for question in ["I want a refund for order #1042", "The courier was rude"] {
        println!("user: {question}");
        let mut events = runner.query(question);
        while let Some(event) = events.next().await {
            print(&event);
        }
        println!();
    }
    Ok(())
}
