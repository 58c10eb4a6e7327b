//! A2A 1.0 to the letter, over real HTTP: `ListTasks`' validation, default page and time
//! filter; a message without its id or role refused; a message to an ended task `-32004`;
//! `SubscribeToTask` on a task waiting for input streams it and its later states; a text
//! answer to an approval read by the documented rule (`approve` / `deny`), anything else
//! refused with the accepted answers; the card declares what is implemented.

use crate::common;

use std::time::Duration;

use common::{spawn, TOKEN};
use futures::StreamExt;
use serde_json::{json, Value};

async fn call(base: &str, body: Value) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/a2a/desk"))
        .bearer_auth(TOKEN)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

fn message_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "letter-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn send(text: &str, context: &str) -> Value {
    rpc(
        "SendMessage",
        json!({"message": {"messageId": message_id(), "role": "ROLE_USER",
                            "contextId": context, "parts": [{"text": text}]}}),
    )
}

fn answer(text: &str, task: &str) -> Value {
    let (context, _) = task.rsplit_once('.').unwrap();
    rpc(
        "SendMessage",
        json!({"message": {"messageId": message_id(), "role": "ROLE_USER", "contextId": context,
                            "taskId": task, "parts": [{"text": text}]}}),
    )
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {reply}"))
}

#[tokio::test]
async fn list_tasks_refuses_bad_pages_lengths_and_states_and_pages_by_50() {
    let server = spawn(common::desk_state()).await;
    for bad in [
        json!({"pageSize": 0}),
        json!({"pageSize": -1}),
        json!({"pageSize": 150}),
        json!({"historyLength": -1}),
        json!({"status": "TASK_STATE_DREAMING"}),
        json!({"statusTimestampAfter": "last tuesday"}),
    ] {
        let reply = call(&server.base, rpc("ListTasks", bad.clone())).await;
        assert_eq!(code(&reply), -32602, "{bad}: {reply}");
    }
    let reply = call(
        &server.base,
        rpc("GetTask", json!({"id": "ctx.0", "historyLength": -1})),
    )
    .await;
    assert_eq!(code(&reply), -32602, "{reply}");

    // 52 tasks in one context: the default page holds 50 of them.
    for _ in 0..52 {
        let done = call(&server.base, send("hello", "many")).await;
        assert_eq!(
            done["result"]["task"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
    }
    let page = call(&server.base, rpc("ListTasks", json!({"contextId": "many"}))).await;
    let result = &page["result"];
    assert_eq!(result["tasks"].as_array().unwrap().len(), 50, "{page}");
    assert_eq!(result["pageSize"], 50);
    assert_eq!(result["totalSize"], 52);
    assert_ne!(result["nextPageToken"], "");
    let full = call(
        &server.base,
        rpc("ListTasks", json!({"contextId": "many", "pageSize": 100})),
    )
    .await;
    assert_eq!(full["result"]["tasks"].as_array().unwrap().len(), 52);

    // statusTimestampAfter: only what changed after the newest task's status.
    let newest = result["tasks"][0]["status"]["timestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let later = call(&server.base, send("hello once more", "many")).await;
    let later_id = later["result"]["task"]["id"].as_str().unwrap();
    let after = call(
        &server.base,
        rpc(
            "ListTasks",
            json!({"contextId": "many", "statusTimestampAfter": newest}),
        ),
    )
    .await;
    let ids: Vec<&str> = after["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [later_id], "{after}");
    // A state filter keeps only that state.
    let failed = call(
        &server.base,
        rpc(
            "ListTasks",
            json!({"contextId": "many", "status": "TASK_STATE_FAILED"}),
        ),
    )
    .await;
    assert_eq!(failed["result"]["tasks"], json!([]), "{failed}");
}

#[tokio::test]
async fn a_message_needs_its_id_and_role_and_an_ended_task_takes_none() {
    let server = spawn(common::desk_state()).await;
    let without_id = rpc(
        "SendMessage",
        json!({"message": {"role": "ROLE_USER", "contextId": "c1", "parts": [{"text": "hi"}]}}),
    );
    let reply = call(&server.base, without_id).await;
    assert_eq!(code(&reply), -32602);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messageId"),
        "{reply}"
    );
    let without_role = rpc(
        "SendStreamingMessage",
        json!({"message": {"messageId": "x1", "contextId": "c1", "parts": [{"text": "hi"}]}}),
    );
    let reply = call(&server.base, without_role).await;
    assert_eq!(code(&reply), -32602);
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("role"),
        "{reply}"
    );
    // Nothing ran for them: the context has no task.
    let listed = call(&server.base, rpc("ListTasks", json!({"contextId": "c1"}))).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");

    let done = call(&server.base, send("hello", "c1")).await;
    let task = done["result"]["task"]["id"].as_str().unwrap().to_owned();
    let late = call(&server.base, answer("and another thing", &task)).await;
    assert_eq!(code(&late), -32004, "{late}");
    assert!(
        late["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has ended"),
        "{late}"
    );
    // Subscribing to an ended task is refused the same way.
    let subscribe = call(&server.base, rpc("SubscribeToTask", json!({"id": task}))).await;
    assert_eq!(code(&subscribe), -32004, "{subscribe}");
}

/// The JSON-RPC responses of an SSE body, read as they come.
struct Frames {
    bytes: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: String,
}

impl Frames {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Frames {
            bytes: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next frame's JSON, or `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                if let Some(data) = frame.trim().strip_prefix("data: ") {
                    return Some(serde_json::from_str(data).unwrap());
                }
                continue; // a keep-alive comment
            }
            let chunk = tokio::time::timeout(Duration::from_secs(60), self.bytes.next())
                .await
                .expect("a frame within 60 s")?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
    }
}

