//! Declarative approvals for tools, served: a tool named by a rule stops for a human before it
//! runs; an approval runs it once, a denial reaches the model as the tool's result and the tool
//! never runs; a predicate over the arguments decides which calls ask.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_runtime::{
    tool_fn, ChatModelAgent, FlowAgent, InMemoryStore, ScriptStep, ScriptedModel, Tool,
    ToolApprovals,
};
use agentweave_server::{AppState, Auth};
use common::{done, get, post, read_sse, spawn, turn, TOKEN};
use serde_json::{json, Value};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Disk {
    disk: String,
}

fn state(approvals: ToolApprovals, disk: &str, runs: Arc<AtomicUsize>) -> AppState {
    let wipe = tool_fn("wipe_disk", "Wipes a disk.", move |a: Disk| {
        let runs = Arc::clone(&runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("wiped {}", a.disk))
        }
    });
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(wipe)];
    let model = ScriptedModel::rules()
        .after_tool("wipe_disk", ScriptStep::text("Finished."))
        .otherwise(ScriptStep::tool_call("wipe_disk", json!({ "disk": disk })));
    let agent = ChatModelAgent::builder("ops", model)
        .tools(approvals.apply(tools))
        .build()
        .unwrap();
    AppState::builder(InMemoryStore::new())
        .flow("ops", FlowAgent::new(agent))
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap()
}

async fn tool_result(base: &str, thread: &str) -> String {
    let thread: Value = get(base, &format!("/v1/flows/ops/threads/{thread}"))
        .await
        .json()
        .await
        .unwrap();
    thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message"]["role"] == "tool")
        .map(|m| m["message"]["content"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

async fn answer(base: &str, thread: &str, id: &str, data: Value) -> Vec<common::Sse> {
    read_sse(
        post(
            base,
            &format!("/v1/flows/ops/threads/{thread}/resume"),
            json!({"interrupt_id": id, "data": data}),
        )
        .await,
    )
    .await
}

#[tokio::test]
async fn an_approved_call_runs_once_a_denied_one_never_and_the_model_hears_why() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = spawn(state(
        ToolApprovals::new().always("wipe_*"),
        "d1",
        Arc::clone(&runs),
    ))
    .await;
    let base = &server.base;

    let events = turn(base, "ops", "yes", "wipe d1").await;
    let asked = &done(&events)["interrupts"][0];
    assert_eq!(asked["info"]["approval"]["tool"], "wipe_disk");
    assert_eq!(
        asked["info"]["approval"]["arguments"],
        json!({"disk": "d1"})
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing ran before the approval"
    );
    let id = asked["id"].as_str().unwrap().to_owned();
    let events = answer(base, "yes", &id, json!(true)).await;
    assert_eq!(done(&events)["output"], "Finished.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(tool_result(base, "yes").await, "wiped d1");

    let events = turn(base, "ops", "no", "wipe d1").await;
    let id = done(&events)["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let events = answer(
        base,
        "no",
        &id,
        json!({"approve": false, "reason": "change freeze"}),
    )
    .await;
    assert_eq!(done(&events)["interrupted"], false);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the denied call never ran");
    let result = tool_result(base, "no").await;
    assert!(result.contains("was not approved"), "{result}");
    assert!(result.contains("change freeze"), "{result}");
}

#[tokio::test]
async fn a_predicate_over_the_arguments_decides_which_calls_ask() {
    let runs = Arc::new(AtomicUsize::new(0));
    let approvals = ToolApprovals::new().when("wipe_disk", |args| args["disk"] == "prod");
    let server = spawn(state(approvals.clone(), "scratch", Arc::clone(&runs))).await;
    let events = turn(&server.base, "ops", "t", "wipe scratch").await;
    assert_eq!(done(&events)["interrupted"], false);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let server = spawn(state(approvals, "prod", Arc::clone(&runs))).await;
    let events = turn(&server.base, "ops", "t", "wipe prod").await;
    assert_eq!(done(&events)["interrupted"], true);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Reset {
    user: String,
    new_password: String,
}

/// The requester of [`password_desk`]: may chat.
pub(crate) const ANA: &str = "ana-requester-token-0123456789";
/// The approver of [`password_desk`]: may approve and read.
pub(crate) const BEN: &str = "ben-approver-token-0123456789";

/// A flow `it` whose agent `helpdesk` calls `reset_password` for kim; the call waits for an
/// approver, who is asked the application's question and sees the arguments without the
/// password. Answers the state and the passwords the tool was called with.
pub(crate) fn password_desk() -> (AppState, Arc<std::sync::Mutex<Vec<String>>>) {
    use agentweave_server::{Principal, Scope};
    let called = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&called);
    let reset = tool_fn(
        "reset_password",
        "Sets a user's new password.",
        move |a: Reset| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(a.new_password);
                Ok::<_, String>(format!("the password of {} was reset", a.user))
            }
        },
    );
    let approvals = ToolApprovals::new()
        .always("reset_password")
        .question(|tool, args| {
            format!(
                "Reset the password of {} ({tool})?",
                args["user"].as_str().unwrap_or("?")
            )
        })
        .redact(|_, args| {
            let mut shown = args.clone();
            if let Some(p) = shown.get_mut("new_password") {
                *p = json!("[redacted]");
            }
            shown
        });
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(reset)];
    let model = ScriptedModel::rules()
        .after_tool("reset_password", ScriptStep::text("Kim can sign in again."))
        .otherwise(ScriptStep::tool_call(
            "reset_password",
            json!({"user": "kim", "new_password": "hunter2-SECRET"}),
        ));
    let agent = ChatModelAgent::builder("helpdesk", model)
        .tools(approvals.apply(tools))
        .build()
        .unwrap();
    let state = AppState::builder(InMemoryStore::new())
        .flow("it", FlowAgent::new(agent))
        .auth(Auth::tokens([
            (
                ANA,
                Principal::new("ana").tenant("acme").scopes([Scope::Chat]),
            ),
            (
                BEN,
                Principal::new("ben")
                    .tenant("acme")
                    .scopes([Scope::Approve, Scope::Read]),
            ),
        ]))
        .build()
        .unwrap();
    (state, called)
}

