//! Authority at every door, as a table: a turn that waits for an approval is started through
//! each door that starts turns (`/turns`, streamed, background and queued `/runs`, the Agent
//! Protocol's wait, stream and background runs, A2A send and stream, AG-UI) by a principal
//! who may also approve; then, through each door that answers (`/resume`, `/runs` with
//! `resume`, streamed or not, the Agent Protocol's wait, stream and background runs with a
//! `command`, A2A's answer to an input-required task, AG-UI's `resume`), the requester's own
//! approval and an approval without the `approve` scope are refused, with the protocol's
//! documented code, and nothing pays; an approver then approves once, and the record names
//! the requester and the approver. Replaying a cancelled approval, and reads without `read`,
//! are refused too. The checks are the engine's (the flow's rule, on every request that
//! answers), so a door cannot forget them.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::store::InMemoryRunQueue;
use agentweave_runtime::{
    tool_fn, ChatModelAgent, FlowAgent, InMemoryStore, ScriptStep, ScriptedModel, Tool,
    ToolApprovals,
};
use agentweave_server::{AppState, Approvals, Auth, Principal, QueueOptions, Scope};
use common::spawn;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

/// Chat and approve (and read): the requester, who may not approve their own request.
const CARA: &str = "cara-does-both-token-0123456789";
/// Chat only.
const DAN: &str = "dan-chat-only-token-0123456789";
/// Chat, approve and read: the approver (A2A, AG-UI and sending a cancelled run again take
/// `chat` at the door, whatever they carry).
const BEN: &str = "ben-approver-token-0123456789";
/// Read only.
const RITA: &str = "rita-reader-token-0123456789";

fn auth() -> Auth {
    Auth::tokens([
        (
            CARA,
            Principal::new("cara").scopes([Scope::Chat, Scope::Approve, Scope::Read]),
        ),
        (DAN, Principal::new("dan").scopes([Scope::Chat])),
        (
            BEN,
            Principal::new("ben").scopes([Scope::Chat, Scope::Approve, Scope::Read]),
        ),
        (RITA, Principal::new("rita").scopes([Scope::Read])),
    ])
}

/// The till: how many payments were made, a gate the payment waits at, and a word when a
/// payment starts.
struct Till {
    paid: AtomicUsize,
    gate: Semaphore,
    started: mpsc::UnboundedSender<()>,
}

/// `pay`: a model that pays 5 EUR with a tool that needs an approval, then says "Paid.".
fn state(till: &Arc<Till>, queued: bool) -> AppState {
    let paying = Arc::clone(till);
    let pay = tool_fn(
        "pay",
        "Pays an amount.",
        move |_: std::collections::HashMap<String, Value>| {
            let till = Arc::clone(&paying);
            async move {
                let _ = till.started.send(());
                let _open = till.gate.acquire().await.map_err(|e| e.to_string())?;
                till.paid.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("paid 5 EUR".to_owned())
            }
        },
    );
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(pay)];
    let model = ScriptedModel::rules()
        .after_tool("pay", ScriptStep::text("Paid."))
        .otherwise(ScriptStep::tool_call("pay", json!({"amount": 5})));
    let agent = ChatModelAgent::builder("cashier", model)
        .tools(ToolApprovals::new().always("pay").apply(tools))
        .build()
        .unwrap();
    let builder = AppState::builder(InMemoryStore::new())
        .flow("pay", FlowAgent::new(agent))
        .auth(auth())
        .approvals("pay", Approvals::new().approver_not_requester(true));
    let builder = if queued {
        let mut options = QueueOptions::default();
        options.workers = 1;
        builder.run_queue_with(InMemoryRunQueue::new(), options)
    } else {
        builder
    };
    builder.build().unwrap()
}

fn till(open: bool) -> (Arc<Till>, mpsc::UnboundedReceiver<()>) {
    let (started, heard) = mpsc::unbounded_channel();
    let till = Arc::new(Till {
        paid: AtomicUsize::new(0),
        gate: Semaphore::new(if open { Semaphore::MAX_PERMITS } else { 0 }),
        started,
    });
    (till, heard)
}

