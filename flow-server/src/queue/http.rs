//! The run endpoints with a run queue: enqueue a background run, a run's status and outcome
//! from its queue row, wait for it, list a thread's queued runs.

use flow_runtime::store::{Enqueue, NewRun, QueueError, QueueStatus, QueuedRun};
use flow_runtime::DoubleText;
use serde_json::{json, Value};

use super::QueueSettings;
use crate::error::ApiError;
use crate::principal::{Principal, Scope};
use crate::state::{AppState, ServedFlow};
use crate::thread::ThreadKey;

/// A queue failure as an API error: bad input says what, a store failure is logged.
pub(crate) fn api_error(e: QueueError) -> ApiError {
    match e {
        QueueError::Busy { .. } => ApiError::Busy(e.to_string()),
        QueueError::InvalidId { .. } | QueueError::TooLarge { .. } => {
            ApiError::BadRequest(e.to_string())
        }
        QueueError::Duplicate { .. } => ApiError::Conflict(e.to_string()),
        other => {
            tracing::error!(error = %other, "the run queue failed");
            ApiError::StoreUnavailable
        }
    }
}

/// Queues a background run of `message` on `key`'s thread; answers its row as JSON (202).
pub(crate) async fn enqueue(
    state: &AppState,
    settings: &QueueSettings,
    principal: &Principal,
    served: &ServedFlow,
    key: &ThreadKey,
    message: String,
    strategy: DoubleText,
) -> Result<Value, ApiError> {
    principal.require(Scope::Chat)?;
    let limit = state.limits().max_message_bytes;
    if message.len() > limit {
        return Err(ApiError::BadRequest(format!(
            "the message has {} bytes; this server takes at most {limit} \
             (Limits::max_message_bytes)",
            message.len()
        )));
    }
    if message.trim().is_empty() {
        return Err(ApiError::BadRequest("the message is empty".into()));
    }
    let mode = match strategy {
        DoubleText::Reject => Enqueue::IfIdle,
        DoubleText::Enqueue => Enqueue::Always,
        other => {
            return Err(ApiError::BadRequest(format!(
                "multitask_strategy '{}' is not available for queued runs: use reject or \
                 enqueue (this server runs background runs from its run queue)",
                format!("{other:?}").to_lowercase()
            )))
        }
    };
    let run = NewRun {
        run_id: uuid::Uuid::new_v4().simple().to_string(),
        flow: served.name().to_owned(),
        thread: key.store_id(),
        input: json!({ "message": message, "by": principal.id() }),
    };
    let row = settings
        .queue
        .enqueue(run, mode)
        .await
        .map_err(|e| match e {
            // Named by the caller's thread id, never the store's key.
            QueueError::Busy { run_id, .. } => ApiError::Busy(format!(
                "thread '{}' has run '{run_id}' waiting or running; wait for it, or queue the \
                 new run behind it with multitask_strategy `enqueue`",
                key.id
            )),
            other => api_error(other),
        })?;
    Ok(row_json(&key.id, &row))
}

/// A queue row as the run endpoints answer it: `status` is `pending`, `running`, or the
/// outcome's status once done.
pub(crate) fn row_json(thread: &str, row: &QueuedRun) -> Value {
    let status = match (&row.status, &row.outcome) {
        (QueueStatus::Done, Some(outcome)) => outcome["status"].as_str().unwrap_or("error"),
        (status, _) => status.as_str(),
    };
    json!({
        "run_id": row.run_id,
        "thread": thread,
        "status": status,
        "created_at_ms": row.created_ms,
        "ended_at_ms": row.ended_ms,
        "outcome": row.outcome,
        "attempt": row.attempt,
        "worker": row.worker,
        "queued": true,
    })
}

/// The queue row of run `run_id` of `key`'s thread; another thread's or tenant's is unknown.
async fn row_of(
    settings: &QueueSettings,
    served: &ServedFlow,
    key: &ThreadKey,
    run_id: &str,
) -> Result<Option<QueuedRun>, ApiError> {
    if flow_runtime::store::validate_id(run_id).is_ok() {
        let row = settings.queue.get(run_id).await.map_err(api_error)?;
        Ok(row.filter(|r| r.thread == key.store_id() && r.flow == served.name()))
    } else {
        Ok(None)
    }
}

/// The run's status from the queue, `None` if it is not queued.
pub(crate) async fn queued_info(
    settings: &QueueSettings,
    served: &ServedFlow,
    key: &ThreadKey,
    run_id: &str,
) -> Result<Option<Value>, ApiError> {
    Ok(row_of(settings, served, key, run_id)
        .await?
        .map(|row| row_json(&key.id, &row)))
}

/// Waits until the queued run ends and answers its outcome; `None` if it is not queued.
pub(crate) async fn wait_queued(
    settings: &QueueSettings,
    served: &ServedFlow,
    key: &ThreadKey,
    run_id: &str,
) -> Result<Option<Value>, ApiError> {
    loop {
        let Some(row) = row_of(settings, served, key, run_id).await? else {
            return Ok(None);
        };
        if let (QueueStatus::Done, Some(outcome)) = (row.status, row.outcome) {
            return Ok(Some(outcome));
        }
        tokio::time::sleep(
            settings
                .options
                .poll
                .max(std::time::Duration::from_millis(10)),
        )
        .await;
    }
}

/// The thread's queued runs, oldest first.
pub(crate) async fn queued_runs(
    settings: &QueueSettings,
    key: &ThreadKey,
) -> Result<Vec<Value>, ApiError> {
    let rows = settings
        .queue
        .thread_runs(&key.store_id())
        .await
        .map_err(api_error)?;
    Ok(rows.iter().map(|r| row_json(&key.id, r)).collect())
}
