//! A thread whose background run has ended deletes at once (the run registry remembers the run,
//! not a hold on its thread).

use serde_json::{json, Value};

use crate::common::{self, spawn};

#[tokio::test]
async fn a_thread_deletes_right_after_its_background_run_ended() {
    let server = spawn(common::desk_state()).await;
    let base = &server.base;
    let run: Value = common::post(
        base,
        "/v1/flows/desk/threads/d1/runs",
        json!({"message": "hello"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let id = run["run_id"].as_str().unwrap();
    let waited: Value = common::client()
        .get(format!("{base}/v1/flows/desk/threads/d1/runs/{id}/wait"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(waited["status"], "success", "{waited}");
    let deleted = common::client()
        .delete(format!("{base}/v1/flows/desk/threads/d1"))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    let status = deleted.status();
    assert_eq!(status, 204, "{}", deleted.text().await.unwrap());
}
