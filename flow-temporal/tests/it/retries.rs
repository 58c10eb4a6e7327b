//! The retry policies, on a real dev server: a model call rate-limited once (429) is retried
//! and the turn goes on; one refused (400) is not retried and the turn ends with an error
//! naming the agent; a non-idempotent tool whose call timed out runs at most once and the
//! model is told it may or may not have happened; an idempotent tool is retried under the same
//! idempotency key.
//!
//! Needs the dev server (see tests/it/temporal.rs).

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentweave_runtime::model::{ChatModel, ChatRequest, ModelError, ScriptStep};
use agentweave_runtime::{
    async_trait, tool_fn_with_context, ChatModelAgent, FlowAgent, Message, ToolContext, ToolError,
};
use agentweave_temporal::{worker_flows, Thread, ThreadStart};
use serde_json::json;
use support::*;

/// A model that fails its first `failures` calls with HTTP `status`, then answers "hello".
struct Flaky {
    status: u16,
    failures: usize,
    calls: AtomicUsize,
}

#[async_trait]
impl ChatModel for Flaky {
    fn model_name(&self) -> &str {
        "flaky"
    }

    async fn generate(&self, _request: &ChatRequest) -> Result<Message, ModelError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if call < self.failures {
            Err(ModelError::http("flaky", self.status, "try again later"))
        } else {
            Ok(Message::assistant("hello"))
        }
    }
}

async fn one_turn(flow: FlowAgent, tool_timeout_ms: Option<u64>) -> Option<Vec<serde_json::Value>> {
    let client = server().await?;
    let name = unique("retries");
    worker_flows().insert(&name, flow);
    let queue = unique("queue");
    start_worker(&client, &queue);
    let thread = Thread::start_with(
        &client,
        &queue,
        ThreadStart {
            tool_timeout_ms,
            ..ThreadStart::new(name, unique("thread"))
        },
    )
    .await
    .unwrap();
    Some(thread.turn("ana", "hi").await.unwrap().events)
}

fn contents(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e["message"]["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_model_call_is_retried_and_the_turn_goes_on() {
    let model = Arc::new(Flaky {
        status: 429,
        failures: 1,
        calls: AtomicUsize::new(0),
    });
    let agent = ChatModelAgent::builder_with_arc("bot", model.clone())
        .build()
        .unwrap();
    let Some(events) = one_turn(FlowAgent::new(agent), None).await else {
        return;
    };
    assert_eq!(contents(&events), ["hello"]);
    assert_eq!(
        model.calls.load(Ordering::SeqCst),
        2,
        "one failure, one retry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_model_call_is_not_retried_and_the_turn_ends_with_an_error() {
    let model = Arc::new(Flaky {
        status: 400,
        failures: usize::MAX,
        calls: AtomicUsize::new(0),
    });
    let agent = ChatModelAgent::builder_with_arc("bot", model.clone())
        .build()
        .unwrap();
    let Some(events) = one_turn(FlowAgent::new(agent), None).await else {
        return;
    };
    assert_eq!(
        model.calls.load(Ordering::SeqCst),
        1,
        "a 400 is not retried"
    );
    let error = events
        .iter()
        .find_map(|e| e.get("error").filter(|e| !e.is_null()))
        .unwrap_or_else(|| panic!("an error event: {events:#?}"))
        .to_string();
    assert!(error.contains("bot") && error.contains("400"), "{error}");
}

/// A `wire` tool that takes `slow` on its first call and answers at once after; records the
/// idempotency key of every call.
fn wiring(idempotent: bool, slow: Duration, keys: Arc<Mutex<Vec<String>>>) -> FlowAgent {
    let wire = tool_fn_with_context(
        "wire",
        "Sends a wire.",
        move |cx: ToolContext, _: serde_json::Value| {
            let keys = keys.clone();
            async move {
                let first = {
                    let mut keys = keys.lock().unwrap();
                    keys.push(cx.idempotency_key());
                    keys.len() == 1
                };
                if first {
                    tokio::time::sleep(slow).await;
                }
                Ok::<_, ToolError>("sent".to_string())
            }
        },
    )
    .with_idempotent(idempotent);
    let agent = ChatModelAgent::builder(
        "teller",
        stateless(vec![
            ScriptStep::tool_call("wire", json!({})),
            ScriptStep::text("done"),
        ]),
    )
    .tool(wire)
    .build()
    .unwrap();
    FlowAgent::new(agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_idempotent_tool_runs_at_most_once() {
    let keys = Arc::new(Mutex::new(Vec::new()));
    let flow = wiring(false, Duration::from_secs(4), keys.clone());
    let Some(events) = one_turn(flow, Some(1000)).await else {
        return;
    };
    let said = contents(&events);
    let result = said
        .iter()
        .find(|s| s.starts_with("error:"))
        .unwrap_or_else(|| panic!("the call's timeout reaches the model: {said:?}"));
    assert!(result.contains("may or may not have happened"), "{result}");
    assert_eq!(said.last().map(String::as_str), Some("done"));
    // Long enough for a retry to have started, had there been one.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        keys.lock().unwrap().len(),
        1,
        "called once: {:?}",
        keys.lock().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_tool_is_retried_under_the_same_key() {
    let keys = Arc::new(Mutex::new(Vec::new()));
    let flow = wiring(true, Duration::from_secs(4), keys.clone());
    let Some(events) = one_turn(flow, Some(1000)).await else {
        return;
    };
    let said = contents(&events);
    assert!(
        said.contains(&"sent".to_string()),
        "the retry answered: {said:?}"
    );
    let keys = keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 2, "the timed-out call and its retry: {keys:?}");
    assert_eq!(keys[0], keys[1], "one idempotency key for both attempts");
}