#[tokio::test]
async fn an_approver_reads_the_applications_question_redacted_arguments_requester_and_agent() {
    let (state, called) = password_desk();
    let server = spawn(state).await;
    let base = &server.base;
    let http = reqwest::Client::new();
    let asked = read_sse(
        http.post(format!("{base}/v1/flows/it/threads/kim/turns"))
            .bearer_auth(ANA)
            .json(&json!({"message": "reset kim's password"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(done(&asked)["interrupted"], true);
    assert!(called.lock().unwrap().is_empty(), "nothing ran yet");

    let queue: Value = http
        .get(format!("{base}/v1/flows/it/interrupts"))
        .bearer_auth(BEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entry = &queue["interrupts"][0];
    assert_eq!(
        entry["info"]["question"],
        "Reset the password of kim (reset_password)?"
    );
    assert_eq!(
        entry["info"]["approval"]["arguments"],
        json!({"user": "kim", "new_password": "[redacted]"})
    );
    assert_eq!(entry["requested_by"], "ana");
    assert_eq!(entry["agent"], "helpdesk");
    // The password is nowhere an approver reads: the queue, the thread, its timeline.
    for path in [
        "/v1/flows/it/interrupts",
        "/v1/flows/it/threads/kim/interrupts",
    ] {
        let text = http
            .get(format!("{base}{path}"))
            .bearer_auth(BEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!text.contains("hunter2"), "{path}: {text}");
    }
    let thread: Value = http
        .get(format!("{base}/v1/flows/it/threads/kim"))
        .bearer_auth(BEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(thread["pending"][0]["requested_by"], "ana");
    assert!(
        !thread["pending"].to_string().contains("hunter2"),
        "{thread}"
    );

    // Approved, the tool runs with the password the model wrote.
    let id = entry["id"].as_str().unwrap();
    let resumed = read_sse(
        http.post(format!("{base}/v1/flows/it/threads/kim/resume"))
            .bearer_auth(BEN)
            .json(&json!({"interrupt_id": id, "data": true}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(done(&resumed)["output"], "Kim can sign in again.");
    assert_eq!(*called.lock().unwrap(), ["hunter2-SECRET"]);
}
