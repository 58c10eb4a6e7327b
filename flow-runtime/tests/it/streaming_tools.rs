//! Streaming tools: a tool's progress reaches the caller as events at the tool's run path while
//! the tool runs; the model receives the whole result; dropping the stream cancels the tool.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::{
    tool_fn_with_context, AgentEvent, ChatModelAgent, EventOutput, FlowAgent, Runner, ToolContext,
};
use futures::StreamExt;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Crawl {
    pages: u32,
}

fn progress_of(event: &AgentEvent) -> Option<serde_json::Value> {
    match &event.output {
        Some(EventOutput::Custom(v)) => v.get("tool_progress").cloned(),
        _ => None,
    }
}

#[tokio::test]
async fn progress_reaches_the_caller_while_the_tool_runs_and_the_model_gets_the_whole_result() {
    let ended = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&ended);
    let crawl = tool_fn_with_context("crawl", "Reads pages.", move |cx: ToolContext, a: Crawl| {
        let done = Arc::clone(&done);
        async move {
            for page in 1..=a.pages {
                cx.progress(json!({ "page": page })).await;
            }
            done.store(true, Ordering::SeqCst);
            Ok::<_, String>(format!("read {} pages", a.pages))
        }
    });
    let model = ScriptedModel::new([
        ScriptStep::tool_call("crawl", json!({"pages": 3})),
        ScriptStep::text("Done reading."),
    ]);
    let agent = ChatModelAgent::builder("reader", model.clone())
        .tool(crawl)
        .build()
        .unwrap();
    let mut events = Runner::new(FlowAgent::new(agent)).run("read the site");
    let mut pages = Vec::new();
    while let Some(event) = events.next().await {
        if let Some(p) = progress_of(&event) {
            // Taken before the tool went on: it has not ended yet.
            assert!(
                !ended.load(Ordering::SeqCst),
                "progress after the tool ended"
            );
            assert_eq!(event.run_path().to_string(), "reader/crawl");
            assert_eq!(p["tool"], "crawl");
            pages.push(p["progress"]["page"].as_u64().unwrap());
        }
    }
    assert_eq!(pages, [1, 2, 3]);
    // The model saw the whole result, and no progress.
    let second = &model.requests()[1];
    assert_eq!(second.messages.last().unwrap().content, "read 3 pages");
    assert!(second
        .messages
        .iter()
        .all(|m| !m.content.contains("tool_progress")));
}

/// Sets its flag when dropped: the tool's future was dropped (cancelled).
struct DropGuard(Arc<AtomicBool>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_a_streaming_tool() {
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (Arc::clone(&dropped), Arc::clone(&finished));
    let slow = tool_fn_with_context("crawl", "Reads pages.", move |cx: ToolContext, a: Crawl| {
        let guard = DropGuard(Arc::clone(&flag));
        let count = Arc::clone(&count);
        async move {
            let _guard = guard;
            for page in 1..=a.pages {
                cx.progress(json!({ "page": page })).await;
            }
            count.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>("read")
        }
    });
    let model = ScriptedModel::new([ScriptStep::tool_call("crawl", json!({"pages": 1000}))]);
    let agent = ChatModelAgent::builder("reader", model)
        .tool(slow)
        .build()
        .unwrap();
    let mut events = Runner::new(FlowAgent::new(agent)).run("read");
    loop {
        let event = events.next().await.expect("progress comes");
        if progress_of(&event).is_some() {
            break;
        }
    }
    assert!(!dropped.load(Ordering::SeqCst));
    drop(events);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );
    assert_eq!(
        finished.load(Ordering::SeqCst),
        0,
        "the tool never finished"
    );
}
