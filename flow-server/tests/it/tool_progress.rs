//! A streaming tool's progress reaches an SSE client of the server while the tool runs, in
//! the outward form (a `custom` value at the tool's run path).

use crate::common;

use std::sync::Arc;

use agentweave_runtime::{
    tool_fn_with_context, ChatModelAgent, FlowAgent, InMemoryStore, ScriptStep, ScriptedModel,
    ToolContext,
};
use agentweave_server::{AppState, Auth};
use common::{post, spawn, TOKEN};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

/// An agent whose tool reports a page, then waits until the test lets it finish.
fn crawler(gate: Arc<Semaphore>) -> FlowAgent {
    let model = ScriptedModel::rules()
        .after_tool("crawl", ScriptStep::text("The forum likes the kettle."))
        .otherwise(ScriptStep::tool_call("crawl", json!({})));
    let agent = ChatModelAgent::builder("reader", model)
        .tool(tool_fn_with_context(
            "crawl",
            "Reads a forum.",
            move |cx: ToolContext, _args: Value| {
                let gate = Arc::clone(&gate);
                async move {
                    cx.progress(json!({"page": 1, "of": 2})).await;
                    // Finishes only once the client has seen the progress.
                    gate.acquire().await.unwrap().forget();
                    Ok::<_, String>("2 pages read".to_owned())
                }
            },
        ))
        .build()
        .unwrap();
    FlowAgent::new(agent)
}

#[tokio::test]
async fn a_tools_progress_reaches_the_sse_client_before_the_tool_ends() {
    let gate = Arc::new(Semaphore::new(0));
    let state = AppState::builder(InMemoryStore::new())
        .flow("forum", crawler(Arc::clone(&gate)))
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap();
    let server = spawn(state).await;
    let response = post(
        &server.base,
        "/v1/flows/forum/threads/f1/turns",
        json!({"message": "what does the forum say?"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut events = response.bytes_stream().eventsource();
    let mut seen: Vec<(String, Value)> = Vec::new();
    let mut released = false;
    // A guard against a hang (the tool waits for the client), not a timing assertion.
    let read = async {
        while let Some(event) = events.next().await {
            let event = event.expect("well-formed SSE");
            let data: Value = serde_json::from_str(&event.data).expect("JSON data");
            if data["custom"]["tool_progress"].is_object() && !released {
                // The tool is still waiting at the gate: its result has not been sent.
                assert!(
                    !seen.iter().any(|(_, d)| d["message"]["role"] == "tool"),
                    "the tool's result came before its progress: {seen:#?}"
                );
                released = true;
                gate.add_permits(1);
            }
            seen.push((event.event, data));
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(120), read)
        .await
        .expect("the progress never reached the client while the tool waited for it");
    assert!(released, "no progress event: {seen:#?}");
    let progress = seen
        .iter()
        .find(|(_, d)| d["custom"]["tool_progress"].is_object())
        .map(|(_, d)| d)
        .unwrap();
    assert_eq!(progress["run_path"], json!(["reader", "crawl"]));
    assert_eq!(
        progress["custom"]["tool_progress"],
        json!({"tool": "crawl", "call_id": progress["custom"]["tool_progress"]["call_id"], "progress": {"page": 1, "of": 2}})
    );
    // Then the result and the answer, and the turn ends.
    let tool = seen
        .iter()
        .position(|(_, d)| d["message"]["role"] == "tool")
        .expect("the tool's result");
    let at = seen
        .iter()
        .position(|(_, d)| d["custom"]["tool_progress"].is_object())
        .unwrap();
    assert!(at < tool);
    assert_eq!(seen.last().unwrap().0, "done");
}
