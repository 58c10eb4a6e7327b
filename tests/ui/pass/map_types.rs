//! A typed map: its agent declares the item it takes (`accepts`) and the result it gives
//! (`returns`); `map(payload)` takes the items from the transfer to it, which must be a list of
//! that item (a `Vec` through an alias is that `Vec`); `map(last_output)` and `map(value = ..)`
//! take an agent with or without declared types.
use agentweave::prelude::*;
use agentweave::spec::Finish;

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Ticket {
    pub id: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Answer {
    pub id: u64,
    pub refunded: bool,
}

type Tickets = Vec<Ticket>;

#[agent(transfers = [answers(Tickets)])]
async fn triage(_cx: &AgentContext) -> TriageTransfer {
    TriageTransfer::Answers(vec![Ticket { id: 1 }, Ticket { id: 2 }])
}

/// Answers one ticket.
#[agent(accepts = Ticket, returns = Answer)]
async fn refund(cx: &AgentContext) -> AgentResult<Finish<Answer>> {
    let ticket = cx.payload::<refund>().expect("the map hands each item")?;
    Ok(Finish(Answer {
        id: ticket.id,
        refunded: ticket.id % 2 == 0,
    }))
}

#[agent]
async fn lister(cx: &AgentContext) {
    cx.say("[1, 2, 3]");
}

#[agent]
async fn shout(_cx: &AgentContext) {}

flow! {
    Desk: triage => [answers = map(payload, concurrency = 4, on_failure = collect_errors) [refund]]
}

flow! {
    Batch: steps = sequential [lister, each = map(last_output) [shout]]
}

fn main() {
    let _ = Desk::new();
    let _ = Batch::new();
}
