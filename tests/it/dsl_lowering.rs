//! A tree declared with `flow!` behaves exactly like the same tree built by hand with
//! `set_sub_agents`: same shape, same fingerprint, same events.

use agentweave::history::ContextPolicy;
use agentweave::prelude::*;
use futures::StreamExt;

/// Decides which desk owns the request.
#[agent(transfers = [refund, complaint])]
async fn triage(cx: &AgentContext, input: AgentInput) -> AgentResult<TriageTransfer> {
    let text = input
        .messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    if text.contains("broken") {
        cx.say("This is a complaint.");
        Ok(TriageTransfer::Complaint)
    } else {
        cx.say("This is a refund.");
        Ok(TriageTransfer::Refund)
    }
}

/// Issues refunds.
#[agent]
async fn refund(cx: &AgentContext) -> Exit {
    cx.say("Refund issued.");
    Exit
}

/// Handles complaints; escalates the serious ones.
#[agent(transfers = [escalation])]
async fn complaint(cx: &AgentContext, input: AgentInput) -> Option<ComplaintTransfer> {
    cx.say(format!("I read {} messages.", input.messages.len()));
    Some(ComplaintTransfer::Escalation)
}

/// Takes over when a complaint is serious.
#[agent]
async fn escalation(cx: &AgentContext, input: AgentInput) {
    let seen: Vec<String> = input.messages.iter().map(|m| m.content.clone()).collect();
    cx.say(format!("Escalated; I saw: {}", seen.join(" | ")));
}

flow! {
    /// The customer-service desk.
    CustomerService: triage => [
        refund,
        complaint => [escalation(no_parent, context = user_input_only)],
    ]
}

fn by_hand() -> FlowAgent {
    let esc = FlowAgent::new(escalation)
        .disallow_transfer_to_parent(true)
        .context(ContextPolicy::UserInputOnly);
    let comp = set_sub_agents(FlowAgent::new(complaint), [esc]).unwrap();
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund), comp]).unwrap()
}

/// Everything observable about an event, as text.
fn describe(e: &AgentEvent) -> String {
    let message = e.message_output().map(|m| {
        let calls: Vec<String> = m
            .tool_calls
            .iter()
            .map(|c| format!("{}({})", c.name, c.arguments))
            .collect();
        format!("{:?}:{}:{}", m.role, m.content, calls.join(","))
    });
    format!(
        "{} @ {} | {:?} | {:?} | {:?}",
        e.agent_name(),
        e.run_path(),
        message,
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

#[tokio::test]
async fn same_shape_and_fingerprint() {
    let declared = CustomerService::new().unwrap().into_flow();
    let hand = by_hand();
    assert_eq!(declared.shape(), "triage(refund,complaint(escalation^))");
    assert_eq!(declared.shape(), hand.shape());
    assert_eq!(declared.fingerprint(), hand.fingerprint());
    assert_eq!(CustomerService::FINGERPRINT, hand.fingerprint());
    assert_eq!(
        CustomerService::FINGERPRINT,
        agentweave::spec::fingerprint_of("triage(refund,complaint(escalation^))")
    );
    for (d, h) in ["triage", "refund", "complaint", "escalation"]
        .iter()
        .map(|n| (declared.find(n).unwrap(), hand.find(n).unwrap()))
    {
        assert_eq!(format!("{d:?}"), format!("{h:?}"));
        assert_eq!(d.description(), h.description());
    }
    assert_eq!(
        declared.find("complaint").unwrap().description(),
        "Handles complaints; escalates the serious ones."
    );
}

#[tokio::test]
async fn same_events_on_the_same_input() {
    for query in ["I want my money back", "It arrived broken"] {
        let declared = run(CustomerService::new().unwrap().into(), query).await;
        let hand = run(by_hand(), query).await;
        assert_eq!(declared, hand, "query {query:?}");
    }
    let events = run(CustomerService::new().unwrap().into(), "It arrived broken").await;
    assert_eq!(
        events,
        [
            "triage @ triage | Some(\"Assistant:This is a complaint.:\") | None | None",
            "triage @ triage | Some(\"Assistant::transfer_to_agent({\\\"agent_name\\\":\\\"complaint\\\"})\") | None | None",
            "triage @ triage | Some(\"Tool:successfully transferred to agent [complaint]:\") | Some(TransferToAgent(\"complaint\")) | None",
            "complaint @ triage/complaint | Some(\"Assistant:I read 4 messages.:\") | None | None",
            "complaint @ triage/complaint | Some(\"Assistant::transfer_to_agent({\\\"agent_name\\\":\\\"escalation\\\"})\") | None | None",
            "complaint @ triage/complaint | Some(\"Tool:successfully transferred to agent [escalation]:\") | Some(TransferToAgent(\"escalation\")) | None",
            "escalation @ triage/complaint/escalation | Some(\"Assistant:Escalated; I saw: It arrived broken:\") | None | None",
        ]
    );
    let refunded = run(CustomerService::new().unwrap().into(), "money back").await;
    assert_eq!(
        refunded.last().unwrap(),
        "refund @ triage/refund | None | Some(Exit) | None"
    );
}
