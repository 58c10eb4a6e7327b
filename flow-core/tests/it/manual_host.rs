//! The engine runs on any executor and waits only on its host: a run on a [`ManualHost`],
//! polled by a single-threaded `futures` executor (no tokio), is stepped by hand. It stops at
//! a retry's backoff and at a tool's time limit until the test moves the host's clock, and
//! goes on from there.

use std::sync::Arc;
use std::time::Duration;

use agentweave_core::host::ManualHost;
use agentweave_core::model::{ModelError, RetryPolicy, ScriptStep, ScriptedModel};
use agentweave_core::{
    tool_fn, Agent, AgentEvent, AgentInput, ChatModelAgent, FlowAgent, Message, RunContext,
    Session, ToolError,
};
use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use futures::StreamExt;
use serde_json::json;

/// Starts `agent` on "hello" on `host`, collecting its events into the returned cell as the
/// pool runs.
fn start(
    pool: &LocalPool,
    agent: FlowAgent,
    host: &ManualHost,
) -> Arc<std::sync::Mutex<Vec<AgentEvent>>> {
    let message = Arc::new(Message::user("hello"));
    let name = agent.name().to_owned();
    let cx = RunContext::new_run(Session::new(), [Arc::clone(&message)], false, name)
        .with_host(Arc::new(host.clone()));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = Arc::clone(&seen);
    pool.spawner()
        .spawn_local(async move {
            let mut events = Arc::new(agent).run(cx, AgentInput::new([message]));
            while let Some(event) = events.next().await {
                out.lock().unwrap().push(event);
            }
        })
        .unwrap();
    seen
}

fn answer(events: &[AgentEvent]) -> Option<String> {
    events
        .iter()
        .rev()
        .find_map(|e| e.message_output().filter(|m| m.tool_calls.is_empty()))
        .map(|m| m.content.clone())
}

#[test]
fn a_retry_waits_for_the_hosts_clock() {
    let model = ScriptedModel::new([
        ScriptStep::fail(ModelError::Connection {
            model: "m".into(),
            message: "connection reset".into(),
        }),
        ScriptStep::text("hi there"),
    ]);
    let agent = ChatModelAgent::builder("bot", model)
        .retry(RetryPolicy::new(2).initial_backoff(Duration::from_secs(3)))
        .build()
        .unwrap();
    let host = ManualHost::new();
    let mut pool = LocalPool::new();
    let events = start(&pool, FlowAgent::new(agent), &host);

    pool.run_until_stalled();
    // The first call failed; the run waits out its backoff on the host, which does not move.
    assert_eq!(host.waiting(), 1);
    assert!(answer(&events.lock().unwrap()).is_none());

    host.advance(Duration::from_secs(2));
    pool.run_until_stalled();
    assert!(
        answer(&events.lock().unwrap()).is_none(),
        "2 s of a 3 s backoff"
    );

    host.advance(Duration::from_secs(1));
    pool.run_until_stalled();
    assert_eq!(answer(&events.lock().unwrap()).as_deref(), Some("hi there"));
    assert_eq!(host.waiting(), 0);
}

#[test]
fn a_tools_time_limit_runs_out_on_the_hosts_clock() {
    let model = ScriptedModel::new([
        ScriptStep::tool_call("lookup", json!({})),
        ScriptStep::text("the lookup timed out"),
    ]);
    // A tool that never answers.
    let lookup = tool_fn(
        "lookup",
        "Looks something up.",
        |_: serde_json::Value| async move {
            futures::future::pending::<()>().await;
            Ok::<_, ToolError>("never")
        },
    );
    let agent = ChatModelAgent::builder("bot", model)
        .tool(lookup)
        .tool_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let host = ManualHost::new();
    let mut pool = LocalPool::new();
    let events = start(&pool, FlowAgent::new(agent), &host);

    pool.run_until_stalled();
    assert_eq!(host.waiting(), 1, "the tool's time limit");
    assert!(answer(&events.lock().unwrap()).is_none());

    assert!(host.advance_to_next());
    pool.run_until_stalled();
    let events = events.lock().unwrap();
    let result = events
        .iter()
        .find_map(|e| e.message_output().filter(|m| m.tool_call_id.is_some()))
        .expect("the tool's result");
    assert!(
        result.content.contains("timed out after 10000 ms"),
        "{}",
        result.content
    );
    assert_eq!(answer(&events).as_deref(), Some("the lookup timed out"));
    assert_eq!(host.elapsed(), Duration::from_secs(10));
}
