//! The official `langgraph-sdk` Python client, unchanged, against agentflow's Agent Protocol
//! routes on a real server: `tests/langgraph/sdk_check.py` creates threads, streams a run in
//! `messages` and `updates` modes, meets the refund's interrupt and resumes it with a command,
//! reads one history state per checkpoint, streams in every mode the SDK offers (and with
//! subgraphs), sends new input to a thread waiting at an interrupt, updates and searches
//! threads, joins a background run's stream, cancels a run, exercises every
//! `multitask_strategy`, has a run's webhook called (checked here, signature included), and
//! puts, gets, searches, lists and deletes items of the store (long-term memory); creates,
//! searches, counts, pauses and deletes crons (on a second server, with a run queue).
//!
//! Needs a Python with `langgraph-sdk` (`AGENTFLOW_LANGGRAPH_PYTHON`, installed by
//! `.ci/langgraph.sh`); skips without it unless `AGENTFLOW_REQUIRE_COMPONENTS=1`.

use crate::common;

use std::time::Duration;

use agentweave_runtime::async_trait;
use agentweave_runtime::model::{ChatRequest, ModelError};
use agentweave_runtime::{
    tool_fn, AgentEvent, ChatModel, ChatModelAgent, FlowAgent, FnAgent, InMemoryStore, Message,
    MessageStream, ToolCall,
};
use agentweave_server::{AppState, Auth};
use common::{spawn, TOKEN};

/// Calls its never-ending tool.
struct Patient;

#[async_trait]
impl ChatModel for Patient {
    fn model_name(&self) -> &str {
        "patient"
    }

    async fn generate(&self, _request: &ChatRequest) -> Result<Message, ModelError> {
        Ok(Message::assistant_tool_calls(
            "",
            vec![ToolCall::new("call-1", "ponder", "{}")],
        ))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

fn state() -> AppState {
    let ponder = tool_fn("ponder", "Thinks for ever.", |_: Nothing| async {
        std::future::pending::<()>().await;
        Ok::<_, std::convert::Infallible>(String::new())
    });
    let slow = ChatModelAgent::builder("slow", Patient)
        .tool(ponder)
        .build()
        .unwrap();
    // Application data, then an answer streamed in two chunks.
    let chatty = FnAgent::new("chatty", |cx, _| async move {
        cx.emit(AgentEvent::custom(serde_json::json!({"progress": 50})));
        cx.send_stream(MessageStream::from_messages([
            Message::assistant("Hel"),
            Message::assistant("lo!"),
        ]));
        Ok(())
    });
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("slow", FlowAgent::new(slow))
        .flow("chatty", FlowAgent::new(chatty))
        .webhook_secret(SECRET)
        .outbound(common::loopback_allowed())
        .auth(Auth::bearer(TOKEN))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .memory(agentweave_runtime::memory::Memory::new(
            agentweave_runtime::memory::TransientMemoryStore::new(),
        ))
        .build()
        .unwrap()
}

const SECRET: &[u8] = b"langgraph-sdk-webhook-secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_langgraph_sdk_client_works_unchanged() {
    let Some(python) = std::env::var_os("AGENTFLOW_LANGGRAPH_PYTHON") else {
        agentweave_runtime::testing::skip_missing_component(
            "a Python with langgraph-sdk",
            "set AGENTFLOW_LANGGRAPH_PYTHON to a virtualenv's python with `pip install \
             langgraph-sdk` (.ci/langgraph.sh does it)",
        );
        return;
    };
    let server = spawn(state()).await;
    // Crons need a run queue (schedules live in its store): a second server has one.
    let queued = spawn(
        AppState::builder(InMemoryStore::new())
            .flow("desk", agentweave_server::demo::desk())
            .auth(Auth::bearer(TOKEN))
            .run_queue(agentweave_runtime::store::InMemoryRunQueue::new())
            .build()
            .unwrap(),
    )
    .await;
    let (tx, mut hits) = tokio::sync::mpsc::unbounded_channel();
    let hook = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send((headers, body.to_vec()));
                    axum::http::StatusCode::OK
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, hook).await.unwrap() });
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/langgraph/sdk_check.py");
    let run = tokio::process::Command::new(python)
        .arg(script)
        .env("AGENTFLOW_LG_URL", format!("{}/v1", server.base))
        .env("AGENTFLOW_LG_QUEUE_URL", format!("{}/v1", queued.base))
        .env("AGENTFLOW_LG_TOKEN", TOKEN)
        // `127.1`: the leak check refuses `http://127.0.0.1` in any answer.
        .env("AGENTFLOW_LG_HOOK", format!("http://127.1:{port}/hook"))
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the SDK script finished within 120 s")
        .expect("the SDK script started");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the langgraph-sdk script failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    // The run the script gave a webhook: the server told it of its end, signed.
    let run_id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("webhook run: "))
        .expect("the script started a run with a webhook");
    let (headers, body) = tokio::time::timeout(Duration::from_secs(30), hits.recv())
        .await
        .expect("the webhook is called")
        .unwrap();
    let called: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(called["run_id"], run_id, "{called}");
    assert_eq!(called["status"], "success", "{called}");
    let timestamp: u64 = headers["x-agentflow-timestamp"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        headers["x-agentflow-signature"].to_str().unwrap(),
        agentweave_server::webhooks::signature(SECRET, timestamp, &body)
    );
}
