//! Delegation in `flow!`: a `task` node with a typed result (`#[agent(returns = T)]`,
//! `Finish(outcome)`) read typed by its parent (`cx.task_result::<refund>()`), over three
//! turns of a thread; a `single_turn` node.

use agentweave::prelude::*;
use agentweave::spec::Delegation;
use agentweave::spec::Finish;
use agentweave::TurnRequest;
use agentweave::{store::InMemoryStore, Role};
use serde::{Deserialize, Serialize};

/// What the refund desk decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefundOutcome {
    order_id: u64,
    approved: bool,
}

/// Routes the customer; closes the conversation once the refund desk is done.
#[agent(transfers = [refund])]
async fn triage(cx: &AgentContext) -> AgentResult<Option<TriageTransfer>> {
    match cx.task_result::<refund>() {
        Some(outcome) => {
            let outcome = outcome?;
            cx.say(format!(
                "Order {}: refund {}. Goodbye!",
                outcome.order_id,
                if outcome.approved {
                    "approved"
                } else {
                    "refused"
                }
            ));
            Ok(None)
        }
        None => Ok(Some(TriageTransfer::Refund)),
    }
}

/// Asks for the order number, then the reason, then decides.
#[agent(returns = RefundOutcome)]
async fn refund(cx: &AgentContext, input: AgentInput) -> Option<Finish<RefundOutcome>> {
    let said: Vec<&str> = input
        .messages
        .iter()
        .filter(|m| m.role == Role::User && !m.content.starts_with("For context"))
        .map(|m| m.content.as_str())
        .collect();
    match said.len() {
        1 => {
            cx.say("Which order?");
            None
        }
        2 => {
            cx.say("Why?");
            None
        }
        _ => Some(Finish(RefundOutcome {
            order_id: said[1].parse().unwrap_or(0),
            approved: said[2].contains("broken"),
        })),
    }
}

flow! {
    /// A desk whose refund is a task.
    pub Desk: triage => [refund(task)]
}

/// Looks something up, once.
#[agent]
async fn lookup(cx: &AgentContext) {
    cx.say("the hinge");
}

/// Asks the lookup, then answers.
#[agent(transfers = [lookup])]
async fn lead(cx: &AgentContext) -> Option<LeadTransfer> {
    match cx.run_context().task_result() {
        Some(found) => {
            cx.say(format!("It is {}.", found.result.as_str().unwrap_or("?")));
            None
        }
        None => Some(LeadTransfer::Lookup),
    }
}

flow! {
    /// A lead with a single-turn helper.
    pub Lab: lead => [lookup(single_turn)]
}

async fn say(runner: &Runner, text: &str) -> String {
    let turn = runner
        .turn(TurnRequest::new("t", Message::user(text)))
        .await
        .unwrap();
    turn.final_output().await.unwrap().unwrap().content
}

#[tokio::test]
async fn a_typed_task_returns_its_outcome_to_its_parent_after_three_turns() {
    assert_eq!(<refund as AgentSpec>::RETURNS, Some("RefundOutcome"));
    assert_eq!(
        FlowAgent::from(Desk::new().unwrap()).sub_agents()[0]
            .options()
            .delegation,
        Delegation::Task
    );
    let runner = Runner::builder(Desk::new().unwrap())
        .thread_store(InMemoryStore::new())
        .build();
    assert_eq!(say(&runner, "refund please").await, "Which order?");
    assert_eq!(say(&runner, "42").await, "Why?");
    assert_eq!(
        say(&runner, "it came broken").await,
        "Order 42: refund approved. Goodbye!"
    );
}

#[tokio::test]
async fn a_single_turn_node_returns_its_answer() {
    use futures::StreamExt;
    let events: Vec<AgentEvent> = Runner::new(Lab::new().unwrap()).run("why?").collect().await;
    let last = events.last().unwrap();
    assert_eq!(last.run_path().to_string(), "lead/lookup/lead");
    assert_eq!(last.message_output().unwrap().content, "It is the hinge.");
}

/// What the refund desk needs to know.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RefundRequest {
    order_id: u64,
}

/// Reads the order number and hands it over.
#[agent(transfers = [refunds(RefundRequest)])]
async fn intake(_cx: &AgentContext) -> IntakeTransfer {
    IntakeTransfer::Refunds(RefundRequest { order_id: 77 })
}

/// Refunds the order it is given.
#[agent(accepts = RefundRequest)]
async fn refunds(cx: &AgentContext) -> AgentResult {
    let request: RefundRequest = cx.payload::<refunds>().expect("a payload")?;
    cx.say(format!("refunding order {}", request.order_id));
    Ok(())
}

flow! {
    /// A typed hand-over.
    pub Intake: intake => [refunds]
}

#[tokio::test]
async fn a_typed_transfer_payload_reaches_the_target_typed() {
    use futures::StreamExt;
    assert_eq!(<intake as AgentSpec>::TRANSFER_PAYLOADS, ["RefundRequest"]);
    assert_eq!(<refunds as AgentSpec>::ACCEPTS, Some("RefundRequest"));
    let events: Vec<AgentEvent> = Runner::new(Intake::new().unwrap())
        .run("refund")
        .collect()
        .await;
    assert_eq!(
        events.last().unwrap().message_output().unwrap().content,
        "refunding order 77"
    );
}

/// Reads its payload as another agent's (which accepts the same type): refused at run time,
/// since a body reads its own agent's payload.
#[agent(accepts = RefundRequest)]
async fn borrower(cx: &AgentContext) -> AgentResult {
    let request: RefundRequest = cx.payload::<refunds>().expect("a payload")?;
    cx.say(format!("refunding order {}", request.order_id));
    Ok(())
}

/// Hands the order to the borrower.
#[agent(transfers = [borrower(RefundRequest)])]
async fn front(_cx: &AgentContext) -> FrontTransfer {
    FrontTransfer::Borrower(RefundRequest { order_id: 78 })
}

flow! {
    /// A target reading another agent's payload.
    pub Borrowing: front => [borrower]
}

#[tokio::test]
async fn a_body_reads_only_its_own_agents_payload() {
    use futures::StreamExt;
    let events: Vec<AgentEvent> = Runner::new(Borrowing::new().unwrap())
        .run("refund")
        .collect()
        .await;
    let error = events
        .iter()
        .find_map(|e| e.error.as_ref())
        .expect("an error event")
        .to_string();
    assert!(
        error.contains("asked for the payload of agent 'refunds', but it is agent 'borrower'"),
        "{error}"
    );
    assert!(events.iter().all(|e| e
        .message_output()
        .is_none_or(|m| !m.content.contains("refunding"))));
}
