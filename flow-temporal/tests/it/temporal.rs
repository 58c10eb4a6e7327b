//! The engine on a real Temporal dev server: a thread workflow runs a multi-agent turn (a
//! transfer, a paid tool) with the events of the in-process runner; an approval is an update
//! whose validator refuses the requester and a caller without the grant; Temporal's replayer
//! replays a recorded history, and catches a flow that changed under it.
//!
//! Needs a dev server (`AGENTFLOW_TEMPORAL_ADDRESS`, default `http://127.0.0.1:7233`): skipped
//! without one, failed in CI (`AGENTFLOW_REQUIRE_COMPONENTS=1`).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::host::ManualHost;
use agentweave_runtime::{AgentEvent, InMemoryStore, Message, Runner};
use agentweave_temporal::{worker_flows, AnswerRequest, ThreadStart, ThreadWorkflow, TurnRequest};
use futures::StreamExt;
use serde_json::json;
use support::*;
use temporalio_client::{
    Client, WorkflowExecuteUpdateOptions, WorkflowFetchHistoryOptions, WorkflowGetResultOptions,
    WorkflowHandle, WorkflowQueryOptions, WorkflowSignalOptions, WorkflowStartOptions,
};

async fn start_thread(
    client: &Client,
    task_queue: &str,
    flow: &str,
) -> WorkflowHandle<Client, ThreadWorkflow> {
    let thread = unique("thread");
    client
        .start_workflow(
            ThreadWorkflow::run,
            ThreadStart::new(flow, thread.as_str()),
            WorkflowStartOptions::new(task_queue, thread.as_str()).build(),
        )
        .await
        .expect("the thread workflow starts");
    client.get_workflow_handle::<ThreadWorkflow>(thread)
}

async fn turn(
    handle: &WorkflowHandle<Client, ThreadWorkflow>,
    by: &str,
    text: &str,
) -> Vec<serde_json::Value> {
    handle
        .execute_update(
            ThreadWorkflow::turn,
            TurnRequest::new(by, text),
            WorkflowExecuteUpdateOptions::default(),
        )
        .await
        .expect("the turn runs")
        .events
}

/// The same flow's turn, run by the in-process runner.
async fn in_process(flow: agentweave_runtime::FlowAgent, text: &str) -> Vec<serde_json::Value> {
    let store = InMemoryStore::new();
    let runner = Runner::builder(flow)
        .stores(store.clone())
        .host(Arc::new(ManualHost::new()))
        .build();
    let events: Vec<AgentEvent> = runner
        .turn(agentweave_runtime::TurnRequest::new(
            "t",
            Message::user(text),
        ))
        .await
        .unwrap()
        .collect()
        .await;
    events
        .iter()
        .map(|e| serde_json::to_value(e.to_json().unwrap()).unwrap())
        .collect()
}

