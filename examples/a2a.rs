//! A2A both ways, offline on loopback: the customer-service desk served as an A2A agent, and a
//! local tree that calls it as a remote node.
//!
//! ```text
//! cargo run --example a2a --features a2a
//! ```
//!
//! 1. The server serves the desk (`agentweave_server::demo::desk()`) with a bearer token on a free
//!    loopback port: its A2A card is at `/a2a/desk/.well-known/agent-card.json`, its JSON-RPC
//!    endpoint at `/a2a/desk`.
//! 2. A local tree `front => [desk]` is built, `desk` being an [`A2aAgent`] made from that card
//!    (the card's description and skills become the node's description).
//! 3. A turn asks for a refund: `front` transfers to the remote desk, whose refund waits for a
//!    human's approval; over A2A that is `input-required`, here an interrupt of the local turn.
//! 4. The local turn is resumed with `{"approve": true}`: the answer goes to the remote task,
//!    which completes; control comes back to `front`, which reports. Then the example exits.

use std::collections::HashMap;

use agentweave::a2a::A2aAgent;
use agentweave::TurnRequest;
use agentweave::{
    run::TurnOutcome, set_sub_agents, store::InMemoryStore, FlowAgent, FnAgent, Message, Runner,
};
use agentweave_server::{AppState, Auth};
use futures::StreamExt;
use serde_json::json;

const TOKEN: &str = "a2a-example-token-0123456789";

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The desk as an A2A agent.
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .turn_routing(agentweave::run::TurnRouting::Root)
        .build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(agentweave_server::serve_until(listener, state, async {
        let _ = stopped.await;
    }));
    println!("serving the desk as an A2A agent: {base}/a2a/desk/.well-known/agent-card.json");

    let result = call_it(&base).await;
    let _ = stop.send(());
    server.await??;
    result
}

async fn call_it(base: &str) -> Result<(), Box<dyn std::error::Error>> {
    // 2. A local tree with the remote desk as a node.
    let desk = A2aAgent::from_card("desk", &format!("{base}/a2a/desk"), Some(TOKEN)).await?;
    println!(
        "remote node 'desk': {}",
        agentweave::Agent::description(&desk)
    );
    let front = FnAgent::new("front", |cx, input| async move {
        let answer = input
            .messages
            .iter()
            .rev()
            .find(|m| m.content.starts_with("For context: [desk] said:"));
        match answer {
            Some(m) => cx.say(format!("The desk has answered. ({})", m.content)),
            None => cx.transfer("desk"),
        }
        Ok(())
    });
    let tree = set_sub_agents(FlowAgent::new(front), [FlowAgent::new(desk)])?;
    let runner = Runner::builder(tree).stores(InMemoryStore::new()).build();

    // 3. A turn that meets the remote desk's approval.
    let mut turn = runner
        .turn(TurnRequest::new(
            "customer-1",
            Message::user("I want a refund for order 42"),
        ))
        .await?;
    print_events(&mut turn).await;
    let Some(TurnOutcome::Interrupted { interrupts, .. }) = turn.outcome() else {
        return Err(format!("expected the remote approval, got {:?}", turn.outcome()).into());
    };
    println!("interrupted: {}", interrupts[0].info["question"]);

    // 4. The approval goes to the remote task; control returns to `front`.
    let targets = HashMap::from([(interrupts[0].id.clone(), json!({"approve": true}))]);
    let mut resumed = runner
        .turn(TurnRequest::resume("customer-1", targets))
        .await?;
    print_events(&mut resumed).await;
    match resumed.outcome() {
        Some(TurnOutcome::Completed { answered_by, .. }) if &*answered_by == "front" => {
            println!("done: control came back to 'front'");
            Ok(())
        }
        other => Err(format!("expected the turn to end at 'front', got {other:?}").into()),
    }
}

async fn print_events(turn: &mut agentweave::Turn) {
    while let Some(event) = turn.next().await {
        if let Some(m) = event.message_output() {
            if !m.content.is_empty() && m.tool_calls.is_empty() && m.tool_call_id.is_none() {
                println!("[{}] {}", event.run_path(), m.content);
            }
        }
        if let Some(e) = &event.error {
            println!("[{}] error: {e}", event.run_path());
        }
    }
}
