//! Two server processes on one store are one service: a turn started on one is read, resumed
//! and continued on the other, and a resume runs once whichever process it lands on.

use crate::common;

use std::process::Stdio;

use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Starts `agentweave-server-demo` with `store` (a store directory, or `--postgres URL`); returns
/// the process and its base URL.
async fn server_process(store: &[String]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flow-server-demo"))
        .args(store)
        .env("AGENTFLOW_TOKEN", TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the demo server starts");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).await.unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    (child, url)
}

#[tokio::test]
async fn two_processes_on_one_store_serve_one_conversation() {
    let dir = std::env::temp_dir().join(format!("agentflow-scale-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    one_conversation_on_two_processes(&[dir.display().to_string()]).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same on one PostgreSQL database (feature `postgres`; `AGENTFLOW_PG_URL` names the
/// server, see `.ci/postgres.sh`).
#[cfg(feature = "postgres")]
#[tokio::test]
async fn two_processes_on_one_postgres_database_serve_one_conversation() {
    let Some(url) = agentweave_runtime::testing::fresh_postgres_database("scale_out").await else {
        return;
    };
    one_conversation_on_two_processes(&["--postgres".to_owned(), url]).await;
}

/// Two server processes on `store`: a turn on one is read, resumed, continued and deleted on
/// the other.
async fn one_conversation_on_two_processes(store: &[String]) {
    let (mut a_proc, a) = server_process(store).await;
    let (mut b_proc, b) = server_process(store).await;
    assert_ne!(a, b);

    // A turn on A stops for approval.
    let events = turn(&a, "desk", "shared", "I want a refund for order 42").await;
    assert_eq!(done(&events)["interrupts"][0]["id"], "triage/refund");

    // B sees the thread and the pending approval.
    let thread: Value = get(&b, "/v1/flows/desk/threads/shared")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["pending"][0]["id"], "triage/refund");
    let queue: Value = get(&b, "/v1/flows/desk/interrupts")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queue["interrupts"][0]["thread"], "shared");

    // B resumes it; the refund is paid.
    let resumed = read_sse(
        post(
            &b,
            "/v1/flows/desk/threads/shared/resume",
            json!({"interrupt_id": "triage/refund", "data": {"approve": true}}),
        )
        .await,
    )
    .await;
    assert_eq!(
        done(&resumed)["output"],
        "Done: 39 EUR for order 42 are on their way back to you."
    );
    // A second approval, on A, is refused: the resume ran once.
    let again = post(
        &a,
        "/v1/flows/desk/threads/shared/resume",
        json!({"interrupt_id": "triage/refund", "data": {"approve": true}}),
    )
    .await;
    assert_eq!(error_code(again).await.0, 409);

    // The next turn lands on A and continues the same thread.
    let next = turn(&a, "desk", "shared", "Hi").await;
    assert_eq!(next[0].data["turn"], 1);
    let thread: Value = get(&b, "/v1/flows/desk/threads/shared")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(thread["turns"], 2);
    let last = thread["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["message"]["content"],
        "Hello! I can help with refunds and complaints."
    );

    // Deleted on B, gone on A.
    let deleted = client()
        .delete(format!("{b}/v1/flows/desk/threads/shared"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(get(&a, "/v1/flows/desk/threads/shared").await.status(), 404);

    // Closing their standard input stops both servers.
    drop(a_proc.stdin.take());
    drop(b_proc.stdin.take());
    assert!(a_proc.wait().await.unwrap().success());
    assert!(b_proc.wait().await.unwrap().success());
}
