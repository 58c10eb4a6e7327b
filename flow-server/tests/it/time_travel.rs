//! Time travel over HTTP on the demo desk: a thread's history (scope `read`), a fork at an
//! interrupt answered differently, a fork inside a turn going on from its step, (scope
//! `chat`), the original untouched, and bad input in the outward error form.

use crate::common;

use agentweave_runtime::InMemoryStore;
use agentweave_server::{AppState, Auth, Principal, Scope};
use common::{done, error_code, read_sse, spawn};
use serde_json::{json, Value};

const CARA: &str = "cara-does-all-token-0123456789";
const RITA: &str = "rita-reader-token-0123456789";

fn state() -> AppState {
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::tokens([
            (
                CARA,
                Principal::new("cara").tenant("acme").scopes([
                    Scope::Chat,
                    Scope::Approve,
                    Scope::Read,
                ]),
            ),
            (
                RITA,
                Principal::new("rita").tenant("acme").scopes([Scope::Read]),
            ),
        ]))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .build()
        .unwrap()
}

async fn post(base: &str, token: &str, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn get(base: &str, token: &str, path: &str) -> Value {
    let response = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "GET {path}");
    response.json().await.unwrap()
}

/// The content of the last message of the thread.
fn last_said(thread: &Value) -> String {
    let messages = thread["messages"].as_array().unwrap();
    messages.last().unwrap()["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_thread_is_listed_forked_and_answered_again_over_http() {
    let server = spawn(state()).await;
    let base = &server.base;
    let asked = read_sse(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/t1/turns",
            json!({"message": "a refund please"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        done(&asked)["interrupted"],
        true,
        "the refund waits for approval"
    );
    let interrupt = done(&asked)["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let approved = read_sse(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/t1/resume",
            json!({"interrupt_id": interrupt, "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    done(&approved);
    let original = get(base, CARA, "/v1/flows/desk/threads/t1").await;

    // The history: a reader may list it.
    let history = get(base, RITA, "/v1/flows/desk/threads/t1/history").await;
    let steps = history["steps"].as_array().unwrap();
    assert_eq!(steps[0]["kind"], "input");
    assert_eq!(steps[0]["parent"], Value::Null);
    let at = steps
        .iter()
        .find(|s| s["kind"] == "interrupt")
        .expect("the approval is a step");
    assert_eq!(at["run_path"], json!(["triage", "refund"]));
    // Each step says what it is in a line, and when.
    assert_eq!(steps[0]["text"], "a refund please");
    assert_eq!(at["text"], "Approve a refund of 39.00 EUR for order 42?");
    let said: Vec<&str> = steps.iter().map(|s| s["text"].as_str().unwrap()).collect();
    assert!(
        said.iter()
            .any(|t| t.starts_with("lookup_order returned: order 42")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|t| t.contains("calls issue_refund(")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|t| t.starts_with("Done: 39 EUR")),
        "{said:?}"
    );
    assert!(steps.iter().all(|s| s["at_ms"].as_u64().unwrap() > 0));

    // A reader may not fork.
    let (status, code, _) = error_code(
        post(
            base,
            RITA,
            "/v1/flows/desk/threads/t1/fork",
            json!({"at_step": 0, "thread": "t2"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));

    // Fork at the interrupt and deny it there.
    let fork = post(
        base,
        CARA,
        "/v1/flows/desk/threads/t1/fork",
        json!({"at_step": at["id"], "thread": "denied"}),
    )
    .await;
    assert_eq!(fork.status(), 201);
    let fork: Value = fork.json().await.unwrap();
    assert_eq!(fork["end"], "interrupt");
    assert_eq!(fork["pending"][0]["id"], interrupt.as_str());
    let denied = read_sse(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/denied/resume",
            json!({"interrupt_id": interrupt, "data": {"approve": false}}),
        )
        .await,
    )
    .await;
    done(&denied);
    let denied = get(base, CARA, "/v1/flows/desk/threads/denied").await;
    assert_eq!(
        last_said(&denied),
        "Sorry: the refund for order 42 was not approved."
    );
    assert_ne!(last_said(&original), last_said(&denied));

    // Fork inside the turn (after its first step) and go on from there: the refund asks
    // again, on the fork.
    let fork: Value = post(
        base,
        CARA,
        "/v1/flows/desk/threads/t1/fork",
        json!({"at_step": 1, "thread": "again"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(fork["end"], "fork_point");
    let again = read_sse(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/again/resume",
            json!({"targets": {}}),
        )
        .await,
    )
    .await;
    assert_eq!(
        done(&again)["interrupted"],
        true,
        "the refund asks for approval again: {again:#?}"
    );

    // The original is untouched.
    assert_eq!(get(base, CARA, "/v1/flows/desk/threads/t1").await, original);

    // Bad input, in the outward form.
    let (status, code, _) = error_code(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/t1/fork",
            json!({"at_step": 0, "thread": "denied"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "conflict"));
    let (status, code, message) = error_code(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/t1/fork",
            json!({"at_step": 999, "thread": "t9"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    assert!(message.contains("no step 999"), "{message}");
    let (status, code, _) = error_code(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/nope/fork",
            json!({"at_step": 0, "thread": "t9"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "unknown_thread"));
    let (status, code, _) = error_code(
        reqwest::Client::new()
            .get(format!("{base}/v1/flows/desk/threads/nope/history"))
            .bearer_auth(RITA)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "unknown_thread"));
    let (status, _, _) = error_code(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/t1/fork",
            json!({"at_step": 0, "thread": "a.b"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_threads_values_are_updated_listed_and_forked_over_http() {
    let server = spawn(state()).await;
    let base = &server.base;
    let asked = read_sse(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/v1/turns",
            json!({"message": "a refund please"}),
        )
        .await,
    )
    .await;
    let interrupt = done(&asked)["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // A thread waiting for an answer keeps its values.
    let (status, code, message) = error_code(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/v1/state",
            json!({"values": {"tier": "gold"}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "conflict"));
    assert!(message.contains("waits for the answer"), "{message}");
    done(
        &read_sse(
            post(
                base,
                CARA,
                "/v1/flows/desk/threads/v1/resume",
                json!({"interrupt_id": interrupt, "data": {"approve": true}}),
            )
            .await,
        )
        .await,
    );
    let before = get(base, RITA, "/v1/flows/desk/threads/v1/state").await;
    assert_eq!(before["values"], json!({}));

    // A reader may read the values but not change them.
    let (status, code, _) = error_code(
        post(
            base,
            RITA,
            "/v1/flows/desk/threads/v1/state",
            json!({"values": {"tier": "gold"}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));

    let updated = post(
        base,
        CARA,
        "/v1/flows/desk/threads/v1/state",
        json!({"values": {"tier": "gold", "vip": true}}),
    )
    .await;
    assert_eq!(updated.status(), 200);
    let updated: Value = updated.json().await.unwrap();
    assert_eq!(updated["values"], json!({"tier": "gold", "vip": true}));
    // A null removes a key.
    let updated: Value = post(
        base,
        CARA,
        "/v1/flows/desk/threads/v1/state",
        json!({"values": {"vip": null}}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(updated["values"], json!({"tier": "gold"}));
    let read = get(base, RITA, "/v1/flows/desk/threads/v1/state").await;
    assert_eq!(read["values"], json!({"tier": "gold"}));

    // Each update is a step of the history; a fork at the first carries its values.
    let history = get(base, RITA, "/v1/flows/desk/threads/v1/history").await;
    let steps = history["steps"].as_array().unwrap();
    let values: Vec<&Value> = steps.iter().filter(|s| s["kind"] == "values").collect();
    assert_eq!(values.len(), 2, "{steps:#?}");
    assert_eq!(steps.last().unwrap()["kind"], "values");
    let fork = post(
        base,
        CARA,
        "/v1/flows/desk/threads/v1/fork",
        json!({"at_step": values[0]["id"], "thread": "v2"}),
    )
    .await;
    assert_eq!(fork.status(), 201);
    let forked = get(base, RITA, "/v1/flows/desk/threads/v2/state").await;
    assert_eq!(forked["values"], json!({"tier": "gold", "vip": true}));

    // Bad input, in the outward form, with nothing written.
    let (status, code, message) = error_code(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/v1/state",
            json!({"values": {"agentflow.usage": 1}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    assert!(message.contains("reserved"), "{message}");
    let (status, code, _) = error_code(
        post(
            base,
            CARA,
            "/v1/flows/desk/threads/nope/state",
            json!({"values": {"tier": "gold"}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "unknown_thread"));
    let after = get(base, RITA, "/v1/flows/desk/threads/v1/history").await;
    assert_eq!(after, history);
}

const OWEN: &str = "owen-owner-token-0123456789";
const BEN: &str = "ben-approver-token-0123456789";

/// The desk with a thread owner who may chat and read (no `approve`) and an approver.
fn owner_and_approver() -> AppState {
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::tokens([
            (
                OWEN,
                Principal::new("owen")
                    .tenant("acme")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
            (
                BEN,
                Principal::new("ben")
                    .tenant("acme")
                    .scopes([Scope::Approve, Scope::Read]),
            ),
        ]))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_fork_inside_a_turn_is_continued_by_its_owner_and_never_queued_for_approvers() {
    let server = spawn(owner_and_approver()).await;
    let base = &server.base;
    let asked = read_sse(
        post(
            base,
            OWEN,
            "/v1/flows/desk/threads/t1/turns",
            json!({"message": "I want a refund for order 42"}),
        )
        .await,
    )
    .await;
    assert_eq!(done(&asked)["interrupted"], true);

    // The approver's queue: the refund, with who asked for it and which agent asks.
    let queue = get(base, BEN, "/v1/flows/desk/interrupts").await;
    let entries = queue["interrupts"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{queue}");
    assert_eq!(entries[0]["thread"], "t1");
    assert_eq!(entries[0]["requested_by"], "owen");
    assert_eq!(entries[0]["agent"], "refund");

    // The owner forks inside the turn: the fork waits at its fork point, for nobody.
    let fork = post(
        base,
        OWEN,
        "/v1/flows/desk/threads/t1/fork",
        json!({"at_step": 1, "thread": "f1"}),
    )
    .await;
    assert_eq!(fork.status(), 201);
    let fork: Value = fork.json().await.unwrap();
    assert_eq!(fork["end"], "fork_point");
    assert_eq!(fork["pending"], json!([]), "{fork}");
    let queue = get(base, BEN, "/v1/flows/desk/interrupts").await;
    assert_eq!(
        queue["interrupts"].as_array().unwrap().len(),
        1,
        "no fork point in the approver's queue: {queue}"
    );
    assert!(!queue.to_string().contains("fork_point"), "{queue}");
    let thread = get(base, OWEN, "/v1/flows/desk/threads/f1").await;
    assert_eq!(thread["pending"], json!([]));
    assert_eq!(thread["fork_point"], json!({"step": 1}));
    let interrupts = get(base, BEN, "/v1/flows/desk/threads/f1/interrupts").await;
    assert_eq!(interrupts["interrupts"], json!([]));
    let threads = get(base, OWEN, "/v1/flows/desk/threads").await;
    let listed = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["thread"] == "f1")
        .expect("the fork is listed");
    assert_eq!(listed["waiting"], 0, "{listed}");
    let timeline = get(base, OWEN, "/v1/flows/desk/threads/f1/timeline").await;
    let last = timeline["records"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["end"], json!({"status": "fork_point", "step": 1}));

    // Without `approve`, the owner may not send an empty resume to a real question...
    let (status, code, _) = error_code(
        post(
            base,
            OWEN,
            "/v1/flows/desk/threads/t1/resume",
            json!({"targets": {}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));

    // ...and continues the fork (no answer: `chat` is enough), through both doors: the refund
    // asks again, on the fork, and that question is the approver's.
    let again = read_sse(
        post(
            base,
            OWEN,
            "/v1/flows/desk/threads/f1/resume",
            json!({"targets": {}}),
        )
        .await,
    )
    .await;
    assert_eq!(done(&again)["interrupted"], true, "{again:#?}");
    let queue = get(base, BEN, "/v1/flows/desk/interrupts").await;
    let f1: Vec<&Value> = queue["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["thread"] == "f1")
        .collect();
    assert_eq!(f1.len(), 1, "{queue}");
    assert_eq!(f1[0]["requested_by"], "owen");
    let fork: Value = post(
        base,
        OWEN,
        "/v1/flows/desk/threads/t1/fork",
        json!({"at_step": 1, "thread": "f2"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(fork["end"], "fork_point");
    let run = post(
        base,
        OWEN,
        "/v1/flows/desk/threads/f2/runs",
        json!({"resume": {}}),
    )
    .await;
    assert_eq!(run.status(), 202);
    let run: Value = run.json().await.unwrap();
    let waited = get(
        base,
        OWEN,
        &format!(
            "/v1/flows/desk/threads/f2/runs/{}/wait",
            run["run_id"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(waited["status"], "interrupted", "{waited}");
}
