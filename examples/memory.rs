//! Long-term memory: what the desk learns about a customer in one thread, it recalls in another.
//!
//! ```text
//! cargo run --example memory
//! ```
//!
//! On Monday, in thread `monday`, Alice tells the desk her printer model; the desk's model calls
//! `remember`, and the fact is kept in a SQLite memory store under (tenant `acme`, user `alice`,
//! namespace `desk/devices`). On Friday a new runner (as after a restart) serves thread
//! `friday`: the model calls `recall`, reads the fact back and answers with it. Then Bob, a user
//! of another tenant, asks the same question of a desk given his own partition: nothing of
//! Alice's reaches him, because the tenant is part of every key. The models are scripted, so it
//! runs offline and the same every time.

use agentweave::memory::{
    ItemKey, Memory, MemoryTools, Namespace, Partition, Scope, SqliteMemoryStore, Tenant,
};
use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::store::FileStore;
use agentweave::{ChatModelAgent, FlowAgent, Message, Role, Runner, TurnRequest};
use futures::StreamExt;
use serde_json::json;

/// The desk's model: files what the user says about their printer, looks it up when asked
/// about toner, and answers from what the lookup gave.
fn model() -> ScriptedModel {
    ScriptedModel::rules()
        .after_tool(
            "remember",
            ScriptStep::text("Noted: your printer is an X200."),
        )
        .when_with(
            |r| r.messages.last().is_some_and(|m| m.role == Role::Tool),
            |r| {
                let found = r
                    .messages
                    .last()
                    .map(|m| m.content.clone())
                    .unwrap_or_default();
                ScriptStep::text(if found.contains("X200") {
                    "Your X200 takes the TN-200 toner; I have put one in your basket.".to_owned()
                } else {
                    "I don't know your printer yet: which model is it?".to_owned()
                })
            },
        )
        .when_last_user_contains(
            "printer is",
            ScriptStep::tool_call(
                "remember",
                json!({
                    "key": "printer-model",
                    "fact": "The customer's printer is an X200 laser printer.",
                    "namespace": "devices"
                }),
            ),
        )
        .when_last_user_contains(
            "toner",
            ScriptStep::tool_call("recall", json!({"query": "printer model"})),
        )
        .otherwise(ScriptStep::text("How can I help?"))
}

/// The desk for one customer: the memory tools are made for the partition the application
/// knows the user by; the model never names a tenant or a user.
fn desk(memory: &Memory, at: Partition) -> FlowAgent {
    let tools = MemoryTools::new(
        memory.clone(),
        at,
        Namespace::parse("desk").expect("a namespace"),
    );
    FlowAgent::new(
        ChatModelAgent::builder("desk", model())
            .instruction(
                "You are the help desk. Remember what customers tell you about their devices.",
            )
            .tools(tools.all())
            .build()
            .expect("desk agent"),
    )
}

/// One turn of `thread`, printed.
async fn turn(runner: &Runner, thread: &str, text: &str) {
    println!("[{thread}] user: {text}");
    let mut turn = runner
        .turn(TurnRequest::new(thread, Message::user(text)))
        .await
        .expect("the thread is free");
    while let Some(event) = turn.next().await {
        if let Some(m) = event.message_output() {
            for call in &m.tool_calls {
                println!("[{thread}]   calls {}({})", call.name, call.arguments);
            }
            match m.role {
                Role::Tool => println!("[{thread}]   tool: {}", m.content),
                Role::Assistant if !m.content.is_empty() => {
                    println!("[{thread}] desk: {}", m.content)
                }
                _ => {}
            }
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("agentflow-memory-{}", std::process::id()));
    let alice = Partition::new(Tenant::new("acme")?, Scope::user("alice")?);
    let bob = Partition::new(Tenant::new("globex")?, Scope::user("bob")?);

    // Monday.
    {
        let memory = Memory::new(SqliteMemoryStore::open(dir.join("memory.db")).await?);
        let runner = Runner::builder(desk(&memory, alice.clone()))
            .stores(FileStore::new(dir.join("threads"))?)
            .build();
        turn(&runner, "monday", "Hello! My printer is an X200.").await;
    }

    // Friday: a new process would open the same files.
    let memory = Memory::new(SqliteMemoryStore::open(dir.join("memory.db")).await?);
    let runner = Runner::builder(desk(&memory, alice.clone()))
        .stores(FileStore::new(dir.join("threads"))?)
        .build();
    turn(&runner, "friday", "Which toner do I need?").await;

    // Another tenant's user, same question, same store: nothing of Alice's is found.
    let runner = Runner::builder(desk(&memory, bob.clone()))
        .stores(FileStore::new(dir.join("threads"))?)
        .build();
    turn(&runner, "bob-1", "Which toner do I need?").await;

    let kept = memory
        .get(
            &alice,
            &Namespace::parse("desk/devices")?,
            &ItemKey::new("printer-model")?,
        )
        .await?
        .map(|item| item.value.to_string());
    println!("kept for acme/alice at desk/devices/printer-model: {kept:?}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
