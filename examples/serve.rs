//! Serves the offline customer-service desk over HTTP, with the web console.
//!
//! ```text
//! cargo run --example serve                         # dev mode: no token, 127.0.0.1:8080 only
//! AGENTFLOW_TOKEN=$(openssl rand -hex 24) AGENTFLOW_ADDR=0.0.0.0:8080 cargo run --example serve
//! AGENTFLOW_SERVE_SELF_TEST=1 cargo run --example serve   # one turn and one approval, then exit
//! ```
//!
//! Open the printed URL in a browser: write "I want a refund for order 42", watch `triage` hand
//! over to `refund`, approve the refund in the Approvals panel. The desk is
//! `agentweave_server::demo::desk()` (the `customer_service` example's desk, with a refund that waits
//! for a human), on scripted models: it needs no network and answers the same every time.
//! Threads and checkpoints go to `.agentflow/checkpoints` (or `$AGENTFLOW_CHECKPOINT_DIR`),
//! so a restart loses nothing. The server keeps long-term memory too (`/v1/memory/...`, in
//! `.agentflow/memory.db` or `$AGENTFLOW_MEMORY_DB`): the console's "Remembered about you"
//! panel lists what it keeps about the signed-in user, each item with Delete.
//!
//! With `AGENTFLOW_SERVE_SELF_TEST=1` (CI sets it) the example serves on a free loopback port,
//! runs one turn and its approval against itself over HTTP, prints them, and exits: 0 if the
//! refund went through.

use std::net::SocketAddr;

use agentweave::memory::{Memory, SqliteMemoryStore};
use agentweave::{run::TurnRouting, store::FileStore};
use agentweave_server::{AppState, Auth};

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let self_test = std::env::var("AGENTFLOW_SERVE_SELF_TEST").is_ok_and(|v| v == "1");
    let addr: SocketAddr = match std::env::var("AGENTFLOW_ADDR") {
        Ok(a) if !self_test => a.parse()?,
        _ if self_test => "127.0.0.1:0".parse()?,
        _ => "127.0.0.1:8080".parse()?,
    };
    let token = std::env::var("AGENTFLOW_TOKEN").ok();
    let memory_db = std::env::var_os("AGENTFLOW_MEMORY_DB")
        .map_or_else(|| ".agentflow/memory.db".into(), std::path::PathBuf::from);
    if let Some(dir) = memory_db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let builder = AppState::builder(FileStore::open_default()?)
        .flow("desk", agentweave_server::demo::desk())
        .memory(Memory::new(SqliteMemoryStore::open(&memory_db).await?))
        // The desk's triage routes by keywords, so every turn starts there.
        .turn_routing(TurnRouting::Root);
    let state = match &token {
        Some(t) => builder.auth(Auth::bearer(t.clone())),
        None => builder.dev_mode(),
    }
    .build()?;

    let listener = tokio::net::TcpListener::bind(addr).await?;
    let url = format!("http://{}/", listener.local_addr()?);
    println!("serving the customer-service desk at {url}");
    match &token {
        Some(_) => println!("API calls need: Authorization: Bearer $AGENTFLOW_TOKEN"),
        None => println!(
            "dev mode: no token, loopback clients only (set AGENTFLOW_TOKEN to require one)"
        ),
    }
    if !self_test {
        println!("stop with Ctrl-C");
        agentweave_server::serve_until(listener, state, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
        return Ok(());
    }

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(agentweave_server::serve_until(listener, state, async {
        let _ = stopped.await;
    }));
    let result = self_check(&url).await;
    let _ = stop.send(());
    server.await??;
    result
}

/// One turn that stops for approval, and the approval: what the README's curl commands do.
async fn self_check(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let thread = format!(
        "{url}v1/flows/desk/threads/self-test-{}",
        std::process::id()
    );
    let client = reqwest::Client::new();
    println!("\nPOST {thread}/turns  {{\"message\": \"I want a refund for order 42\"}}");
    let turn = client
        .post(format!("{thread}/turns"))
        .json(&serde_json::json!({"message": "I want a refund for order 42"}))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    let done = print_events(&turn);
    let interrupt = done["interrupts"][0]["id"]
        .as_str()
        .ok_or("the turn did not stop for approval")?;

    println!("\nPOST {thread}/resume  {{\"interrupt_id\": \"{interrupt}\", \"data\": {{\"approve\": true}}}}");
    let resumed = client
        .post(format!("{thread}/resume"))
        .json(&serde_json::json!({"interrupt_id": interrupt, "data": {"approve": true}}))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    let done = print_events(&resumed);
    let answer = done["output"].as_str().unwrap_or_default();
    if !answer.starts_with("Done: 39 EUR") {
        return Err(format!("the approved refund did not finish: {done}").into());
    }

    // What the console's memory panel reads and deletes: the caller's own user memory.
    let item = format!(
        "{url}v1/memory/item?namespace=self-test&key=run-{}",
        std::process::id()
    );
    println!("\nPUT {url}v1/memory/item, GET {url}v1/memory/items, DELETE it again");
    client
        .put(format!("{url}v1/memory/item"))
        .json(&serde_json::json!({
            "namespace": "self-test",
            "key": format!("run-{}", std::process::id()),
            "value": {"device": "X200"},
            "text": "the customer's printer is an X200",
        }))
        .send()
        .await?
        .error_for_status()?;
    let items: serde_json::Value = client
        .get(format!("{url}v1/memory/items?prefix=self-test"))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!("  remembered: {}", items["items"]);
    let deleted: serde_json::Value = client
        .delete(&item)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    if deleted["deleted"] != true {
        return Err(format!("the memory item was not deleted: {deleted}").into());
    }
    println!("\nself-test passed");
    Ok(())
}

/// Prints a turn's Server-Sent Events (chunks joined) and returns the `done` event's data.
fn print_events(sse: &str) -> serde_json::Value {
    let mut done = serde_json::Value::Null;
    let mut streaming = false;
    for frame in sse.split("\n\n") {
        let mut name = "";
        let mut data = serde_json::Value::Null;
        for line in frame.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = n;
            } else if let Some(d) = line.strip_prefix("data: ") {
                data = serde_json::from_str(d).unwrap_or_default();
            }
        }
        let path = data["run_path"]
            .as_array()
            .map(|p| {
                p.iter()
                    .filter_map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        match name {
            "chunk" if data["content"] != "" => {
                if !streaming {
                    print!("  [{path}] ");
                    streaming = true;
                }
                print!("{}", data["content"].as_str().unwrap_or_default());
            }
            "event" => {
                if streaming {
                    println!();
                    streaming = false;
                }
                let m = &data["message"];
                if m["role"] == "tool" {
                    println!(
                        "  [{path}] tool {}: {}",
                        m["tool_name"].as_str().unwrap_or("?"),
                        m["content"].as_str().unwrap_or_default()
                    );
                }
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    println!(
                        "  [{path}] calls {} {}",
                        call["name"].as_str().unwrap_or("?"),
                        call["arguments"].as_str().unwrap_or_default()
                    );
                }
                if let Some(to) = data["action"]["transfer_to_agent"].as_str() {
                    println!("  [{path}] => transfer to {to}");
                }
                if let Some(i) = data["action"]["interrupted"].as_object() {
                    println!(
                        "  [{path}] => waits for approval ({}): {}",
                        i["id"], i["info"]
                    );
                }
            }
            "error" => println!("  error: {}", data["message"]),
            "done" => done = data,
            _ => {}
        }
    }
    done
}