async fn post(base: &str, token: &str, path: &str, body: Value) -> reqwest::Response {
    common::client()
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn get(base: &str, token: &str, path: &str) -> reqwest::Response {
    common::client()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

fn user(text: &str) -> Value {
    json!([{"id": "1", "role": "user", "content": text}])
}

/// The doors that start a turn.
#[derive(Debug, Clone, Copy)]
enum Start {
    Turns,
    RunsStreamed,
    RunsBackground,
    RunsQueued,
    ProtocolWait,
    ProtocolStream,
    ProtocolBackground,
    A2aSend,
    A2aStream,
    Agui,
}

const STARTS: [Start; 10] = [
    Start::Turns,
    Start::RunsStreamed,
    Start::RunsBackground,
    Start::RunsQueued,
    Start::ProtocolWait,
    Start::ProtocolStream,
    Start::ProtocolBackground,
    Start::A2aSend,
    Start::A2aStream,
    Start::Agui,
];

/// Starts a turn of `thread` through `door` as `token` (the response read to its end).
async fn start(base: &str, token: &str, door: Start, thread: &str) {
    let message = json!({"message": "pay the invoice"});
    let protocol = json!({"assistant_id": "pay", "input": {"messages": user("pay the invoice")}});
    let a2a = |method: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
            "messageId": format!("m-{thread}"), "role": "ROLE_USER", "contextId": thread,
            "parts": [{"text": "pay the invoice"}]}}})
    };
    let path = |tail: &str| format!("/v1/flows/pay/threads/{thread}/{tail}");
    let response = match door {
        Start::Turns => post(base, token, &path("turns"), message).await,
        Start::RunsStreamed => {
            post(
                base,
                token,
                &path("runs"),
                json!({"message": "pay the invoice", "stream": true}),
            )
            .await
        }
        Start::RunsBackground | Start::RunsQueued => {
            post(base, token, &path("runs"), message).await
        }
        Start::ProtocolWait => {
            post(
                base,
                token,
                &format!("/v1/threads/{thread}/runs/wait"),
                protocol,
            )
            .await
        }
        Start::ProtocolStream => {
            post(
                base,
                token,
                &format!("/v1/threads/{thread}/runs/stream"),
                protocol,
            )
            .await
        }
        Start::ProtocolBackground => {
            post(base, token, &format!("/v1/threads/{thread}/runs"), protocol).await
        }
        Start::A2aSend => post(base, token, "/a2a/pay", a2a("SendMessage")).await,
        Start::A2aStream => post(base, token, "/a2a/pay", a2a("SendStreamingMessage")).await,
        Start::Agui => {
            post(
                base,
                token,
                "/agui/pay",
                json!({"threadId": thread, "runId": "r1", "messages": user("pay the invoice")}),
            )
            .await
        }
    };
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(status.is_success(), "{door:?}: {status} {body}");
    assert!(!body.contains("\"error\":{\"code\":-"), "{door:?}: {body}");
}

