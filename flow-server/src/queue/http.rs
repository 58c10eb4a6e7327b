//! The run endpoints with a run queue: enqueue a background run, a run's status and outcome
//! from its queue row, wait for it, list a thread's queued runs.

use agentweave_runtime::store::{
    CancelState, Enqueue, NewRun, QueueCap, QueueError, QueueStatus, QueuedRun,
};
use agentweave_runtime::{CancelMode, DoubleText};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
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

/// Queues a background run of `message` on `key`'s thread (told to `webhook` when it ends,
/// if given: a URL already checked) under `run_id` (an idempotency key's; a new id without
/// one); answers its row as JSON (202).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn enqueue(
    state: &AppState,
    settings: &QueueSettings,
    principal: &Principal,
    served: &ServedFlow,
    key: &ThreadKey,
    message: String,
    strategy: DoubleText,
    webhook: Option<String>,
    run_id: Option<String>,
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
    // The tenant's runs waiting or running in the queue, of this flow, at most
    // Limits::max_queued_runs_per_tenant: counted and added in one step of the store, so
    // processes enqueueing at the same moment cannot pass it.
    let limit = state.limits().max_queued_runs_per_tenant;
    let cap = QueueCap {
        prefix: ThreadKey::prefix(served.name(), &key.tenant),
        limit,
    };
    let run = NewRun {
        run_id: run_id.unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()),
        flow: served.name().to_owned(),
        thread: key.store_id(),
        input: json!({
            "message": message,
            "by": principal.id(),
            "thread_id": key.id,
            "webhook": webhook,
        }),
    };
    let row = settings
        .queue
        .enqueue_within(run, mode, &cap)
        .await
        .map_err(|e| match e {
            QueueError::Full { .. } => ApiError::TooManyRuns {
                what: "queued runs",
                field: "max_queued_runs_per_tenant",
                limit,
            },
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
    if agentweave_runtime::store::validate_id(run_id).is_ok() {
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

/// The caller's thread id of a queued run (as it enqueued it).
pub(crate) fn thread_id(row: &QueuedRun) -> String {
    row.input["thread_id"]
        .as_str()
        .map_or_else(|| row.thread.clone(), str::to_owned)
}

/// Sends queued run `row`'s webhook, if it named one, with `outcome` (see [`crate::webhooks`]):
/// from the process that ended the run, signed with that process's webhook secret.
pub(crate) fn send_webhook(state: &AppState, row: &QueuedRun, outcome: &Value) {
    let Some(url) = row.input["webhook"].as_str() else {
        return;
    };
    let Ok(url) = crate::webhooks::check_url(state.outbound(), url) else {
        tracing::error!(run = %row.run_id, "a queued run's webhook URL is not valid");
        return;
    };
    let Some(secret) = state.webhook_secret() else {
        tracing::error!(
            run = %row.run_id,
            "a queued run names a webhook but this process has no webhook secret: give every \
             process of the queue the same ServerBuilder::webhook_secret"
        );
        return;
    };
    let mut body = outcome.clone();
    body["run_id"] = Value::String(row.run_id.clone());
    body["thread"] = Value::String(thread_id(row));
    crate::webhooks::send(
        state.outbound().clone(),
        crate::webhooks::tenant_of(&row.thread).to_owned(),
        url,
        secret.to_vec(),
        body,
    );
}

/// `GET .../runs/{run}/stream` of a queued run: its events from the queue after `after`;
/// `None` if the run is not queued.
pub(crate) async fn stream_queued(
    state: &AppState,
    settings: &QueueSettings,
    served: &ServedFlow,
    key: &ThreadKey,
    run_id: &str,
    after: Option<u64>,
) -> Result<Option<Response>, ApiError> {
    let Some(row) = row_of(settings, served, key, run_id).await? else {
        return Ok(None);
    };
    let body = super::events::queued_sse(settings, &row, after.unwrap_or(0), state.limits())?;
    Ok(Some(body.into_response()))
}

/// `POST .../runs/{run}/cancel` of a queued run: a waiting run is cancelled at once (it never
/// runs); a running one's worker applies `mode` within a poll. `None`
/// if the run is not queued; an ended run is [`ApiError::RunEnded`].
#[allow(clippy::too_many_arguments)]
pub(crate) async fn cancel_queued(
    state: &AppState,
    settings: &QueueSettings,
    served: &ServedFlow,
    key: &ThreadKey,
    run_id: &str,
    mode: CancelMode,
    timeout_ms: Option<u64>,
) -> Result<Option<Response>, ApiError> {
    let Some(row) = row_of(settings, served, key, run_id).await? else {
        return Ok(None);
    };
    let request = json!({ "mode": mode, "timeout_ms": timeout_ms });
    let outcome = json!({
        "run_id": row.run_id,
        "status": "cancelled",
        "cancel_mode": mode,
        "at_safe_point": true,
        "before_start": true,
        "note": "cancelled while it waited in the queue: it never ran",
    });
    let state_after = settings
        .queue
        .cancel(&row.run_id, request, outcome.clone())
        .await
        .map_err(|e| match e {
            QueueError::Ended { .. } => ApiError::RunEnded(e.to_string()),
            other => api_error(other),
        })?;
    let status = match state_after {
        Some(CancelState::Ended(ended)) => {
            settings.appended.send_modify(|n| *n = n.wrapping_add(1));
            send_webhook(state, &ended, &outcome);
            "cancelled"
        }
        Some(CancelState::Requested(_)) => "cancelling",
        None => {
            return Err(ApiError::UnknownRun {
                id: run_id.chars().take(64).collect(),
            })
        }
    };
    Ok(Some(
        (
            StatusCode::ACCEPTED,
            Json(json!({ "run_id": row.run_id, "cancel_mode": mode, "status": status })),
        )
            .into_response(),
    ))
}