#[tokio::test]
async fn subscribing_to_a_task_waiting_for_input_streams_it_and_its_later_states() {
    let server = spawn(common::desk_state()).await;
    let asked = call(&server.base, send("I want a refund", "sub")).await;
    let task = &asked["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = task["id"].as_str().unwrap().to_owned();
    // The question states what it takes.
    let entry = &task["status"]["message"]["parts"][1]["data"]["interrupts"][0];
    assert_eq!(
        entry["answer"]["schema"]["properties"]["approve"]["type"],
        "boolean"
    );
    assert_eq!(entry["answer"]["text"]["approve"][0], "approve");
    assert_eq!(entry["answer"]["text"]["deny"][0], "deny");

    let response = reqwest::Client::new()
        .post(format!("{}/a2a/desk", server.base))
        .bearer_auth(TOKEN)
        .json(&rpc("SubscribeToTask", json!({"id": id})))
        .send()
        .await
        .unwrap();
    let mut frames = Frames::new(response);
    let first = frames.next().await.unwrap();
    assert_eq!(first["result"]["task"]["id"], id.as_str());
    assert_eq!(
        first["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    // A free-text answer is refused with the rule; the task still waits, asked nothing again.
    let vague = call(&server.base, answer("yes, approve it", &id)).await;
    assert_eq!(code(&vague), -32602, "{vague}");
    let said = vague["error"]["message"].as_str().unwrap();
    assert!(said.contains("\"approve\" or \"deny\""), "{said}");
    assert!(said.contains("still waits"), "{said}");
    let got = call(&server.base, rpc("GetTask", json!({"id": id}))).await;
    assert_eq!(
        got["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    // "approve" resumes it: the subscriber sees it work and complete with the refund paid.
    let approved = call(&server.base, answer("Approve", &id)).await;
    assert_eq!(
        approved["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{approved}"
    );
    let mut states = Vec::new();
    let mut artifact = None;
    while let Some(frame) = frames.next().await {
        assert_eq!(frame["id"], 7, "{frame}");
        let result = &frame["result"];
        if let Some(state) = result["statusUpdate"]["status"]["state"].as_str() {
            states.push(state.to_owned());
        }
        if let Some(text) = result["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str() {
            artifact = Some(text.to_owned());
        }
    }
    assert_eq!(
        states.first().map(String::as_str),
        Some("TASK_STATE_WORKING")
    );
    assert_eq!(
        states.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED"),
        "{states:?}"
    );
    assert_eq!(
        artifact.as_deref(),
        Some("Done: 39 EUR for order 42 are on their way back to you.")
    );
}

#[tokio::test]
async fn deny_as_text_declines_the_refund() {
    let server = spawn(common::desk_state()).await;
    let asked = call(&server.base, send("I want a refund", "deny")).await;
    let id = asked["result"]["task"]["id"].as_str().unwrap().to_owned();
    let denied = call(&server.base, answer("deny", &id)).await;
    let task = &denied["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{denied}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "Sorry: the refund for order 42 was not approved."
    );
}

#[tokio::test]
async fn the_card_declares_what_is_implemented() {
    let server = spawn(common::desk_state()).await;
    let card: Value = reqwest::get(format!(
        "{}/a2a/desk/.well-known/agent-card.json",
        server.base
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let capabilities = &card["capabilities"];
    assert_eq!(capabilities["streaming"], true);
    // No webhook secret here: no push notifications; no extended card method.
    assert_eq!(capabilities["pushNotifications"], false);
    assert_eq!(capabilities["extendedAgentCard"], false);
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    // What the card says is a method that answers: SubscribeToTask is a stream.
    let push = call(
        &server.base,
        rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "x.0", "url": "https://example.com/hook"}),
        ),
    )
    .await;
    assert_eq!(code(&push), -32003, "{push}");
    let extended = call(&server.base, rpc("GetExtendedAgentCard", json!({}))).await;
    assert_eq!(code(&extended), -32601, "{extended}");
}
