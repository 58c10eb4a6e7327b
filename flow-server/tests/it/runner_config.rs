//! The served runner is configurable: a ready runner per flow (`flow_runner`) or a function
//! configuring each flow's runner (`runners`); its middleware, limits and checkpoint key
//! apply to the turns the server runs.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::middleware::{HookContext, HookError};
use agentweave_runtime::{
    async_trait, AgentInput, InMemoryStore, Message, Middleware, RunLimits, Runner,
};
use agentweave_server::{AppState, Auth};
use common::{done, post, read_sse, spawn, turn, TOKEN};
use serde_json::json;

/// Counts the agent runs it sees.
struct Count(Arc<AtomicUsize>);

#[async_trait]
impl Middleware for Count {
    async fn before_agent(
        &self,
        _cx: &HookContext,
        _input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(None)
    }
}

fn signed_state(store: InMemoryStore, key: &[u8], runs: Arc<AtomicUsize>) -> AppState {
    let runner = Runner::builder(agentweave_server::demo::desk())
        .middleware(Count(runs))
        .checkpoint_key(key.to_vec())
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .streaming(true);
    AppState::builder(store)
        .flow_runner("desk", runner)
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_served_runner_keeps_its_middleware_and_checkpoint_key() {
    let store = InMemoryStore::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let server = spawn(signed_state(
        store.clone(),
        b"key one of the deployment",
        Arc::clone(&runs),
    ))
    .await;
    let events = turn(&server.base, "desk", "r1", "I want a refund").await;
    assert_eq!(done(&events)["interrupted"], true);
    assert!(
        runs.load(Ordering::SeqCst) >= 2,
        "the middleware saw the agents"
    );
    let id = done(&events)["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // A server on the same store with another key cannot use the checkpoint: it was signed
    // with the first key.
    let other = spawn(signed_state(
        store.clone(),
        b"another key entirely",
        Arc::default(),
    ))
    .await;
    let refused = post(
        &other.base,
        "/v1/flows/desk/threads/r1/resume",
        json!({"interrupt_id": id, "data": {"approve": true}}),
    )
    .await;
    assert_ne!(
        refused.status(),
        200,
        "a checkpoint signed with another key is refused"
    );

    // The server with the key resumes it.
    let events = read_sse(
        post(
            &server.base,
            "/v1/flows/desk/threads/r1/resume",
            json!({"interrupt_id": id, "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    assert_eq!(done(&events)["interrupted"], false, "{events:?}");
}

#[tokio::test]
async fn a_runner_function_configures_each_flow() {
    let named = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&named);
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .runners(move |flow, runner| {
            seen.lock().unwrap().push(flow.to_owned());
            runner.limits(RunLimits::default().max_events(2))
        })
        .build()
        .unwrap();
    assert_eq!(*named.lock().unwrap(), ["desk"]);
    let server = spawn(state).await;
    let events = turn(&server.base, "desk", "l1", "I want a refund").await;
    let limited = events
        .iter()
        .filter_map(|e| e.data.get("error"))
        .any(|e| e["code"] == "limit_reached");
    assert!(limited, "the runner's limits apply: {events:?}");
}
