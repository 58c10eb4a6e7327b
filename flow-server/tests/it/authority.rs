//! Principals, scopes and approvals with authority: two principals of one tenant (a requester
//! with `chat`, an approver with `approve`) and one of another tenant, on the demo desk whose
//! refunds wait for a human.

use crate::common;

use agentweave_runtime::InMemoryStore;
use agentweave_server::{AppState, Approvals, Auth, Principal, Scope};
use common::{done, read_sse, spawn};
use serde_json::{json, Value};

const ANA: &str = "ana-requester-token-0123456789";
const BEN: &str = "ben-approver-token-0123456789";
const CARA: &str = "cara-does-both-token-0123456789";
const GUS: &str = "gus-other-tenant-token-0123456789";
const RITA: &str = "rita-reader-token-0123456789";
const DAN: &str = "dan-chat-only-token-0123456789";
const EVE: &str = "eve-approve-only-token-0123456789";

fn auth() -> Auth {
    Auth::tokens([
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
            CARA,
            Principal::new("cara").tenant("acme").scopes([
                Scope::Chat,
                Scope::Approve,
                Scope::Read,
            ]),
        ),
        (
            GUS,
            Principal::new("gus").tenant("globex").scopes([
                Scope::Chat,
                Scope::Approve,
                Scope::Read,
            ]),
        ),
        (
            RITA,
            Principal::new("rita").tenant("acme").scopes([Scope::Read]),
        ),
        (
            DAN,
            Principal::new("dan").tenant("acme").scopes([Scope::Chat]),
        ),
        (
            EVE,
            Principal::new("eve")
                .tenant("acme")
                .scopes([Scope::Approve]),
        ),
    ])
}

