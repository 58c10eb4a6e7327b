//! HTTP-level tests of every endpoint, against a real server on a loopback port.

use crate::common;

use std::sync::Arc;

use common::*;
use std::ops::Range;

use agentweave_runtime::store::{StoreError, ThreadHead, ThreadRecord};
use agentweave_runtime::{
    async_trait, CheckpointStore, FlowAgent, FnAgent, InMemoryStore, ThreadError, ThreadStore,
};
use agentweave_server::{AppState, Auth, Limits};
use serde_json::{json, Value};

#[tokio::test]
async fn health_and_readiness_answer_without_a_token() {
    let server = spawn(desk_state()).await;
    for (path, status) in [("/v1/health", "ok"), ("/v1/ready", "ready")] {
        let r = client()
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["status"], status);
    }
}

#[tokio::test]
async fn the_api_refuses_a_missing_or_wrong_token() {
    let server = spawn(desk_state()).await;
    let url = format!("{}/v1/flows", server.base);
    let missing = client().get(&url).send().await.unwrap();
    assert_eq!(error_code(missing).await.1, "unauthorized");
    let wrong = client()
        .get(&url)
        .bearer_auth("not-the-token-at-all")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let basic = client()
        .get(&url)
        .header("authorization", format!("Basic {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);
    let turn = client()
        .post(format!("{}/v1/flows/desk/threads/t1/turns", server.base))
        .json(&json!({"message": "refund"}))
        .send()
        .await
        .unwrap();
    assert_eq!(turn.status(), 401, "a turn needs the token too");
    let right = get(&server.base, "/v1/flows").await;
    assert_eq!(right.status(), 200);
}

#[tokio::test]
async fn weak_tokens_and_missing_auth_do_not_build() {
    let weak = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer("short"))
        .build();
    assert!(matches!(
        weak,
        Err(agentweave_server::BuildError::WeakToken)
    ));
    let none = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .build();
    assert!(matches!(none, Err(agentweave_server::BuildError::NoAuth)));
    let bad_name = AppState::builder(InMemoryStore::new())
        .flow("my desk", agentweave_server::demo::desk())
        .dev_mode()
        .build();
    assert!(matches!(
        bad_name,
        Err(agentweave_server::BuildError::InvalidFlowName(_))
    ));
}

#[tokio::test]
async fn flows_are_listed_with_their_tree_and_mermaid() {
    let server = spawn(desk_state()).await;
    let list: Value = get(&server.base, "/v1/flows").await.json().await.unwrap();
    assert_eq!(list["flows"][0]["name"], "desk");
    assert_eq!(list["flows"][0]["root"], "triage");

    let flow: Value = get(&server.base, "/v1/flows/desk")
        .await
        .json()
        .await
        .unwrap();
    let tree = &flow["tree"];
    assert_eq!(tree["name"], "triage");
    let children: Vec<&str> = tree["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(children, ["refund", "complaint"]);
    assert_eq!(tree["children"][0]["transfers"], json!(["triage"]));
    assert_eq!(
        flow["mermaid"],
        "graph TD\n    n0[\"triage\"]\n    n1[\"refund\"]\n    n2[\"complaint\"]\n    n0 <--> n1\n    n0 <--> n2\n"
    );

    let mermaid = get(&server.base, "/v1/flows/desk/mermaid").await;
    assert_eq!(mermaid.status(), 200);
    assert!(mermaid.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/vnd.mermaid"));
    assert_eq!(
        mermaid.text().await.unwrap(),
        flow["mermaid"].as_str().unwrap()
    );

    let svg = get(&server.base, "/v1/flows/desk/svg").await;
    assert_eq!(svg.status(), 200);
    assert!(svg.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("image/svg+xml"));
    let svg = svg.text().await.unwrap();
    assert!(svg.starts_with("<svg "), "{svg}");
    for agent in ["triage", "refund", "complaint"] {
        assert!(
            svg.contains(&format!(">{agent}</text>")),
            "{agent} is drawn"
        );
    }

    let (status, code, message) = error_code(get(&server.base, "/v1/flows/nope").await).await;
    assert_eq!((status, code.as_str()), (404, "unknown_flow"));
    assert!(message.contains("'nope'"));
    let (status, code, _) = error_code(get(&server.base, "/v1/no/such/thing").await).await;
    assert_eq!((status, code.as_str()), (404, "no_route"));
}

#[tokio::test]
async fn a_turn_streams_sse_frames_chunks_and_the_final_answer() {
    let server = spawn(desk_state()).await;
    // The raw framing first: `event:` and `data:` lines, one blank line after each event.
    let response = post(
        &server.base,
        "/v1/flows/desk/threads/raw/turns",
        json!({"message": "Hi there"}),
    )
    .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    assert!(text.starts_with("event: turn\ndata: {"), "{text}");
    let frames: Vec<&str> = text.split("\n\n").filter(|f| !f.is_empty()).collect();
    for frame in &frames {
        let lines: Vec<&str> = frame.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "one event line and one data line: {frame:?}"
        );
        assert!(lines[0].starts_with("event: ") && lines[1].starts_with("data: "));
    }
    assert!(frames.last().unwrap().starts_with("event: done\n"));

    // Then the events' meaning.
    let events = turn(&server.base, "desk", "t1", "Hi there").await;
    assert_eq!(events[0].name, "turn");
    assert_eq!(events[0].data["thread"], "t1");
    assert_eq!(events[0].data["turn"], 0);
    assert_eq!(events[0].data["started_at"], json!(["triage"]));
    let chunks: Vec<&Sse> = events.iter().filter(|e| e.name == "chunk").collect();
    assert!(
        chunks.len() > 3,
        "the answer streams word by word: {events:#?}"
    );
    assert!(chunks
        .iter()
        .all(|c| c.data["run_path"] == json!(["triage"])));
    let streamed: String = chunks
        .iter()
        .map(|c| c.data["content"].as_str().unwrap())
        .collect();
    let event = events.iter().find(|e| e.name == "event").unwrap();
    assert_eq!(event.data["streamed"], true);
    assert_eq!(event.data["agent_name"], "triage");
    assert_eq!(event.data["message"]["content"], streamed);
    assert_eq!(streamed, "Hello! I can help with refunds and complaints.");
    let done = done(&events);
    assert_eq!(done["output"], streamed);
    assert_eq!(done["interrupted"], false);
}

#[tokio::test]
async fn a_transfer_shows_run_paths_and_an_exit_ends_the_turn() {
    let server = spawn(desk_state()).await;
    let events = turn(&server.base, "desk", "c1", "My kettle arrived broken").await;
    let paths: Vec<&Value> = events
        .iter()
        .filter(|e| e.name == "event")
        .map(|e| &e.data["run_path"])
        .collect();
    assert!(paths.contains(&&json!(["triage"])));
    assert!(paths.contains(&&json!(["triage", "complaint"])));
    let transfer = events
        .iter()
        .find(|e| e.data["action"]["transfer_to_agent"] == "complaint")
        .expect("a transfer event");
    assert_eq!(transfer.data["run_path"], json!(["triage"]));
    let exit = events
        .iter()
        .find(|e| e.data["action"] == "exit")
        .expect("an exit event");
    assert_eq!(exit.data["run_path"], json!(["triage", "complaint"]));
    assert_eq!(
        done(&events)["output"],
        "Your complaint is logged as #1001; we will call you tomorrow."
    );
}

#[tokio::test]
async fn an_approval_resumes_exactly_once() {
    let server = spawn(desk_state()).await;
    let events = turn(&server.base, "desk", "r1", "I want a refund for order 42").await;
    let done1 = done(&events).clone();
    assert_eq!(done1["interrupted"], true);
    assert_eq!(done1["interrupts"][0]["id"], "triage/refund");
    assert_eq!(
        done1["interrupts"][0]["info"]["question"],
        "Approve a refund of 39.00 EUR for order 42?"
    );
    let interrupt = events
        .iter()
        .find(|e| e.data["action"]["interrupted"].is_object())
        .expect("the interrupt event");
    assert_eq!(interrupt.data["run_path"], json!(["triage", "refund"]));

    // It is pending, and listed.
    let pending: Value = get(&server.base, "/v1/flows/desk/threads/r1/interrupts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(pending["interrupts"][0]["id"], "triage/refund");
    assert_eq!(pending["interrupts"][0]["thread"], "r1");
    let thread: Value = get(&server.base, "/v1/flows/desk/threads/r1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["pending"][0]["id"], "triage/refund");
    let queue: Value = get(&server.base, "/v1/flows/desk/interrupts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        queue["interrupts"], pending["interrupts"],
        "the flow's approval queue lists it"
    );

    // No new turn while it waits.
    let (status, code, _) = error_code(
        post(
            &server.base,
            "/v1/flows/desk/threads/r1/turns",
            json!({"message": "hello?"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "conflict"));

    // An unknown interrupt id is refused and consumes nothing.
    let (status, _, message) = error_code(
        post(
            &server.base,
            "/v1/flows/desk/threads/r1/resume",
            json!({"interrupt_id": "triage/nobody", "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400);
    assert!(message.contains("triage/refund"), "{message}");

    // Approve: the refund runs and the turn finishes.
    let resumed = read_sse(
        post(
            &server.base,
            "/v1/flows/desk/threads/r1/resume",
            json!({"interrupt_id": "triage/refund", "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    assert_eq!(resumed[0].data["resumed"], true);
    let refunded = resumed
        .iter()
        .filter(|e| e.data["message"]["role"] == "tool")
        .map(|e| e.data["message"]["content"].as_str().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(refunded, ["refunded 39.00 EUR for order 42"]);
    let finished = done(&resumed);
    assert_eq!(finished["interrupted"], false);
    assert_eq!(
        finished["output"],
        "Done: 39 EUR for order 42 are on their way back to you."
    );

    // Exactly once: a second approval is refused.
    let again = post(
        &server.base,
        "/v1/flows/desk/threads/r1/resume",
        json!({"interrupt_id": "triage/refund", "data": {"approve": true}}),
    )
    .await;
    assert_eq!(error_code(again).await.0, 409);

    let thread: Value = get(&server.base, "/v1/flows/desk/threads/r1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["pending"], json!([]));
    let messages = thread["messages"].as_array().unwrap();
    assert_eq!(
        messages[0]["message"],
        json!({"role": "user", "content": "I want a refund for order 42"})
    );
    let last = messages.last().unwrap();
    assert_eq!(last["run_path"], json!(["triage", "refund"]));
    assert_eq!(
        last["message"]["content"],
        "Done: 39 EUR for order 42 are on their way back to you."
    );
    let queue: Value = get(&server.base, "/v1/flows/desk/interrupts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queue["interrupts"], json!([]));
    // The thread takes turns again.
    let next = turn(&server.base, "desk", "r1", "thanks").await;
    assert_eq!(next[0].data["turn"], 1);
}

#[tokio::test]
async fn a_denial_resumes_with_the_denial() {
    let server = spawn(desk_state()).await;
    turn(&server.base, "desk", "d1", "refund please").await;
    let resumed = read_sse(
        post(
            &server.base,
            "/v1/flows/desk/threads/d1/resume",
            json!({"targets": {"triage/refund": {"approve": false}}}),
        )
        .await,
    )
    .await;
    assert_eq!(
        done(&resumed)["output"],
        "Sorry: the refund for order 42 was not approved."
    );
}

#[tokio::test]
async fn threads_are_read_and_deleted() {
    let server = spawn(desk_state()).await;
    let (status, code, _) = error_code(get(&server.base, "/v1/flows/desk/threads/x1").await).await;
    assert_eq!((status, code.as_str()), (404, "unknown_thread"));
    turn(&server.base, "desk", "x1", "Hi").await;
    let thread: Value = get(&server.base, "/v1/flows/desk/threads/x1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["turns"], 1);
    assert_eq!(thread["messages"][0]["message"]["content"], "Hi");
    assert_eq!(
        thread["messages"][1]["message"]["content"],
        "Hello! I can help with refunds and complaints."
    );
    // The second turn sees the first: the thread's messages are its input.
    turn(&server.base, "desk", "x1", "Hi again").await;
    let thread: Value = get(&server.base, "/v1/flows/desk/threads/x1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["messages"].as_array().unwrap().len(), 4);

    let url = format!("{}/v1/flows/desk/threads/x1", server.base);
    let deleted = client()
        .delete(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(
        get(&server.base, "/v1/flows/desk/threads/x1")
            .await
            .status(),
        404
    );
    let again = client()
        .delete(&url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);

    let bad = get(&server.base, "/v1/flows/desk/threads/a.b").await;
    assert_eq!(
        error_code(bad).await.0,
        400,
        "a thread id with a dot is refused"
    );
}

#[tokio::test]
async fn bodies_and_messages_over_the_limits_are_refused() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .limits(Limits {
            max_body_bytes: 2048,
            max_message_bytes: 512,
            ..Limits::default()
        })
        .build()
        .unwrap();
    let server = spawn(state).await;
    let path = "/v1/flows/desk/threads/l1/turns";
    let huge = post(&server.base, path, json!({"message": "x".repeat(5000)})).await;
    let (status, code, message) = error_code(huge).await;
    assert_eq!((status, code.as_str()), (413, "payload_too_large"));
    assert!(message.contains("2048"), "{message}");
    let long = post(&server.base, path, json!({"message": "x".repeat(1000)})).await;
    let (status, _, message) = error_code(long).await;
    assert_eq!(status, 400);
    assert!(message.contains("512"), "{message}");
    let empty = post(&server.base, path, json!({"message": "  "})).await;
    assert_eq!(error_code(empty).await.0, 400);
    let unknown = post(
        &server.base,
        path,
        json!({"message": "hi", "agent": "refund"}),
    )
    .await;
    assert_eq!(
        error_code(unknown).await.0,
        400,
        "unknown fields are refused"
    );
    let not_json = client()
        .post(format!("{}{path}", server.base))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(not_json).await.0, 400);
    // Nothing of this reached the thread.
    assert_eq!(
        get(&server.base, "/v1/flows/desk/threads/l1")
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn an_event_over_the_size_limit_becomes_an_error_event() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .limits(Limits {
            // The whole answer's `event` (146 bytes) is over; chunks, `turn` and `done` are not.
            max_event_bytes: 130,
            ..Limits::default()
        })
        .build()
        .unwrap();
    let server = spawn(state).await;
    let events = turn(&server.base, "desk", "e1", "Hi").await;
    let error = events
        .iter()
        .find(|e| e.name == "error")
        .expect("an error event for the oversized event");
    let message = error.data["message"].as_str().unwrap();
    assert!(
        message.contains("event size limit of 130 bytes"),
        "{message}"
    );
    assert!(
        events.iter().all(|e| e.name != "event"),
        "the oversized event was not sent"
    );
    assert!(events.iter().filter(|e| e.name == "chunk").count() > 3);
    assert_eq!(
        done(&events)["output"],
        "Hello! I can help with refunds and complaints."
    );
    // The thread keeps the whole answer.
    let thread: Value = get(&server.base, "/v1/flows/desk/threads/e1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        thread["messages"][1]["message"]["content"],
        "Hello! I can help with refunds and complaints."
    );
}

/// A store whose every call fails with an I/O error that names a server path.
#[derive(Clone)]
struct BrokenStore;

#[async_trait]
impl ThreadStore for BrokenStore {
    async fn head(&self, id: &str) -> Result<Option<ThreadHead>, ThreadError> {
        Err(broken(id).into())
    }
    async fn read(&self, id: &str, _: Range<u64>) -> Result<Vec<ThreadRecord>, ThreadError> {
        Err(broken(id).into())
    }
    async fn append(&self, id: &str, _: u64, _: ThreadRecord) -> Result<u64, ThreadError> {
        Err(broken(id).into())
    }
    async fn list(&self) -> Result<Vec<String>, ThreadError> {
        Err(broken("list").into())
    }
    async fn delete(&self, id: &str) -> Result<bool, ThreadError> {
        Err(broken(id).into())
    }
    async fn lease_thread(
        &self,
        id: &str,
        _: &str,
        _: std::time::Duration,
    ) -> Result<(), ThreadError> {
        Err(broken(id).into())
    }
    async fn renew_thread_lease(
        &self,
        id: &str,
        _: &str,
        _: std::time::Duration,
    ) -> Result<(), ThreadError> {
        Err(broken(id).into())
    }
    async fn release_thread_lease(&self, id: &str, _: &str) -> Result<(), ThreadError> {
        Err(broken(id).into())
    }
}

#[async_trait]
impl CheckpointStore for BrokenStore {
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Err(broken(id))
    }
    async fn save(
        &self,
        id: &str,
        _: Vec<u8>,
        _: agentweave_runtime::SaveMode,
    ) -> Result<u64, StoreError> {
        Err(broken(id))
    }
    async fn claim(
        &self,
        id: &str,
        _: std::time::Duration,
    ) -> Result<agentweave_runtime::Claim, StoreError> {
        Err(broken(id))
    }
    async fn renew(
        &self,
        claim: &agentweave_runtime::Claim,
        _: std::time::Duration,
    ) -> Result<(), StoreError> {
        Err(broken(&claim.id))
    }
    async fn release(&self, claim: &agentweave_runtime::Claim) -> Result<(), StoreError> {
        Err(broken(&claim.id))
    }
    async fn complete(
        &self,
        claim: &agentweave_runtime::Claim,
        _: agentweave_runtime::Completion,
    ) -> Result<u64, StoreError> {
        Err(broken(&claim.id))
    }
    async fn history(
        &self,
        id: &str,
    ) -> Result<Vec<agentweave_runtime::CheckpointMeta>, StoreError> {
        Err(broken(id))
    }
    async fn pending(
        &self,
        _: usize,
    ) -> Result<Vec<agentweave_runtime::PendingCheckpoint>, StoreError> {
        Err(broken("pending"))
    }
    async fn purge_finished(&self, _: std::time::Duration) -> Result<usize, StoreError> {
        Err(broken("purge"))
    }
    async fn delete(&self, id: &str) -> Result<(), StoreError> {
        Err(broken(id))
    }
}

#[async_trait]
impl agentweave_runtime::store::JournalStore for BrokenStore {
    async fn append_steps(
        &self,
        run: &str,
        _: u64,
        _: Vec<agentweave_runtime::store::StoredStep>,
    ) -> Result<u64, agentweave_runtime::store::JournalError> {
        Err(broken(run).into())
    }
    async fn read_steps(
        &self,
        run: &str,
        _: u64,
    ) -> Result<Vec<agentweave_runtime::store::StoredStep>, agentweave_runtime::store::JournalError>
    {
        Err(broken(run).into())
    }
    async fn journal_len(&self, run: &str) -> Result<u64, agentweave_runtime::store::JournalError> {
        Err(broken(run).into())
    }
    async fn truncate_steps(
        &self,
        run: &str,
        _: u64,
    ) -> Result<(), agentweave_runtime::store::JournalError> {
        Err(broken(run).into())
    }
    async fn delete_journal(
        &self,
        run: &str,
    ) -> Result<bool, agentweave_runtime::store::JournalError> {
        Err(broken(run).into())
    }
    async fn idle_journals(
        &self,
        _: u64,
    ) -> Result<
        Vec<agentweave_runtime::store::JournalSummary>,
        agentweave_runtime::store::JournalError,
    > {
        Err(broken("journals").into())
    }
}

fn broken(id: &str) -> StoreError {
    StoreError::Io {
        operation: "read",
        id: id.to_owned(),
        source: Arc::new(std::io::Error::other(
            "/srv/secret/checkpoints/x: permission denied",
        )),
    }
}

#[tokio::test]
async fn store_failures_reveal_no_internal_paths() {
    let state = AppState::builder(BrokenStore)
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap();
    let server = spawn(state).await;
    let ready = client()
        .get(format!("{}/v1/ready", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    let text = ready.text().await.unwrap();
    assert!(
        !text.contains("/srv") && !text.contains("permission"),
        "{text}"
    );
    let turn = post(
        &server.base,
        "/v1/flows/desk/threads/s1/turns",
        json!({"message": "hi"}),
    )
    .await;
    let (status, code, message) = error_code(turn).await;
    assert_eq!((status, code.as_str()), (503, "store_unavailable"));
    assert!(!message.contains("/srv"), "{message}");
}

#[tokio::test]
async fn cors_is_closed_unless_origins_are_listed() {
    let preflight = |base: String| async move {
        client()
            .request(reqwest::Method::OPTIONS, format!("{base}/v1/flows"))
            .header("origin", "https://evil.example")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
            .await
            .unwrap()
    };
    let closed = spawn(desk_state()).await;
    let r = preflight(closed.base.clone()).await;
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let r = client()
        .get(format!("{}/v1/flows", closed.base))
        .bearer_auth(TOKEN)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());

    let open = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .cors_origins(["https://app.example".parse().unwrap()])
        .build()
        .unwrap();
    let open = spawn(open).await;
    let r = client()
        .request(reqwest::Method::OPTIONS, format!("{}/v1/flows", open.base))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let r = preflight(open.base.clone()).await;
    assert!(
        r.headers().get("access-control-allow-origin").is_none(),
        "an unlisted origin gets no CORS grant"
    );
}

#[tokio::test]
async fn one_tenant_cannot_read_or_resume_another_tenants_thread() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer_any([
            "alice-token-0123456789".to_owned(),
            "bob-token-0123456789ab".to_owned(),
        ]))
        .tenant(|parts| {
            let token = agentweave_server::bearer_token(parts)?;
            Some(token.split('-').next()?.to_owned())
        })
        .build()
        .unwrap();
    let server = spawn(state).await;
    let as_user = |token: &'static str, method: reqwest::Method, path: &str| {
        client()
            .request(method, format!("{}{path}", server.base))
            .bearer_auth(token)
    };
    let alice = "alice-token-0123456789";
    let bob = "bob-token-0123456789ab";
    let r = as_user(
        alice,
        reqwest::Method::POST,
        "/v1/flows/desk/threads/shared/turns",
    )
    .json(&json!({"message": "I want a refund"}))
    .send()
    .await
    .unwrap();
    assert_eq!(done(&read_sse(r).await)["interrupted"], true);

    // Bob names the same thread id: he sees nothing of Alice's.
    let r = as_user(bob, reqwest::Method::GET, "/v1/flows/desk/threads/shared")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(r).await.0, 404);
    let r = as_user(
        bob,
        reqwest::Method::POST,
        "/v1/flows/desk/threads/shared/resume",
    )
    .json(&json!({"interrupt_id": "triage/refund", "data": {"approve": true}}))
    .send()
    .await
    .unwrap();
    assert_eq!(
        error_code(r).await.0,
        404,
        "Bob cannot approve Alice's refund"
    );
    let r = as_user(
        bob,
        reqwest::Method::DELETE,
        "/v1/flows/desk/threads/shared",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 404);
    // Bob's own thread of that id is his.
    let r = as_user(
        bob,
        reqwest::Method::POST,
        "/v1/flows/desk/threads/shared/turns",
    )
    .json(&json!({"message": "Hi"}))
    .send()
    .await
    .unwrap();
    assert_eq!(done(&read_sse(r).await)["interrupted"], false);

    // Alice's thread is untouched, still waiting for her approval.
    let r = as_user(alice, reqwest::Method::GET, "/v1/flows/desk/threads/shared")
        .send()
        .await
        .unwrap();
    let thread: Value = r.json().await.unwrap();
    assert_eq!(thread["pending"][0]["id"], "triage/refund");
    assert_eq!(
        thread["messages"][0]["message"]["content"],
        "I want a refund"
    );
    // Bob's approval queue is empty; Alice's holds her refund.
    let queue = |token: &'static str| {
        as_user(token, reqwest::Method::GET, "/v1/flows/desk/interrupts").send()
    };
    let bobs: Value = queue(bob).await.unwrap().json().await.unwrap();
    assert_eq!(bobs["interrupts"], json!([]));
    let alices: Value = queue(alice).await.unwrap().json().await.unwrap();
    assert_eq!(alices["interrupts"][0]["thread"], "shared");
}

#[tokio::test]
async fn a_request_the_tenant_function_refuses_is_forbidden() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .tenant(|parts| {
            parts
                .headers
                .get("x-tenant")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .build()
        .unwrap();
    let server = spawn(state).await;
    let r = get(&server.base, "/v1/flows/desk/threads/t").await;
    assert_eq!(error_code(r).await.0, 403);
    // A name the function answers that no tenant can have (it came from the caller's header):
    // the caller's mistake, 403, not the server's 500.
    for bad in ["a.b", "", "x".repeat(33).as_str(), "slash/es"] {
        let r = client()
            .get(format!("{}/v1/flows/desk/threads/t", server.base))
            .bearer_auth(TOKEN)
            .header("x-tenant", bad)
            .send()
            .await
            .unwrap();
        let (status, code, _) = error_code(r).await;
        assert_eq!(
            (status, code.as_str()),
            (403, "forbidden"),
            "tenant {bad:?}"
        );
    }
}

#[tokio::test]
async fn a_refused_request_with_an_unread_body_is_told_connection_close() {
    use tokio::io::AsyncWriteExt;
    let server = spawn(hostile_state(Limits::default())).await;
    let body = r#"{"message": "never read"}"#;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "POST /v1/flows/desk/threads/t/turns HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer wrong-token-0123456789\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let response = read_until_closed(&mut stream)
        .await
        .expect("the server closes");
    let (status, head, _) = parse_raw(&response);
    assert_eq!(status, 401);
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );
    // A refused GET (no body) keeps its connection: the next request on it is answered.
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let get =
        "GET /v1/flows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-token-0123456789\r\n\r\n";
    stream.write_all(get.as_bytes()).await.unwrap();
    let first = read_response(&mut stream).await.unwrap();
    assert_eq!(parse_raw(&first).0, 401);
    assert!(!String::from_utf8_lossy(&first)
        .to_ascii_lowercase()
        .contains("connection: close"));
    let health = "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n";
    stream.write_all(health.as_bytes()).await.unwrap();
    assert_eq!(parse_raw(&read_response(&mut stream).await.unwrap()).0, 200);
}

#[tokio::test]
async fn resume_checks_the_scope_before_whether_the_thread_exists() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::tokens([
            (
                "chatter-token-0123456789",
                agentweave_server::Principal::new("chet").scopes([agentweave_server::Scope::Chat]),
            ),
            (
                "approver-token-012345678",
                agentweave_server::Principal::new("abe")
                    .scopes([agentweave_server::Scope::Approve]),
            ),
        ]))
        .build()
        .unwrap();
    let server = spawn(state).await;
    let resume = |token: &'static str, thread: &str| {
        client()
            .post(format!(
                "{}/v1/flows/desk/threads/{thread}/resume",
                server.base
            ))
            .bearer_auth(token)
            .json(&json!({"interrupt_id": "triage/refund", "data": {"approve": true}}))
            .send()
    };
    // The chatter starts a thread that waits for an approval.
    let r = client()
        .post(format!(
            "{}/v1/flows/desk/threads/exists/turns",
            server.base
        ))
        .bearer_auth("chatter-token-0123456789")
        .json(&json!({"message": "I want a refund"}))
        .send()
        .await
        .unwrap();
    assert_eq!(done(&read_sse(r).await)["interrupted"], true);
    // Without a scope that answers anything: the same 403 for a thread that exists and one
    // that does not.
    let existing = error_code(resume("chatter-token-0123456789", "exists").await.unwrap()).await;
    let missing = error_code(resume("chatter-token-0123456789", "missing").await.unwrap()).await;
    assert_eq!((existing.0, existing.1.as_str()), (403, "forbidden"));
    assert_eq!(
        (existing.0, &existing.1, &existing.2),
        (missing.0, &missing.1, &missing.2)
    );
    // An approver still tells them apart (it may answer them).
    assert_eq!(
        error_code(resume("approver-token-012345678", "missing").await.unwrap())
            .await
            .0,
        404
    );
    // The other native doors that answer: `/runs` with `resume`, and sending a run again.
    let run_resume = |token: &'static str, thread: &str| {
        client()
            .post(format!(
                "{}/v1/flows/desk/threads/{thread}/runs",
                server.base
            ))
            .bearer_auth(token)
            .json(&json!({"resume": {"triage/refund": {"approve": true}}}))
            .send()
    };
    let existing = error_code(
        run_resume("chatter-token-0123456789", "exists")
            .await
            .unwrap(),
    )
    .await;
    let missing = error_code(
        run_resume("chatter-token-0123456789", "missing")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((existing.0, existing.1.as_str()), (403, "forbidden"));
    assert_eq!(
        (existing.0, &existing.1, &existing.2),
        (missing.0, &missing.1, &missing.2)
    );
    let again = |thread: &str| {
        client()
            .post(format!(
                "{}/v1/flows/desk/threads/{thread}/runs/some-run/resume",
                server.base
            ))
            .bearer_auth("chatter-token-0123456789")
            .send()
    };
    let existing = error_code(again("exists").await.unwrap()).await;
    let missing = error_code(again("missing").await.unwrap()).await;
    assert_eq!((existing.0, existing.1.as_str()), (403, "forbidden"));
    assert_eq!(
        (existing.0, &existing.1, &existing.2),
        (missing.0, &missing.1, &missing.2)
    );
}

#[tokio::test]
async fn dev_mode_serves_loopback_only() {
    let dev = || {
        AppState::builder(InMemoryStore::new())
            .flow("desk", agentweave_server::demo::desk())
            .dev_mode()
            .build()
            .unwrap()
    };
    let everywhere = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let refused = agentweave_server::serve(everywhere, dev()).await;
    assert!(
        matches!(
            refused,
            Err(agentweave_server::ServeError::DevModeNotLoopback { .. })
        ),
        "{refused:?}"
    );
    let server = spawn(dev()).await;
    let r = client()
        .get(format!("{}/v1/flows", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "dev mode needs no token on loopback");
}

#[tokio::test]
async fn the_console_is_served_with_its_assets() {
    let server = spawn(desk_state()).await;
    let page = client().get(&server.base).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("default-src 'self'"));
    let html = page.text().await.unwrap();
    assert!(html.contains("<script src=\"console.js\"></script>"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no outside resources"
    );
    for (path, kind) in [
        ("/console.js", "text/javascript"),
        ("/console.css", "text/css"),
    ] {
        let r = client()
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with(kind));
    }
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_turn() {
    let (dropped_tx, dropped_rx) = tokio::sync::oneshot::channel::<()>();
    let dropped_tx = Arc::new(std::sync::Mutex::new(Some(dropped_tx)));
    /// Sends on the channel when the run drops it.
    struct Guard(Arc<std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>>);
    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(tx) = self.0.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    }
    let slow = FnAgent::new("slow", move |cx, _| {
        let guard = Guard(Arc::clone(&dropped_tx));
        async move {
            let _guard = guard;
            cx.say("started");
            // Waits forever: only cancellation ends this run.
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    let state = AppState::builder(InMemoryStore::new())
        .flow("slow", FlowAgent::new(slow))
        .auth(Auth::bearer(TOKEN))
        .limits(Limits {
            sse_keep_alive: std::time::Duration::from_millis(20),
            ..Limits::default()
        })
        .build()
        .unwrap();
    let server = spawn(state).await;
    let response = post(
        &server.base,
        "/v1/flows/slow/threads/c1/turns",
        json!({"message": "go"}),
    )
    .await;
    let mut events = eventsource_stream::Eventsource::eventsource(response.bytes_stream());
    use futures::StreamExt;
    loop {
        let e = events.next().await.unwrap().unwrap();
        if e.event == "event" {
            assert!(e.data.contains("started"));
            break;
        }
    }
    drop(events);
    // The server notices the closed connection and drops the run, which drops the agent's
    // body and its guard. (The timeout only turns a hang into a failure.)
    tokio::time::timeout(std::time::Duration::from_secs(60), dropped_rx)
        .await
        .expect("the run was cancelled")
        .unwrap();
    // The cancelled turn left no trace in the thread.
    assert_eq!(
        get(&server.base, "/v1/flows/slow/threads/c1")
            .await
            .status(),
        404
    );
}

// ---- A hostile client: each attack gets a clear status and a JSON error, and the server goes
// on serving everyone else.

/// A state serving the desk and a flow whose agent never ends, with `limits`.
fn hostile_state(limits: Limits) -> AppState {
    let stuck = FnAgent::new("stuck", |cx, _| async move {
        cx.say("thinking");
        std::future::pending::<()>().await;
        Ok(())
    });
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .flow("stuck", FlowAgent::new(stuck))
        .auth(Auth::bearer(TOKEN))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .limits(limits)
        .build()
        .unwrap()
}

/// Reads what the server sends until it closes the connection; `None` if it does not close it
/// within a minute (a hang, which the tests below treat as the failure).
async fn read_until_closed(stream: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(60), stream.read(&mut buf)).await
        {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(out),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
}

/// Reads one HTTP/1.1 response (its head and a `content-length` body); `None` if none comes
/// within a minute.
async fn read_response(stream: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&out[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if out.len() >= end + 4 + length {
                return Some(out);
            }
        }
        match tokio::time::timeout(std::time::Duration::from_secs(60), stream.read(&mut buf)).await
        {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(out),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
}

/// The status and the JSON body of a raw HTTP/1.1 response.
fn parse_raw(response: &[u8]) -> (u16, String, Value) {
    let text = String::from_utf8_lossy(response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let body = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, head.to_owned(), body)
}

#[tokio::test]
async fn slowloris_headers_and_idle_connections_are_closed_by_the_header_timeout() {
    use tokio::io::AsyncWriteExt;
    let server = spawn(hostile_state(Limits {
        header_read_timeout: std::time::Duration::from_millis(300),
        ..Limits::default()
    }))
    .await;
    // Trickles one header line every 100 ms, for ever: the server must hang up on it.
    let mut slow = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"GET /v1/flows HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let trickle = async {
        for i in 0.. {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            if slow
                .write_all(format!("X-Slow-{i}: a\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    };
    let closed = async {
        let mut reader = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        // A connection that sends nothing at all is closed too.
        read_until_closed(&mut reader).await
    };
    let (_, idle) = tokio::join!(
        tokio::time::timeout(std::time::Duration::from_secs(60), trickle),
        closed
    );
    assert_eq!(
        idle,
        Some(Vec::new()),
        "an idle connection is closed without a response"
    );
    let mut slow_read = slow;
    assert!(
        read_until_closed(&mut slow_read).await.is_some(),
        "the trickling connection is closed"
    );
    // Everyone else is served.
    let r = get(&server.base, "/v1/flows").await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_gets_408() {
    use tokio::io::AsyncWriteExt;
    let server = spawn(hostile_state(Limits {
        body_read_timeout: std::time::Duration::from_millis(200),
        ..Limits::default()
    }))
    .await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /v1/flows/desk/threads/slow/turns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"message\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let response = read_response(&mut stream).await.expect("a response");
    let (status, _, body) = parse_raw(&response);
    assert_eq!(status, 408);
    assert_eq!(body["error"]["code"], "request_timeout");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("body_read_timeout"));
    // Nothing reached the thread.
    assert_eq!(
        get(&server.base, "/v1/flows/desk/threads/slow")
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn a_body_announced_past_the_limit_gets_413_without_waiting_for_it() {
    use tokio::io::AsyncWriteExt;
    // The body never comes, and the body timeout is far away: only the announced length can
    // decide the answer.
    let server = spawn(hostile_state(Limits {
        body_read_timeout: std::time::Duration::from_secs(3600),
        ..Limits::default()
    }))
    .await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /v1/flows/desk/threads/big/turns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{{\"message\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let response = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        read_response(&mut stream),
    )
    .await
    .expect("answered before the body timeout")
    .expect("a response");
    let (status, _, body) = parse_raw(&response);
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], "payload_too_large");
}

#[tokio::test]
async fn a_body_announced_past_the_limit_gets_413_at_once_on_every_endpoint_that_reads_one() {
    use tokio::io::AsyncWriteExt;
    // The body timeout is far away: only the announced length can decide the answer. The
    // protocols' endpoints read their bodies their own way (A2A's JSON-RPC) or through the
    // same extractor (runs, AG-UI, the Agent Protocol).
    let server = spawn(hostile_state(Limits {
        body_read_timeout: std::time::Duration::from_secs(3600),
        ..Limits::default()
    }))
    .await;
    for path in [
        "/a2a/desk",
        "/v1/flows/desk/threads/big/runs",
        "/agui/desk",
        "/v1/threads",
    ] {
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: 10485760\r\n\r\n{{\"jsonrpc\":"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let response = tokio::time::timeout(
            std::time::Duration::from_secs(120),
            read_response(&mut stream),
        )
        .await
        .unwrap_or_else(|_| panic!("{path}: answered before the body timeout"))
        .expect("a response");
        let (status, _, body) = parse_raw(&response);
        assert_eq!(status, 413, "{path}: {body}");
        assert_eq!(body["error"]["code"], "payload_too_large", "{path}");
    }
}

#[tokio::test]
async fn a_404_points_to_an_endpoint_that_exists() {
    use tokio::io::AsyncWriteExt;
    let server = spawn(hostile_state(Limits::default())).await;
    let raw = |path: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
    };
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(raw("/v1/no/such/endpoint").as_bytes())
        .await
        .unwrap();
    let response = read_response(&mut stream).await.expect("a response");
    let (status, _, body) = parse_raw(&response);
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "no_route");
    let message = body["error"]["message"].as_str().unwrap();
    // Every `GET /v1...` path the message names answers (on the same connection).
    let named: Vec<&str> = message
        .split("GET ")
        .skip(1)
        .map(|rest| rest.split([' ', ',', ';']).next().unwrap())
        .collect();
    assert!(!named.is_empty(), "{message}");
    for path in named {
        stream.write_all(raw(path).as_bytes()).await.unwrap();
        let response = read_response(&mut stream).await.expect("a response");
        let (status, _, body) = parse_raw(&response);
        assert_eq!(
            status, 200,
            "the 404 points to {path}, which answers {status}: {body}"
        );
    }
}

#[tokio::test]
async fn connections_over_the_limit_get_a_json_503() {
    let server = spawn(hostile_state(Limits {
        max_connections: 2,
        ..Limits::default()
    }))
    .await;
    // Two idle connections take both places.
    let a = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let b = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let r = client()
        .get(format!("{}/v1/health", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    assert_eq!(r.headers()["connection"], "close");
    let (_, code, message) = error_code(r).await;
    assert_eq!(code, "overloaded");
    assert!(message.contains("2 open connections"), "{message}");
    // Their places come back when they go.
    drop((a, b));
    let mut status = 0;
    for _ in 0..600 {
        let r = client()
            .get(format!("{}/v1/health", server.base))
            .send()
            .await
            .unwrap();
        status = r.status().as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(status, 200, "a place is free again");
}

#[tokio::test]
async fn turns_over_the_concurrency_limit_get_a_json_503_and_run_nothing() {
    let server = spawn(hostile_state(Limits {
        max_concurrent_turns: 1,
        sse_keep_alive: std::time::Duration::from_millis(20),
        ..Limits::default()
    }))
    .await;
    // One stuck turn holds the only place.
    let first = post(
        &server.base,
        "/v1/flows/stuck/threads/a/turns",
        json!({"message": "go"}),
    )
    .await;
    assert_eq!(first.status(), 200);
    let mut events = eventsource_stream::Eventsource::eventsource(first.bytes_stream());
    use futures::StreamExt;
    while events.next().await.unwrap().unwrap().event != "event" {}
    let second = post(
        &server.base,
        "/v1/flows/desk/threads/b/turns",
        json!({"message": "Hi"}),
    )
    .await;
    assert_eq!(second.headers()["retry-after"], "1");
    let (status, code, message) = error_code(second).await;
    assert_eq!((status, code.as_str()), (503, "overloaded"));
    assert!(message.contains("1 concurrent turns"), "{message}");
    assert_eq!(
        get(&server.base, "/v1/flows/desk/threads/b").await.status(),
        404,
        "the refused turn ran nothing"
    );
    // The stuck client goes away: its turn is cancelled and its place comes back.
    drop(events);
    let mut done_event = None;
    for _ in 0..600 {
        let r = post(
            &server.base,
            "/v1/flows/desk/threads/b/turns",
            json!({"message": "Hi"}),
        )
        .await;
        if r.status() == 200 {
            done_event = Some(common::done(&read_sse(r).await).clone());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        done_event.expect("a place is free again")["output"],
        "Hello! I can help with refunds and complaints."
    );
}

#[tokio::test]
async fn a_turn_over_its_time_limit_is_cancelled_and_not_recorded() {
    let server = spawn(hostile_state(Limits {
        max_turn_duration: std::time::Duration::from_millis(200),
        ..Limits::default()
    }))
    .await;
    let events = turn(&server.base, "stuck", "t", "go").await;
    let error = events
        .iter()
        .find(|e| e.name == "error")
        .expect("an error event");
    // The public face: a code, a fixed message and the correlation id of the logged detail.
    assert_eq!(error.data["code"], "timeout", "{:?}", error.data);
    assert_eq!(
        error.data["message"],
        "This request took too long and was stopped."
    );
    assert_eq!(error.data["correlation_id"].as_str().unwrap().len(), 16);
    assert_eq!(done(&events)["failed"], true);
    assert_eq!(
        get(&server.base, "/v1/flows/stuck/threads/t")
            .await
            .status(),
        404
    );
    // The next turn of the thread runs (the cancelled one left no claim behind).
    let again = post(
        &server.base,
        "/v1/flows/stuck/threads/t/turns",
        json!({"message": "go"}),
    )
    .await;
    assert_eq!(again.status(), 200);
}

#[tokio::test]
async fn huge_paths_and_ids_get_a_clear_status() {
    let server = spawn(hostile_state(Limits::default())).await;
    let long_id = "a".repeat(10_000);
    let r = post(
        &server.base,
        &format!("/v1/flows/desk/threads/{long_id}/turns"),
        json!({"message": "Hi"}),
    )
    .await;
    let (status, code, message) = error_code(r).await;
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    assert!(message.contains("1 to 40 characters"), "{message}");

    let long_flow = "f".repeat(5_000);
    let r = get(&server.base, &format!("/v1/flows/{long_flow}")).await;
    let (status, code, message) = error_code(r).await;
    assert_eq!((status, code.as_str()), (404, "unknown_flow"));
    assert!(
        message.len() < 200,
        "the name is not echoed whole: {message}"
    );

    // Not UTF-8 once decoded: 400 without echoing it.
    let r = get(&server.base, "/v1/flows/desk/threads/%FF%FE").await;
    let (status, code, message) = error_code(r).await;
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    assert!(!message.contains("%FF"), "{message}");

    // A head over the limit is refused by the HTTP layer before any route (431, no body).
    let r = get(
        &server.base,
        &format!("/v1/flows/desk/threads/{}", "a".repeat(40_000)),
    )
    .await;
    assert_eq!(r.status(), 431);
    // A 70 KB URL too (sent raw: clients refuse to build it): the head limit is met first,
    // as `Limits::max_header_bytes` says.
    {
        use tokio::io::AsyncWriteExt;
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let head = format!(
            "GET /v1/flows/desk/threads/{} HTTP/1.1\r\nHost: x\r\n\r\n",
            "a".repeat(70_000)
        );
        let _ = stream.write_all(head.as_bytes()).await;
        let response = read_until_closed(&mut stream).await.expect("an answer");
        assert_eq!(parse_raw(&response).0, 431);
    }
    let r = client()
        .get(format!("{}/v1/flows", server.base))
        .bearer_auth(TOKEN)
        .header("x-filler", "b".repeat(40_000))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 431);
    // And the server goes on.
    assert_eq!(get(&server.base, "/v1/flows").await.status(), 200);
}

#[tokio::test]
async fn malformed_requests_get_json_errors() {
    let server = spawn(hostile_state(Limits::default())).await;
    let url = format!("{}/v1/flows/desk/threads/m/turns", server.base);
    let send = |body: &'static str, content_type: Option<&'static str>| {
        let mut r = client().post(&url).bearer_auth(TOKEN).body(body);
        if let Some(t) = content_type {
            r = r.header("content-type", t);
        }
        r.send()
    };
    let json_type = Some("application/json");
    for (body, why) in [
        ("{\"message\": ", "truncated"),
        ("{\"message\": 5}", "a number for a string"),
        ("[\"Hi\"]", "an array"),
        ("", "empty"),
        (
            "{\"message\": \"Hi\", \"message\": \"again\"}",
            "a duplicate field",
        ),
        ("\u{0}\u{1}binary", "not text"),
    ] {
        let (status, code, message) = error_code(send(body, json_type).await.unwrap()).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "bad_request"),
            "{why}: {message}"
        );
        assert!(
            message.starts_with("the body is not the JSON"),
            "{why}: {message}"
        );
    }
    let (_, _, message) = error_code(send("{\"message\": 5}", json_type).await.unwrap()).await;
    assert!(message.contains("invalid type: integer `5`"), "{message}");
    // JSON nested deeper than the parser goes: an error, not a stack overflow.
    let deep: &'static str = Box::leak(
        format!("{}{}", "{\"message\":".repeat(5_000), "}".repeat(5_000)).into_boxed_str(),
    );
    let (status, _, _) = error_code(send(deep, json_type).await.unwrap()).await;
    assert_eq!(status, 400);
    let (status, code, _) = error_code(send("{\"message\":\"Hi\"}", None).await.unwrap()).await;
    assert_eq!((status, code.as_str()), (415, "unsupported_media_type"));
    let (status, code, _) = error_code(
        send("{\"message\":\"Hi\"}", Some("text/plain"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (415, "unsupported_media_type"));
    // A wrong method on a known path.
    let r = client().get(&url).bearer_auth(TOKEN).send().await.unwrap();
    let (status, code, _) = error_code(r).await;
    assert_eq!((status, code.as_str()), (405, "method_not_allowed"));
    // None of it started a thread; a good request still works.
    assert_eq!(
        get(&server.base, "/v1/flows/desk/threads/m").await.status(),
        404
    );
    let ok = send(
        "{\"message\":\"Hi\"}",
        Some("application/json; charset=utf-8"),
    )
    .await
    .unwrap();
    assert_eq!(done(&read_sse(ok).await)["interrupted"], false);
}

#[tokio::test]
async fn a_resume_with_wrong_data_types_is_refused_and_loses_nothing() {
    let server = spawn(hostile_state(Limits::default())).await;
    let events = turn(&server.base, "desk", "w", "I want a refund").await;
    assert_eq!(done(&events)["interrupted"], true);
    let path = "/v1/flows/desk/threads/w/resume";
    for (body, why) in [
        (
            json!({"interrupt_id": 42, "data": {"approve": true}}),
            "a number for the id",
        ),
        (
            json!({"targets": ["triage/refund"]}),
            "a list for the targets",
        ),
        (
            json!({"targets": "triage/refund"}),
            "a string for the targets",
        ),
        (
            json!({"interrupt_id": ["triage/refund"]}),
            "a list for the id",
        ),
        (json!({"approve": true}), "an unknown field"),
    ] {
        let (status, code, message) = error_code(post(&server.base, path, body).await).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "bad_request"),
            "{why}: {message}"
        );
    }
    // An interrupt the thread does not wait on: refused, and the checkpoint is not used up.
    let r = post(
        &server.base,
        path,
        json!({"interrupt_id": "triage/nobody", "data": {"approve": true}}),
    )
    .await;
    let (status, _, message) = error_code(r).await;
    assert_eq!(status, 400, "{message}");
    assert!(
        message.contains("triage/refund"),
        "names the known interrupts: {message}"
    );
    // Data of the wrong shape reaches the tool, which asks again: the thread still waits.
    let again = read_sse(
        post(
            &server.base,
            path,
            json!({"interrupt_id": "triage/refund", "data": {"approve": "yes please"}}),
        )
        .await,
    )
    .await;
    assert_eq!(done(&again)["interrupted"], true);
    // The right data still approves it, once.
    let approved = read_sse(
        post(
            &server.base,
            path,
            json!({"interrupt_id": "triage/refund", "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    assert_eq!(
        done(&approved)["output"],
        "Done: 39 EUR for order 42 are on their way back to you."
    );
    let (status, code, _) = error_code(
        post(
            &server.base,
            path,
            json!({"interrupt_id": "triage/refund", "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "conflict"));
}

#[tokio::test]
async fn other_authorization_schemes_are_refused_with_a_bearer_challenge() {
    let server = spawn(hostile_state(Limits::default())).await;
    let url = format!("{}/v1/flows", server.base);
    for value in [
        format!("Basic {TOKEN}"),
        format!("Digest username=\"a\", response=\"{TOKEN}\""),
        format!("Token {TOKEN}"),
        format!("Bearer{TOKEN}"),
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
        format!("Bearer {TOKEN}x"),
        format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
    ] {
        let r = client()
            .get(&url)
            .header("authorization", &value)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.headers()["www-authenticate"],
            "Bearer realm=\"agentflow\"",
            "{value}"
        );
        let (status, code, _) = error_code(r).await;
        assert_eq!((status, code.as_str()), (401, "unauthorized"), "{value}");
    }
    // Bytes that are not text in the header.
    let r = client()
        .get(&url)
        .header(
            "authorization",
            reqwest::header::HeaderValue::from_bytes(b"Bearer \xff\xfe").unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(r).await.0, 401);
    // The scheme is case-insensitive (RFC 9110).
    let r = client()
        .get(&url)
        .header("authorization", format!("bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn another_tenants_pending_interrupts_are_out_of_reach() {
    let state = AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::bearer_any([
            "alice-token-0123456789".to_owned(),
            "bob-token-0123456789ab".to_owned(),
        ]))
        .tenant(|parts| {
            let token = agentweave_server::bearer_token(parts)?;
            Some(token.split('-').next()?.to_owned())
        })
        .build()
        .unwrap();
    let server = spawn(state).await;
    let alice = "alice-token-0123456789";
    let bob = "bob-token-0123456789ab";
    let as_user = |token: &'static str, method: reqwest::Method, path: &str| {
        client()
            .request(method, format!("{}{path}", server.base))
            .bearer_auth(token)
    };
    let r = as_user(
        alice,
        reqwest::Method::POST,
        "/v1/flows/desk/threads/a1/turns",
    )
    .json(&json!({"message": "I want a refund"}))
    .send()
    .await
    .unwrap();
    assert_eq!(done(&read_sse(r).await)["interrupted"], true);
    // Bob asks for Alice's thread's interrupts by its id, and with ids that try to leave his
    // tenant's key space.
    for path in [
        "/v1/flows/desk/threads/a1/interrupts",
        "/v1/flows/desk/threads/..%2Falice.a1/interrupts",
        "/v1/flows/desk/threads/alice.a1/interrupts",
    ] {
        let r = as_user(bob, reqwest::Method::GET, path)
            .send()
            .await
            .unwrap();
        let (status, _, message) = error_code(r).await;
        assert!(status == 404 || status == 400, "{path}: {status} {message}");
        assert!(!message.contains("alice"), "{path}: {message}");
    }
    // Dot segments, sent as they are (an HTTP client library would resolve them first).
    for path in [
        "/v1/flows/desk/threads/../interrupts",
        "/v1/flows/desk/threads/%2E%2E/interrupts",
        "/v1/flows/desk/threads/a1/../../../interrupts",
    ] {
        use tokio::io::AsyncWriteExt;
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {bob}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, _, body) = parse_raw(&read_response(&mut stream).await.unwrap());
        assert!(status == 404 || status == 400, "{path}: {status} {body}");
        assert!(body["error"]["code"].is_string(), "{path}: {body}");
    }
    let queue: Value = as_user(bob, reqwest::Method::GET, "/v1/flows/desk/interrupts")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(queue["interrupts"], json!([]));
    // Alice's is still there, for her.
    let mine: Value = as_user(
        alice,
        reqwest::Method::GET,
        "/v1/flows/desk/threads/a1/interrupts",
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(mine["interrupts"][0]["id"], "triage/refund");
}

/// The documented limits always fit together: a 40-character thread id of a 32-character
/// tenant on a 24-character flow is a thread (its store id is 98 characters), on a File store,
/// through an interrupt of the demo desk and its resume.
#[tokio::test]
async fn the_longest_thread_id_of_the_longest_tenant_and_flow_is_a_thread() {
    let flow = "f".repeat(24);
    let tenant = "t".repeat(32);
    let thread = "h".repeat(40);
    let dir = std::env::temp_dir().join(format!("af-long-ids-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let state = AppState::builder(agentweave_runtime::FileStore::new(&dir).unwrap())
        .flow(&flow, agentweave_server::demo::desk())
        .auth(Auth::tokens([(
            TOKEN,
            agentweave_server::Principal::new("ana")
                .tenant(tenant.as_str())
                .scopes([
                    agentweave_server::Scope::Chat,
                    agentweave_server::Scope::Approve,
                    agentweave_server::Scope::Read,
                ]),
        )]))
        .turn_routing(agentweave_runtime::TurnRouting::Root)
        .build()
        .unwrap();
    let server = spawn(state).await;
    let events = turn(
        &server.base,
        &flow,
        &thread,
        "I want a refund for order 42, it arrived broken",
    )
    .await;
    let done = done(&events).clone();
    assert!(done.get("failed").is_none(), "{done}");
    let interrupts = done["interrupts"].as_array().unwrap().clone();
    assert_eq!(interrupts.len(), 1, "the desk waits for a human: {done}");
    let response = post(
        &server.base,
        &format!("/v1/flows/{flow}/threads/{thread}/resume"),
        json!({"interrupt_id": interrupts[0]["id"], "data": {"approve": true}}),
    )
    .await;
    let events = read_sse(response).await;
    let done = common::done(&events);
    assert!(done.get("failed").is_none(), "{done}");
    assert_eq!(done["interrupted"], false, "{done}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The flow's own description (what `flow!` takes from its doc comment) is what the flow list,
/// the flow's page and its A2A agent card show; without one, the root agent's.
#[tokio::test]
async fn the_flow_description_is_shown_in_the_list_the_flow_and_the_agent_card() {
    let state = AppState::builder(agentweave_runtime::InMemoryStore::new())
        .flow(
            "desk",
            agentweave_server::demo::desk()
                .with_flow_description("The shop's customer-service desk."),
        )
        .flow("plain", agentweave_server::demo::desk())
        .auth(Auth::bearer(TOKEN))
        .build()
        .unwrap();
    let server = spawn(state).await;
    let list: Value = get(&server.base, "/v1/flows").await.json().await.unwrap();
    let described = |name: &str| {
        list["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap()["description"]
            .clone()
    };
    assert_eq!(described("desk"), "The shop's customer-service desk.");
    assert_eq!(
        described("plain"),
        "The front desk: finds out what the customer needs."
    );
    let flow: Value = get(&server.base, "/v1/flows/desk")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(flow["description"], "The shop's customer-service desk.");
    let card: Value = get(&server.base, "/a2a/desk/.well-known/agent-card.json")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(card["description"], "The shop's customer-service desk.");
}