async fn close(handle: &WorkflowHandle<Client, ThreadWorkflow>) -> u64 {
    handle
        .signal(ThreadWorkflow::close, (), WorkflowSignalOptions::default())
        .await
        .unwrap();
    handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_agent_turn_runs_as_a_workflow_with_the_events_of_the_in_process_runner() {
    let Some(client) = server().await else { return };
    let ledger = Ledger::new();
    let name = unique("desk");
    worker_flows().insert(&name, desk(&ledger, 30, Duration::ZERO));
    let queue = unique("queue");
    start_worker(&client, &queue);

    let handle = start_thread(&client, &queue, &name).await;
    let on_temporal = turn(&handle, "ana", "please pay my bill").await;

    let here = Ledger::new();
    let expected = in_process(desk(&here, 30, Duration::ZERO), "please pay my bill").await;
    eprintln!(
        "{} events on Temporal, e.g. {}",
        on_temporal.len(),
        on_temporal.last().unwrap()
    );
    assert_eq!(on_temporal, expected, "the same events, JSON for JSON");
    assert!(
        on_temporal.iter().any(|e| e["agent_name"] == "billing"),
        "the turn crossed the transfer: {on_temporal:#?}"
    );
    let payments = ledger.payments();
    assert_eq!(payments.len(), 1, "one payment: {:?}", ledger.calls());
    assert_eq!(payments.values().copied().collect::<Vec<_>>(), [30]);

    // A second turn sees the first (the thread's history) and pays again, under a new key.
    let second = turn(&handle, "ana", "and the next one").await;
    assert!(second.iter().any(|e| e["agent_name"] == "billing"));
    assert_eq!(ledger.payments().len(), 2, "{:?}", ledger.calls());
    assert_eq!(close(&handle).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_an_update_refused_to_the_requester_and_to_a_caller_without_the_grant() {
    let Some(client) = server().await else { return };
    let ledger = Ledger::new();
    let name = unique("clerk");
    worker_flows().insert(&name, clerk(&ledger));
    let queue = unique("queue");
    start_worker(&client, &queue);
    let handle = start_thread(&client, &queue, &name).await;

    let running = {
        let handle =
            client.get_workflow_handle::<ThreadWorkflow>(handle.info().workflow_id.clone());
        tokio::spawn(async move { turn(&handle, "ana", "refund order 7").await })
    };
    // The turn stops at the refund's approval: the question shows in the query.
    let question = loop {
        let asked = handle
            .query(
                ThreadWorkflow::question,
                (),
                WorkflowQueryOptions::default(),
            )
            .await
            .unwrap();
        if let Some(question) = asked {
            break question;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(question.info["approval"]["tool"], "refund");
    assert!(
        ledger.calls().is_empty(),
        "nothing refunded before the answer"
    );

    let answer = |by: &str, grants: &[&str]| AnswerRequest {
        by: by.to_owned(),
        grants: grants.iter().map(|g| g.to_string()).collect(),
        interrupt_id: question.id.clone(),
        answer: json!(true),
        live: None,
    };
    let refused = |request: AnswerRequest| {
        let handle = &handle;
        async move {
            handle
                .execute_update(
                    ThreadWorkflow::answer,
                    request,
                    WorkflowExecuteUpdateOptions::default(),
                )
                .await
                .expect_err("the validator refuses it")
                .to_string()
        }
    };
    let own = refused(answer("ana", &["approve"])).await;
    assert!(own.contains("ana"), "the requester is refused: {own}");
    let no_grant = refused(answer("ben", &["read"])).await;
    assert!(
        no_grant.contains("approve"),
        "a caller without the grant is refused: {no_grant}"
    );
    assert!(ledger.calls().is_empty(), "a refused answer runs nothing");

    handle
        .execute_update(
            ThreadWorkflow::answer,
            answer("carl", &["approve"]),
            WorkflowExecuteUpdateOptions::default(),
        )
        .await
        .expect("an approver with the grant answers");
    let events = running.await.unwrap();
    let said: Vec<String> = events
        .iter()
        .filter_map(|e| e["message"]["content"].as_str().map(str::to_owned))
        .collect();
    assert!(said.iter().any(|s| s == "refunded 5"), "{said:?}");
    assert!(
        said.iter().any(|s| s == "the refund is handled"),
        "{said:?}"
    );
    assert_eq!(ledger.payments().len(), 1);

    // Refused answers never entered the history: its accepted updates are the turn and
    // carl's answer.
    let history = handle
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .unwrap();
    let accepted = history
        .iter()
        .filter(|e| {
            e.event_type
                == temporalio_common::protos::temporal::api::enums::v1::EventType::WorkflowExecutionUpdateAccepted
                    as i32
        })
        .count();
    assert_eq!(accepted, 2, "the turn and one answer");
    assert_eq!(close(&handle).await, 1);

    // The history of a turn that waited for an answer replays too.
    let json = handle
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .to_json()
        .await
        .unwrap();
    agentweave_temporal::replayer()
        .unwrap()
        .replay_workflow(temporalio_client::WorkflowHistory::from_json(&json).unwrap())
        .await
        .expect("the approval's history replays with no non-determinism");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replayer_replays_a_recorded_history_and_catches_a_changed_flow() {
    let Some(client) = server().await else { return };
    let ledger = Ledger::new();
    let name = unique("desk-replay");
    worker_flows().insert(&name, desk(&ledger, 12, Duration::ZERO));
    let queue = unique("queue");
    start_worker(&client, &queue);
    let handle = start_thread(&client, &queue, &name).await;
    turn(&handle, "ana", "pay twelve").await;
    assert_eq!(close(&handle).await, 1);

    let history = || handle.fetch_history(WorkflowFetchHistoryOptions::default());
    let json = history().to_json().await.unwrap();
    let replayer = agentweave_temporal::replayer().unwrap();
    replayer
        .replay_workflow(temporalio_client::WorkflowHistory::from_json(&json).unwrap())
        .await
        .expect("the recorded history replays with no non-determinism");

    // The same flow name, changed under the running threads: the billing agent renamed. The
    // history's recorded model replies still transfer to `billing` (activities do not run
    // again in a replay), so the changed workflow schedules no billing model call where the
    // history has one: Temporal's replayer must fail.
    let changed = {
        use agentweave_runtime::model::ScriptStep;
        use agentweave_runtime::{set_sub_agents, ChatModelAgent, FlowAgent};
        let accounts = ChatModelAgent::builder(
            "accounts",
            stateless(vec![ScriptStep::text("no payment today")]),
        )
        .build()
        .unwrap();
        let desk =
            ChatModelAgent::builder("desk", stateless(vec![ScriptStep::transfer("accounts")]))
                .build()
                .unwrap();
        set_sub_agents(FlowAgent::new(desk), [FlowAgent::new(accounts)]).unwrap()
    };
    worker_flows().insert(&name, changed);
    let error = replayer
        .replay_workflow(temporalio_client::WorkflowHistory::from_json(&json).unwrap())
        .await
        .expect_err("a flow that changed under its history is caught");
    eprintln!("the replayer says: {error}");
    let text = error.to_string().to_lowercase();
    assert!(
        text.contains("nondetermin") || text.contains("non-determin"),
        "{error}"
    );
}
