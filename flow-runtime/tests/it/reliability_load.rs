//! Load: many concurrent runs of one shared tree on a multi-thread tokio runtime, each with its
//! own session; every run checks its own event sequence, record and session values, so a
//! leak of state between runs fails it. A soak test repeats rounds of runs (bounded by rounds,
//! not wall time) and checks that nothing stays alive between rounds.

use crate::support;
use support::Held;

use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    set_sub_agents, tool_fn_with_context, AgentEvent, ChatModelAgent, FlowAgent, FnAgent, Message,
    Runner, Session, ToolContext, ToolError,
};
use futures::StreamExt;
use serde_json::json;

/// desk -> clerk. desk (code) reads the session value `user`, writes `greeted`, yields, and
/// transfers; clerk (an LLM agent on a shared rule-based model) calls `whoami`, which reads
/// `user` from the session and writes `served`, then answers.
fn desk(live: &Arc<AtomicIsize>) -> FlowAgent {
    let body_live = Arc::clone(live);
    let desk = FnAgent::new("desk", move |cx, _| {
        let held = Held::new(&body_live);
        async move {
            let _held = held;
            let user: String = cx.session().value("user").unwrap().unwrap();
            cx.session().set_value("greeted", &user).unwrap();
            tokio::task::yield_now().await;
            cx.say(format!("hello {user}"));
            cx.transfer("clerk");
            Ok(())
        }
    });
    let whoami = tool_fn_with_context(
        "whoami",
        "Who the user is.",
        |cx: ToolContext, _: serde_json::Value| async move {
            let session = cx.run_context().session();
            let user: String = session.value("user").unwrap().unwrap();
            tokio::task::yield_now().await;
            session.set_value("served", &user).unwrap();
            Ok::<_, ToolError>(user)
        },
    );
    let model = ScriptedModel::rules()
        .after_tool("whoami", "served")
        .otherwise(ScriptStep::tool_call("whoami", json!({})));
    let clerk = ChatModelAgent::builder("clerk", model)
        .tool(whoami)
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(desk), [FlowAgent::new(clerk)]).unwrap()
}

/// One run for user `i`, checked exactly. Returns nothing: it panics on any difference.
async fn one_run(runner: Runner, i: usize) {
    let user = format!("user-{i}");
    let session = Session::new();
    session.set_value("user", &user).unwrap();
    let events: Vec<AgentEvent> = runner
        .run(RunRequest::new([Message::user(format!("I am {user}"))]).session(Arc::clone(&session)))
        .collect()
        .await;
    let shown: Vec<String> = events
        .iter()
        .map(|e| {
            assert!(e.error.is_none(), "{user}: {:?}", e.error);
            let m = e.message_output().expect("every event has a message");
            format!("{} {}: {}", e.run_path(), m.role, m.content)
        })
        .collect();
    assert_eq!(
        shown,
        [
            format!("desk assistant: hello {user}"),
            "desk assistant: ".to_owned(),
            "desk tool: successfully transferred to agent [clerk]".to_owned(),
            "desk/clerk assistant: ".to_owned(),
            format!("desk/clerk tool: {user}"),
            "desk/clerk assistant: served".to_owned(),
        ],
        "run of {user}"
    );
    assert_eq!(session.len(), 6, "{user}");
    let mut values: Vec<(String, serde_json::Value)> = session.values().into_iter().collect();
    values.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        values,
        [
            ("greeted".to_owned(), json!(user)),
            ("served".to_owned(), json!(user)),
            ("user".to_owned(), json!(user)),
        ],
        "{user}"
    );
    // The record holds this run's messages only.
    let recorded: Vec<String> = session
        .events()
        .iter()
        .map(|e| format!("{} {}", e.run_path(), e.message_now().unwrap().content))
        .collect();
    assert_eq!(recorded[0], format!("desk hello {user}"));
    assert_eq!(recorded[4], format!("desk/clerk {user}"));
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap()
}

async fn round(runner: &Runner, from: usize, runs: usize) {
    let tasks: Vec<_> = (from..from + runs)
        .map(|i| tokio::spawn(one_run(runner.clone(), i)))
        .collect();
    for t in tasks {
        // A failed check in a run panics its task: surface it here.
        t.await.expect("a run failed its checks");
    }
}

#[test]
fn ten_thousand_concurrent_runs_each_keep_their_own_record_and_values() {
    let live = Arc::new(AtomicIsize::new(0));
    let runner = Runner::new(desk(&live));
    runtime().block_on(round(&runner, 0, 10_000));
    assert_eq!(live.load(Ordering::SeqCst), 0);
}

fn soak(rounds: usize, runs: usize) {
    let live = Arc::new(AtomicIsize::new(0));
    let runner = Runner::new(desk(&live));
    let rt = runtime();
    for r in 0..rounds {
        rt.block_on(round(&runner, r * runs, runs));
        assert_eq!(live.load(Ordering::SeqCst), 0, "after round {r}");
    }
}

#[test]
fn soak_twenty_rounds_of_five_hundred_runs() {
    soak(20, 500);
}

/// The long soak (about 200,000 runs); run with `cargo test -- --ignored`.
#[test]
#[ignore = "long soak: 200 rounds of 1000 runs"]
fn soak_two_hundred_rounds_of_a_thousand_runs() {
    soak(200, 1000);
}
