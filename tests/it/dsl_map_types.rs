//! Typed `map` nodes: the map's agent declares the item it takes (`accepts`) and the result it
//! gives (`returns`); each item reaches it as its payload, each `Finish(result)` is that item's
//! result, and the results read back typed, in the items' order. An item that is not the
//! agent's item type fails as that item, under the map's failure policy.

use agentweave::prelude::*;
use agentweave::spec::Finish;
use agentweave::workflow::{MapOutput, WorkflowError};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// One support ticket: the item the maps below run over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ticket {
    id: u64,
    amount: u32,
}

/// What answering one ticket gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    id: u64,
    refunded: bool,
}

/// Sends three tickets to the map, as its transfer's payload.
#[agent(transfers = [answers(Vec<Ticket>)])]
async fn intake(_cx: &AgentContext) -> IntakeTransfer {
    let tickets = [(3, 80), (1, 20), (2, 200)]
        .into_iter()
        .map(|(id, amount)| Ticket { id, amount })
        .collect();
    IntakeTransfer::Answers(tickets)
}

/// Answers one ticket: refunds up to 100.
#[agent(accepts = Ticket, returns = Answer)]
async fn refund(cx: &AgentContext) -> AgentResult<Finish<Answer>> {
    let ticket = cx.payload::<refund>().expect("the map hands each item")?;
    Ok(Finish(Answer {
        id: ticket.id,
        refunded: ticket.amount <= 100,
    }))
}

flow! {
    /// Takes the tickets from the transfer and answers each.
    Intake: intake => [answers = map(payload, concurrency = 2) [refund]]
}

/// Says the run's input back: the list the next map runs over.
#[agent]
async fn lister(cx: &AgentContext, input: AgentInput) {
    cx.say(input.messages[0].content.clone());
}

/// Answers one ticket, like `refund`, under its own name.
#[agent(accepts = Ticket, returns = Answer)]
async fn checker(cx: &AgentContext) -> AgentResult<Finish<Answer>> {
    let ticket = cx.payload::<checker>().expect("the map hands each item")?;
    Ok(Finish(Answer {
        id: ticket.id,
        refunded: ticket.amount <= 100,
    }))
}

flow! {
    /// Fails fast: one item at a time, stopping at the first failure.
    Strict: strict = sequential [lister, checked = map(last_output, concurrency = 1) [checker]]
}

/// Answers one ticket, like `refund`, under its own name.
#[agent(accepts = Ticket, returns = Answer)]
async fn lenient_checker(cx: &AgentContext) -> AgentResult<Finish<Answer>> {
    let ticket = cx
        .payload::<lenient_checker>()
        .expect("the map hands each item")?;
    Ok(Finish(Answer {
        id: ticket.id,
        refunded: ticket.amount <= 100,
    }))
}

/// Says the run's input back, like `lister`, under its own name.
#[agent]
async fn lenient_lister(cx: &AgentContext, input: AgentInput) {
    cx.say(input.messages[0].content.clone());
}

flow! {
    /// Collects errors: every item runs, the failures are listed.
    Lenient: lenient = sequential [
        lenient_lister,
        collected = map(last_output, on_failure = collect_errors) [lenient_checker],
    ]
}

/// The output the map named `map` recorded, and the run's events.
async fn run_map(flow: FlowAgent, input: &str, map: &str) -> (MapOutput, Vec<AgentEvent>) {
    let events: Vec<AgentEvent> = Runner::new(flow).run(input).collect().await;
    let out = events
        .iter()
        .rev()
        .find(|e| e.agent_name() == map && e.message_output().is_some())
        .unwrap_or_else(|| panic!("no output of map {map}: {events:#?}"));
    let out = serde_json::from_str(&out.message_output().unwrap().content).unwrap();
    (out, events)
}

fn answer(id: u64, refunded: bool) -> Option<Answer> {
    Some(Answer { id, refunded })
}

#[tokio::test]
async fn a_typed_map_hands_each_item_as_its_payload_and_reads_typed_results_in_order() {
    let (out, events) = run_map(Intake::new().unwrap().flow().clone(), "go", "answers").await;
    assert!(out.errors.is_empty(), "{out:?}");
    let results = out.results_of::<refund>().unwrap();
    assert_eq!(
        results,
        [answer(3, true), answer(1, true), answer(2, false)],
        "the items' order, each result its own item's"
    );
    // Each item ran at its own path, and no event is an error.
    for i in 0..3 {
        let at = format!("intake/answers[{i}]/refund");
        assert!(
            events.iter().any(|e| e.run_path().to_string() == at),
            "{events:#?}"
        );
    }
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
    // Read as another type, a result says which item does not decode and as what.
    let wrong = out.results_as::<String>().unwrap_err();
    assert_eq!(wrong.item, 0);
    assert!(
        wrong
            .to_string()
            .contains("does not decode as `alloc::string::String`"),
        "{wrong}"
    );
}

#[tokio::test]
async fn fail_fast_stops_at_an_item_that_is_not_the_agents_item_type() {
    let items = r#"[{"id": 1, "amount": 5}, {"id": "two"}, {"id": 3, "amount": 7}]"#;
    let (out, events) = run_map(Strict::new().unwrap().flow().clone(), items, "checked").await;
    // Item 0 answered; item 1 is not a Ticket, so it never ran and stopped the map; item 2
    // never started.
    assert_eq!(
        out.results_of::<checker>().unwrap(),
        [answer(1, true), None, None]
    );
    assert_eq!(out.errors.len(), 1, "{out:?}");
    assert_eq!(out.errors[0].item, 1);
    assert!(
        out.errors[0].error.contains("item 1 is not a `Ticket`")
            && out.errors[0].error.contains("agent 'checker'"),
        "{}",
        out.errors[0].error
    );
    for i in [1, 2] {
        let item = format!("checked[{i}]/checker");
        assert!(
            !events
                .iter()
                .any(|e| e.run_path().to_string().ends_with(&item)),
            "{events:#?}"
        );
    }
    let failed = events
        .iter()
        .filter_map(|e| e.error.as_ref())
        .find_map(|e| e.downcast_ref::<WorkflowError>())
        .expect("the map fails");
    assert!(
        matches!(
            failed,
            WorkflowError::MapFailed {
                items: 3,
                succeeded: 1,
                ..
            }
        ),
        "{failed:?}"
    );
}

#[tokio::test]
async fn collect_errors_runs_every_item_and_lists_the_one_that_is_not_a_ticket() {
    let items = r#"[{"id": 1, "amount": 5}, "ticket two", {"id": 3, "amount": 700}]"#;
    let (out, events) = run_map(Lenient::new().unwrap().flow().clone(), items, "collected").await;
    assert_eq!(
        out.results_of::<lenient_checker>().unwrap(),
        [answer(1, true), None, answer(3, false)]
    );
    assert_eq!(out.errors.len(), 1, "{out:?}");
    assert_eq!(out.errors[0].item, 1);
    assert!(
        out.errors[0].error.contains("is not a `Ticket`"),
        "{:?}",
        out.errors
    );
    // The map succeeded: no error event.
    assert!(events.iter().all(|e| e.error.is_none()), "{events:#?}");
}