/// The thread as an approver reads it, once it waits for an approval (or `None` after 10 s).
async fn waiting(base: &str, thread: &str) -> Option<Value> {
    for _ in 0..200 {
        let response = get(base, BEN, &format!("/v1/flows/pay/threads/{thread}")).await;
        if response.status() == 200 {
            let body: Value = response.json().await.unwrap();
            if body["pending"].as_array().is_some_and(|p| !p.is_empty()) {
                return Some(body);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// The doors that answer an interrupt.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Resume,
    Runs,
    RunsStreamed,
    ProtocolWait,
    ProtocolStream,
    ProtocolBackground,
    A2a,
    Agui,
}

const ANSWERS: [Answer; 8] = [
    Answer::Resume,
    Answer::Runs,
    Answer::RunsStreamed,
    Answer::ProtocolWait,
    Answer::ProtocolStream,
    Answer::ProtocolBackground,
    Answer::A2a,
    Answer::Agui,
];

/// How a door answered.
#[derive(Debug)]
enum Answered {
    /// Accepted (the body read to its end).
    Accepted(String),
    /// Refused: the HTTP status, the public code (A2A: the JSON-RPC code), the message.
    Refused(u16, String, String),
}

/// Approves interrupt `id` of `thread` (waiting in `turn`) through `door` as `token`.
async fn answer(
    base: &str,
    token: &str,
    door: Answer,
    thread: &str,
    turn: u64,
    id: &str,
) -> Answered {
    let path = |tail: &str| format!("/v1/flows/pay/threads/{thread}/{tail}");
    let command = json!({"assistant_id": "pay", "command": {"resume": true}});
    let response = match door {
        Answer::Resume => {
            post(
                base,
                token,
                &path("resume"),
                json!({"interrupt_id": id, "data": true}),
            )
            .await
        }
        Answer::Runs => post(base, token, &path("runs"), json!({"resume": {id: true}})).await,
        Answer::RunsStreamed => {
            post(
                base,
                token,
                &path("runs"),
                json!({"resume": {id: true}, "stream": true}),
            )
            .await
        }
        Answer::ProtocolWait => {
            post(
                base,
                token,
                &format!("/v1/threads/{thread}/runs/wait"),
                command,
            )
            .await
        }
        Answer::ProtocolStream => {
            post(
                base,
                token,
                &format!("/v1/threads/{thread}/runs/stream"),
                command,
            )
            .await
        }
        Answer::ProtocolBackground => {
            post(base, token, &format!("/v1/threads/{thread}/runs"), command).await
        }
        Answer::A2a => {
            let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
                "messageId": format!("a-{thread}-{}", token.len()), "role": "ROLE_USER", "contextId": thread,
                "taskId": format!("{thread}.{turn}"), "parts": [{"data": {id: true}}]}}});
            let response = post(base, token, "/a2a/pay", body).await;
            let status = response.status().as_u16();
            let reply: Value = response.json().await.unwrap();
            return match reply.get("error") {
                // A refusal: HTTP 403 with the JSON-RPC error, its public code in `data.code`.
                Some(e) => Answered::Refused(
                    status,
                    format!(
                        "{} {}",
                        e["code"],
                        e["data"]["code"].as_str().unwrap_or("-")
                    ),
                    e["message"].as_str().unwrap_or_default().to_owned(),
                ),
                None => Answered::Accepted(reply.to_string()),
            };
        }
        Answer::Agui => {
            post(
                base,
                token,
                "/agui/pay",
                json!({"threadId": thread, "runId": "r2",
                "resume": [{"interruptId": id, "status": "resolved", "payload": true}]}),
            )
            .await
        }
    };
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    if (200..300).contains(&status) {
        return Answered::Accepted(text);
    }
    let body: Value =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{door:?}: {status} {text}"));
    Answered::Refused(
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// Asserts `answered` is the door's refusal, its message containing `why`.
fn assert_refused(door: Answer, who: &str, answered: &Answered, why: &str) {
    let documented = match door {
        // A2A's documented code for a refused request (docs: interoperability).
        Answer::A2a => (403, "-32600 forbidden"),
        _ => (403, "forbidden"),
    };
    match answered {
        Answered::Refused(status, code, message) => {
            assert_eq!(
                (*status, code.as_str()),
                documented,
                "{door:?} as {who}: {message}"
            );
            assert!(message.contains(why), "{door:?} as {who}: {message}");
        }
        Answered::Accepted(body) => panic!("{door:?} accepted {who}'s approval: {body}"),
    }
}

#[tokio::test]
async fn every_door_refuses_self_approval_and_approval_without_the_scope() {
    let (till, _heard) = till(true);
    let plain = spawn(state(&till, false)).await;
    let queued = spawn(state(&till, true)).await;
    let mut expected_paid = 0;
    for (n, door) in STARTS.into_iter().enumerate() {
        let server = match door {
            Start::RunsQueued => &queued,
            _ => &plain,
        };
        let base = &server.base;
        let thread = format!("t{n}");
        start(base, CARA, door, &thread).await;
        let thread_json = waiting(base, &thread)
            .await
            .unwrap_or_else(|| panic!("{door:?}: the turn never waited for its approval"));
        let pending = &thread_json["pending"][0];
        let id = pending["id"].as_str().unwrap().to_owned();
        let turn = thread_json["turns"].as_u64().unwrap() - 1;
        for answer_door in ANSWERS {
            let own = answer(base, CARA, answer_door, &thread, turn, &id).await;
            assert_refused(answer_door, "the requester", &own, "someone other");
            let unscoped = answer(base, DAN, answer_door, &thread, turn, &id).await;
            assert_refused(answer_door, "a chat-only principal", &unscoped, "`approve`");
        }
        assert_eq!(
            till.paid.load(Ordering::SeqCst),
            expected_paid,
            "{door:?}: nothing paid"
        );
        let still = waiting(base, &thread).await.expect("still waiting");
        assert_eq!(still["approvals"], json!([]), "{door:?}: {still}");

        // The approver approves (through each answer door in turn): it pays once, and the
        // record names who asked and who approved.
        let by = ANSWERS[n % ANSWERS.len()];
        match answer(base, BEN, by, &thread, turn, &id).await {
            Answered::Accepted(_) => {}
            refused => panic!("{door:?} then {by:?}: the approver was refused: {refused:?}"),
        }
        expected_paid += 1;
        let mut record = Value::Null;
        for _ in 0..200 {
            record = get(base, BEN, &format!("/v1/flows/pay/threads/{thread}"))
                .await
                .json()
                .await
                .unwrap();
            if record["approvals"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
                && record["pending"].as_array().is_some_and(Vec::is_empty)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let approval = &record["approvals"][0];
        assert_eq!(approval["by"], "ben", "{door:?} then {by:?}: {record}");
        assert_eq!(
            approval["requested_by"], "cara",
            "{door:?} then {by:?}: {record}"
        );
        assert_eq!(
            till.paid.load(Ordering::SeqCst),
            expected_paid,
            "{door:?} then {by:?}: paid once"
        );
    }
}

#[tokio::test]
async fn a_cancelled_approval_is_not_replayed_under_another_name() {
    let (till, mut heard) = till(false);
    let server = spawn(state(&till, false)).await;
    let base = &server.base;
    start(base, CARA, Start::Turns, "c1").await;
    let thread = waiting(base, "c1").await.unwrap();
    let id = thread["pending"][0]["id"].as_str().unwrap().to_owned();
    // The approver approves as a background run; the payment starts and waits at the gate;
    // the run is cancelled before it pays: nothing of it is recorded.
    let run: Value = post(
        base,
        BEN,
        "/v1/flows/pay/threads/c1/runs",
        json!({"resume": {&id: true}}),
    )
    .await
    .json()
    .await
    .unwrap();
    let run = run["run_id"].as_str().unwrap().to_owned();
    tokio::time::timeout(Duration::from_secs(10), heard.recv())
        .await
        .expect("the payment started")
        .unwrap();
    let cancel = post(
        base,
        BEN,
        &format!("/v1/flows/pay/threads/c1/runs/{run}/cancel"),
        json!({"mode": "immediate"}),
    )
    .await;
    assert_eq!(cancel.status(), 202);
    let outcome: Value = get(
        base,
        BEN,
        &format!("/v1/flows/pay/threads/c1/runs/{run}/wait"),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(outcome["status"], "cancelled", "{outcome}");
    assert_eq!(outcome["at_safe_point"], false, "{outcome}");
    till.gate.add_permits(Semaphore::MAX_PERMITS / 2);

    // Sending the cancelled run again answers again: as the sender, never as the approver
    // who was cancelled, never as nobody.
    let resume = format!("/v1/flows/pay/threads/c1/runs/{run}/resume");
    for (who, token, why) in [
        ("the requester", CARA, "someone other"),
        ("a chat-only principal", DAN, "`approve`"),
    ] {
        let response = post(base, token, &resume, json!({})).await;
        let (status, code, message) = common::error_code(response).await;
        assert_eq!(
            (status, code.as_str()),
            (403, "forbidden"),
            "{who}: {message}"
        );
        assert!(message.contains(why), "{who}: {message}");
    }
    assert_eq!(
        till.paid.load(Ordering::SeqCst),
        0,
        "the stored approval never ran again"
    );
    assert!(
        waiting(base, "c1").await.is_some(),
        "the thread still waits for its approval"
    );

    // The approver may send it again: it pays once, recorded as theirs.
    let again = post(base, BEN, &resume, json!({})).await;
    assert_eq!(again.status(), 202);
    let next: Value = again.json().await.unwrap();
    let next = next["run_id"].as_str().unwrap();
    let outcome: Value = get(
        base,
        BEN,
        &format!("/v1/flows/pay/threads/c1/runs/{next}/wait"),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(outcome["status"], "success", "{outcome}");
    assert_eq!(till.paid.load(Ordering::SeqCst), 1);
    let record: Value = get(base, BEN, "/v1/flows/pay/threads/c1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(record["approvals"][0]["by"], "ben", "{record}");
    assert_eq!(record["approvals"][0]["requested_by"], "cara", "{record}");
}

#[tokio::test]
async fn reads_need_read_on_every_door() {
    let (till, _heard) = till(true);
    let server = spawn(state(&till, false)).await;
    let base = &server.base;
    start(base, CARA, Start::A2aSend, "r1").await;
    waiting(base, "r1").await.unwrap();
    let run: Value = post(
        base,
        CARA,
        "/v1/threads/r2/runs",
        json!({"assistant_id": "pay", "input": {"messages": user("pay")}}),
    )
    .await
    .json()
    .await
    .unwrap();
    let run = run["run_id"].as_str().unwrap().to_owned();
    // The native and Agent Protocol reads: 403 `forbidden` without `read`, 200 with it.
    let reads = [
        "/v1/flows/pay/threads/r1".to_owned(),
        "/v1/flows/pay/threads/r1/interrupts".to_owned(),
        "/v1/flows/pay/threads/r1/runs".to_owned(),
        "/v1/threads/r2".to_owned(),
        "/v1/threads/r2/state".to_owned(),
        "/v1/threads/r2/runs".to_owned(),
        format!("/v1/threads/r2/runs/{run}"),
    ];
    for path in &reads {
        let (status, code, message) = common::error_code(get(base, DAN, path).await).await;
        assert_eq!(
            (status, code.as_str()),
            (403, "forbidden"),
            "{path}: {message}"
        );
        assert!(message.contains("`read`"), "{path}: {message}");
        assert_eq!(get(base, CARA, path).await.status(), 200, "{path}");
    }
    let history = post(base, DAN, "/v1/threads/r2/history", json!({})).await;
    assert_eq!(history.status(), 403);
    // A2A: GetTask and ListTasks are reads.
    for (method, params) in [("GetTask", json!({"id": "r1.0"})), ("ListTasks", json!({}))] {
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
        let response = post(base, DAN, "/a2a/pay", call.clone()).await;
        assert_eq!(response.status(), 403, "{method}");
        let reply: Value = response.json().await.unwrap();
        assert_eq!(reply["error"]["code"], -32600, "{method}: {reply}");
        assert_eq!(
            reply["error"]["data"]["code"], "forbidden",
            "{method}: {reply}"
        );
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`read`"),
            "{method}: {reply}"
        );
        assert!(reply.get("result").is_none(), "{method}: {reply}");
        let reply: Value = post(base, CARA, "/a2a/pay", call)
            .await
            .json()
            .await
            .unwrap();
        assert!(reply.get("result").is_some(), "{method}: {reply}");
    }
    // A reader reads everything, and starts nothing.
    assert_eq!(
        get(base, RITA, "/v1/flows/pay/threads/r1").await.status(),
        200
    );
}

/// The Agent Protocol's `command` (an answer) is refused to a caller who may answer nothing
/// before the thread is looked at: the same 403 whether the thread waits for an answer, waits
/// for none, or does not exist, so the refusal says nothing about the thread.
#[tokio::test]
async fn a_command_without_the_scope_learns_nothing_of_the_thread() {
    let (till, _heard) = till(true);
    let server = spawn(state(&till, false)).await;
    let base = &server.base;
    // c1 waits for an approval; c2 never ran.
    start(base, CARA, Start::A2aSend, "c1").await;
    waiting(base, "c1").await.unwrap();
    let command = json!({"assistant_id": "pay", "command": {"resume": true}});
    let mut refusals = Vec::new();
    for thread in ["c1", "c2"] {
        for tail in ["runs", "runs/wait"] {
            let path = format!("/v1/threads/{thread}/{tail}");
            let (status, code, message) =
                common::error_code(post(base, DAN, &path, command.clone()).await).await;
            assert_eq!(
                (status, code.as_str()),
                (403, "forbidden"),
                "{path}: {message}"
            );
            refusals.push(message);
        }
    }
    assert!(
        refusals.windows(2).all(|w| w[0] == w[1]),
        "the refusals differ by thread: {refusals:?}"
    );
    assert_eq!(till.paid.load(Ordering::SeqCst), 0);
    // With the scope, the thread that waits for nothing is a conflict, as before.
    let response = post(base, CARA, "/v1/threads/c2/runs/wait", command).await;
    assert_eq!(response.status(), 409);
}