fn state(approvals: Approvals) -> AppState {
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(auth())
        .approvals("desk", approvals)
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

async fn get(base: &str, token: &str, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// Starts a refund as `token` on thread `thread`: the turn waits for an approval.
async fn ask_refund(base: &str, token: &str, thread: &str) -> String {
    let response = post(
        base,
        token,
        &format!("/v1/flows/desk/threads/{thread}/turns"),
        json!({"message": "I want a refund for order 42"}),
    )
    .await;
    let events = read_sse(response).await;
    let done = done(&events);
    assert_eq!(done["interrupted"], true, "{done}");
    done["interrupts"][0]["id"].as_str().unwrap().to_owned()
}

fn resume_body(id: &str) -> Value {
    json!({"interrupt_id": id, "data": {"approve": true}})
}

fn said_refunded(thread: &Value) -> bool {
    thread["messages"].as_array().unwrap().iter().any(|m| {
        m["message"]["content"]
            .as_str()
            .unwrap_or("")
            .starts_with("refunded")
    })
}

#[tokio::test]
async fn the_requester_cannot_approve_the_approver_can_once_and_the_thread_shows_who() {
    let server = spawn(state(Approvals::new())).await;
    let base = &server.base;
    let id = ask_refund(base, ANA, "r1").await;

    // The requester has `chat`, not `approve`: 403, and nothing runs.
    let refused = post(
        base,
        ANA,
        "/v1/flows/desk/threads/r1/resume",
        resume_body(&id),
    )
    .await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`approve`"),
        "{body}"
    );
    let thread: Value = get(base, ANA, "/v1/flows/desk/threads/r1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["pending"].as_array().unwrap().len(), 1, "{thread}");
    assert_eq!(thread["approvals"], json!([]));
    assert!(!said_refunded(&thread));

    // The approver sees it in the queue and approves: it runs once.
    let queue: Value = get(base, BEN, "/v1/flows/desk/interrupts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queue["interrupts"][0]["id"], id.as_str(), "{queue}");
    let events = read_sse(
        post(
            base,
            BEN,
            "/v1/flows/desk/threads/r1/resume",
            resume_body(&id),
        )
        .await,
    )
    .await;
    assert_eq!(done(&events)["interrupted"], false);
    assert!(done(&events)["output"]
        .as_str()
        .unwrap()
        .starts_with("Done: 39 EUR"));
    let again = post(
        base,
        BEN,
        "/v1/flows/desk/threads/r1/resume",
        resume_body(&id),
    )
    .await;
    assert_eq!(again.status(), 409);

    // The thread records who asked, who answered, what and when.
    let thread: Value = get(base, ANA, "/v1/flows/desk/threads/r1")
        .await
        .json()
        .await
        .unwrap();
    let approvals = thread["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{thread}");
    let a = &approvals[0];
    assert_eq!(a["by"], "ben");
    assert_eq!(a["requested_by"], "ana");
    assert_eq!(a["interrupt_id"], id.as_str());
    assert_eq!(a["answered"], json!({"approve": true}));
    assert!(
        a["asked"]["question"]
            .as_str()
            .unwrap()
            .contains("39.00 EUR"),
        "{a}"
    );
    assert!(a["at_ms"].as_u64().unwrap() > 0);
    let refunds = thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["message"]["content"]
                .as_str()
                .unwrap_or("")
                .starts_with("refunded")
        })
        .count();
    assert_eq!(refunds, 1, "the refund ran exactly once");
}

#[tokio::test]
async fn another_tenant_sees_nothing_of_it() {
    let server = spawn(state(Approvals::new())).await;
    let base = &server.base;
    let id = ask_refund(base, ANA, "r2").await;
    assert_eq!(
        get(base, GUS, "/v1/flows/desk/threads/r2").await.status(),
        404
    );
    assert_eq!(
        get(base, GUS, "/v1/flows/desk/threads/r2/interrupts")
            .await
            .status(),
        404
    );
    let queue: Value = get(base, GUS, "/v1/flows/desk/interrupts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queue["interrupts"], json!([]));
    let resume = post(
        base,
        GUS,
        "/v1/flows/desk/threads/r2/resume",
        resume_body(&id),
    )
    .await;
    assert_eq!(resume.status(), 404);
    // Still waiting, for acme.
    let thread: Value = get(base, BEN, "/v1/flows/desk/threads/r2")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["pending"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn with_the_distinct_approver_rule_nobody_approves_their_own_request() {
    let server = spawn(state(Approvals::new().approver_not_requester(true))).await;
    let base = &server.base;
    let id = ask_refund(base, CARA, "r3").await;
    let own = post(
        base,
        CARA,
        "/v1/flows/desk/threads/r3/resume",
        resume_body(&id),
    )
    .await;
    assert_eq!(own.status(), 403);
    let body: Value = own.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("someone other"),
        "{body}"
    );
    let events = read_sse(
        post(
            base,
            BEN,
            "/v1/flows/desk/threads/r3/resume",
            resume_body(&id),
        )
        .await,
    )
    .await;
    assert_eq!(done(&events)["interrupted"], false);
    let thread: Value = get(base, CARA, "/v1/flows/desk/threads/r3")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["approvals"][0]["by"], "ben");
    assert_eq!(thread["approvals"][0]["requested_by"], "cara");
}

#[tokio::test]
async fn a_tool_can_need_a_stronger_scope_than_the_flow() {
    let server = spawn(state(Approvals::new().tool_scope("issue_*", Scope::Admin))).await;
    let base = &server.base;
    let id = ask_refund(base, ANA, "r4").await;
    let refused = post(
        base,
        BEN,
        "/v1/flows/desk/threads/r4/resume",
        resume_body(&id),
    )
    .await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`admin`"),
        "{body}"
    );
}

#[tokio::test]
async fn each_endpoint_needs_its_scope() {
    let server = spawn(state(Approvals::new())).await;
    let base = &server.base;
    // Who am I: no scope needed; the console shows Approve buttons to `approve` only.
    let me: Value = get(base, RITA, "/v1/me").await.json().await.unwrap();
    assert_eq!(
        me,
        json!({"id": "rita", "tenant": "acme", "scopes": ["read"]})
    );
    // A reader reads but does not chat; an approver does not chat either.
    assert_eq!(get(base, RITA, "/v1/flows").await.status(), 200);
    for token in [RITA, BEN] {
        let turn = post(
            base,
            token,
            "/v1/flows/desk/threads/x/turns",
            json!({"message": "hi"}),
        )
        .await;
        assert_eq!(turn.status(), 403, "{token}");
    }
    // Whoever may chat or approve sees the flows and their trees (the console draws them);
    // the approvals queue is for readers and approvers; threads are for readers.
    for token in [DAN, EVE] {
        assert_eq!(get(base, token, "/v1/flows").await.status(), 200, "{token}");
        assert_eq!(
            get(base, token, "/v1/flows/desk").await.status(),
            200,
            "{token}"
        );
    }
    assert_eq!(
        get(base, EVE, "/v1/flows/desk/interrupts").await.status(),
        200
    );
    let (status, code, message) =
        common::error_code(get(base, DAN, "/v1/flows/desk/interrupts").await).await;
    assert_eq!((status, code.as_str()), (403, "forbidden"), "{message}");
    assert!(
        message.contains("`read`") && message.contains("`approve`"),
        "{message}"
    );
    assert_eq!(
        get(base, EVE, "/v1/flows/desk/threads/x").await.status(),
        403
    );
    let delete = reqwest::Client::new()
        .delete(format!("{base}/v1/flows/desk/threads/x"))
        .bearer_auth(RITA)
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 403);
    // An unknown token is 401.
    assert_eq!(
        get(base, "no-such-token-0123456789", "/v1/flows")
            .await
            .status(),
        401
    );
}
