//! A tour of `#[agent]` and `flow!`: a customer-service desk declared with the macros, with an
//! agent given at run time, run on two requests. Runs offline: `cargo run --example dsl_tour`.

use agentweave::prelude::*;
use futures::StreamExt;

/// Decides which desk owns the request.
#[agent(transfers = [refund, complaint])]
async fn triage(cx: &AgentContext, input: AgentInput) -> AgentResult<TriageTransfer> {
    let text = input
        .messages
        .last()
        .map(|m| m.content.to_lowercase())
        .unwrap_or_default();
    if text.contains("refund") || text.contains("money back") {
        cx.say("This is for the refund desk.");
        Ok(TriageTransfer::Refund)
    } else {
        cx.say("This is a complaint.");
        Ok(TriageTransfer::Complaint)
    }
}

/// Handles complaints; escalates them all, to be safe.
#[agent(transfers = [escalation])]
async fn complaint(cx: &AgentContext) -> ComplaintTransfer {
    cx.say("I am sorry to hear that. Let me get someone.");
    ComplaintTransfer::Escalation
}

/// Takes over serious complaints; sees only what the customer wrote.
#[agent]
async fn escalation(cx: &AgentContext, input: AgentInput) -> Exit {
    cx.say(format!(
        "A manager will call you about: {}",
        input.messages[0].content
    ));
    Exit
}

flow! {
    /// The customer-service desk.
    pub CustomerService: triage => [
        dyn refund,
        complaint => [escalation(no_parent, context = user_input_only)],
    ]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `refund` is built at run time (in a real program, a model agent holding a client).
    // The flow hands it the node: its name and its legal targets.
    let desk = CustomerService::builder()
        .refund(|node| {
            assert_eq!(node.targets(), [CustomerServiceRefundTarget::Triage]);
            FnAgent::new(node, |cx, _| async move {
                cx.say("Your refund is on its way.");
                Ok(())
            })
        })
        .build()
        .unwrap();

    println!("{}", CustomerService::mermaid());
    println!("fingerprint {:016x}", CustomerService::FINGERPRINT);
    for query in ["I want my money back", "The box arrived broken"] {
        println!("\n> {query}");
        let mut events = desk.runner().run(query);
        while let Some(event) = events.next().await {
            if let Some(m) = event.message_output().filter(|m| !m.content.is_empty()) {
                println!("[{}] {}", event.run_path(), m.content);
            }
        }
    }
}
