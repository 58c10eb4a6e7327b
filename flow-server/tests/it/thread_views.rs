//! The console's reading endpoints against a real server on a loopback port: the caller's
//! threads of a flow (`GET .../threads`) and a thread's timeline (`GET .../timeline`), per
//! tenant, with their scope, and nothing internal in them; and runs started over HTTP record
//! who started and who answered them.

use crate::common;

use agentweave_runtime::InMemoryStore;
use agentweave_server::{AppState, Auth, Principal, Scope};
use common::{client, error_code, spawn};
use serde_json::{json, Value};

const ANA: &str = "ana-token-0123456789abcdef";
const BEN: &str = "ben-token-0123456789abcdef";
const ZED: &str = "zed-token-0123456789abcdef";
const CHATTER: &str = "chatter-token-0123456789ab";

/// The demo desk: ana chats and reads, ben approves and reads (both of acme); zed reads and
/// chats in another tenant; a chatter may only chat.
fn state() -> AppState {
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::tokens([
            (
                ANA,
                Principal::new("ana")
                    .tenant("acme")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
            (
                BEN,
                Principal::new("ben")
                    .tenant("acme")
                    .scopes([Scope::Approve, Scope::Read]),
            ),
            (
                ZED,
                Principal::new("zed")
                    .tenant("other")
                    .scopes([Scope::Chat, Scope::Read]),
            ),
            (
                CHATTER,
                Principal::new("cy").tenant("acme").scopes([Scope::Chat]),
            ),
        ]))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .build()
        .unwrap()
}

async fn get(base: &str, token: &str, path: &str) -> reqwest::Response {
    client()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

async fn get_json(base: &str, token: &str, path: &str) -> Value {
    let response = get(base, token, path).await;
    assert_eq!(response.status(), 200, "GET {path}");
    response.json().await.unwrap()
}

/// Starts a background run of `thread` as `token` and waits for its outcome.
async fn run(base: &str, token: &str, thread: &str, body: Value) -> Value {
    let response = client()
        .post(format!("{base}/v1/flows/desk/threads/{thread}/runs"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202, "{:?}", response.text().await);
    let started: Value = response.json().await.unwrap();
    let id = started["run_id"].as_str().unwrap();
    get_json(
        base,
        token,
        &format!("/v1/flows/desk/threads/{thread}/runs/{id}/wait"),
    )
    .await
}

#[tokio::test]
async fn the_threads_list_shows_the_callers_threads_with_what_they_wait_on() {
    let server = spawn(state()).await;
    let base = &server.base;
    let hello = run(base, ANA, "a1", json!({ "message": "Hi there" })).await;
    assert_eq!(hello["status"], "success", "{hello}");
    let refund = run(
        base,
        ANA,
        "a2",
        json!({ "message": "I want a refund for order 42" }),
    )
    .await;
    assert_eq!(refund["status"], "interrupted", "{refund}");

    let listed = get_json(base, ANA, "/v1/flows/desk/threads").await;
    let threads = listed["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "{listed}");
    let of = |id: &str| threads.iter().find(|t| t["thread"] == id).unwrap().clone();
    assert_eq!(of("a1")["turns"], 1);
    assert_eq!(of("a1")["waiting"], 0);
    assert_eq!(of("a2")["waiting"], 1);
    assert_eq!(of("a2")["running"], false);
    assert!(of("a2")["updated_at_ms"].as_u64().unwrap() > 0);
    let at = |t: &Value| t["updated_at_ms"].as_u64().unwrap();
    assert!(at(&threads[0]) >= at(&threads[1]), "newest first: {listed}");

    // Another tenant sees none of them; a principal who may not read is refused.
    let other = get_json(base, ZED, "/v1/flows/desk/threads").await;
    assert_eq!(other["threads"], json!([]), "{other}");
    let (status, code, _) = error_code(get(base, CHATTER, "/v1/flows/desk/threads").await).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));
    let (status, code, _) = error_code(get(base, ANA, "/v1/flows/nope/threads").await).await;
    assert_eq!((status, code.as_str()), (404, "unknown_flow"));
}

#[tokio::test]
async fn a_timeline_rebuilds_the_turns_and_runs_record_who_asked_and_who_answered() {
    let server = spawn(state()).await;
    let base = &server.base;
    let refund = run(
        base,
        ANA,
        "t1",
        json!({ "message": "I want a refund for order 42" }),
    )
    .await;
    let interrupt = refund["interrupts"][0]["id"].as_str().unwrap().to_owned();

    let timeline = get_json(base, ANA, "/v1/flows/desk/threads/t1/timeline").await;
    let records = timeline["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{timeline}");
    let first = &records[0];
    assert_eq!(first["turn"], 0);
    assert_eq!(first["resumed"], false);
    assert_eq!(first["input"], json!(["I want a refund for order 42"]));
    assert_eq!(
        first["end"],
        json!({ "status": "interrupted", "interrupts": 1 })
    );
    let events = first["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["action"]["transfer_to_agent"] == "refund"),
        "{timeline}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["message"]["tool_calls"][0]["name"] == "issue_refund"),
        "{timeline}"
    );
    assert!(first["usage"]["input_tokens"].is_u64(), "{first}");

    // Ben answers through a run; the thread's record names who asked and who answered.
    let resumed = run(
        base,
        BEN,
        "t1",
        json!({ "resume": { interrupt.clone(): { "approve": true } } }),
    )
    .await;
    assert_eq!(resumed["status"], "success", "{resumed}");
    let thread = get_json(base, BEN, "/v1/flows/desk/threads/t1").await;
    assert_eq!(thread["approvals"][0]["by"], "ben", "{thread}");
    assert_eq!(thread["approvals"][0]["requested_by"], "ana", "{thread}");

    let timeline = get_json(base, ANA, "/v1/flows/desk/threads/t1/timeline").await;
    let records = timeline["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{timeline}");
    assert_eq!(records[1]["turn"], 0);
    assert_eq!(records[1]["resumed"], true);
    assert_eq!(records[1]["input"], json!([]));
    assert_eq!(records[1]["end"]["status"], "completed");
    let text = timeline.to_string();
    // No store key, no checkpoint id, no resume data.
    for inside in ["desk.acme.", "checkpoint", "\"approve\":true"] {
        assert!(!text.contains(inside), "{inside} in {text}");
    }

    // Unknown and other tenants' threads are unknown; a bad id is a clear 400.
    let (status, code, _) =
        error_code(get(base, ANA, "/v1/flows/desk/threads/nope/timeline").await).await;
    assert_eq!((status, code.as_str()), (404, "unknown_thread"));
    let (status, code, _) =
        error_code(get(base, ZED, "/v1/flows/desk/threads/t1/timeline").await).await;
    assert_eq!((status, code.as_str()), (404, "unknown_thread"));
    let (status, code, _) =
        error_code(get(base, ANA, "/v1/flows/desk/threads/a.b/timeline").await).await;
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    let (status, code, _) =
        error_code(get(base, CHATTER, "/v1/flows/desk/threads/t1/timeline").await).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"));
}
