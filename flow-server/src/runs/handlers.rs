//! The run endpoints: create (background or streamed), list, get, stream (attach with
//! `Last-Event-ID`), wait, cancel (with a mode), resume a cancelled run.

use std::collections::HashMap;
use std::time::Duration;

use agentweave_runtime::{
    CancelError, CancelMode, DoubleText, Message, RunError, RunHandle, RunInfo,
};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

use super::stream::{outcome_json, run_sse, OnDisconnect};
use crate::access::RequestId;
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::{ApiPath, JsonBody};
use crate::principal::{Principal, Scope};
use crate::state::{AppState, ServedFlow};
use crate::thread::ThreadKey;
use agentweave_runtime::TurnRequest;

/// The body of `POST .../runs`: a `message` (a new turn) or `resume` (interrupt id -> data,
/// continuing the turn the thread waits on).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRun {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    resume: Option<HashMap<String, Value>>,
    /// `reject` (default), `enqueue`, `interrupt`, `rollback`.
    #[serde(default)]
    multitask_strategy: Option<String>,
    /// Answer with the run's SSE stream instead of its id.
    #[serde(default)]
    stream: bool,
    /// `continue` (default for background runs) or `cancel` (default for streamed ones).
    #[serde(default)]
    on_disconnect: Option<String>,
    /// An http(s) URL told of the run's end (see [`crate::webhooks`]).
    #[serde(default)]
    webhook: Option<String>,
}

/// The body of `POST .../runs/{run}/cancel`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CancelRun {
    /// `immediate` (default), `after_model`, `after_tools`, joined by `|`, `recursive`.
    #[serde(default)]
    mode: Option<String>,
    /// After this many milliseconds a run not stopped yet is stopped immediately.
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// The body of `POST .../runs/{run}/steer`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SteerRun {
    /// The user's message, taken in by the running turn at its next safe point.
    message: String,
}

/// A strategy from its name; a clear 400 for a name that does not exist.
pub(crate) fn parse_strategy(name: Option<&str>) -> Result<DoubleText, ApiError> {
    match name {
        None => Ok(DoubleText::Reject),
        Some(s) => s
            .parse()
            .map_err(|e: agentweave_runtime::UnknownStrategy| ApiError::BadRequest(e.to_string())),
    }
}

fn on_disconnect(name: Option<&str>, default: OnDisconnect) -> Result<OnDisconnect, ApiError> {
    match name {
        None => Ok(default),
        Some("continue") => Ok(OnDisconnect::Continue),
        Some("cancel") => Ok(OnDisconnect::Cancel),
        Some(other) => Err(ApiError::BadRequest(format!(
            "on_disconnect '{}' is not known: use continue or cancel",
            other.chars().take(40).collect::<String>()
        ))),
    }
}

fn info_json(thread: &str, info: &RunInfo) -> Value {
    json!({
        "run_id": info.run_id,
        "thread": thread,
        "status": info.status.as_str(),
        "created_at_ms": info.created_at_ms,
        "ended_at_ms": info.ended_at_ms,
        "outcome": info.outcome.as_ref().map(|o| outcome_json(&info.run_id, o, None)),
    })
}

fn key_of(
    state: &AppState,
    flow: &str,
    tenant: &Tenant,
    id: &str,
) -> Result<(ServedFlow, ThreadKey), ApiError> {
    let served = state.flow(flow)?.clone();
    let key = ThreadKey::new(served.name(), &tenant.0, id)?;
    Ok((served, key))
}

/// The run `run_id` of the caller's thread `key`: another thread's or tenant's run is unknown.
pub(crate) fn run_of(
    served: &ServedFlow,
    key: &ThreadKey,
    run_id: &str,
) -> Result<RunHandle, ApiError> {
    served
        .runner()
        .run_handle(run_id)
        .filter(|r| r.thread_id() == key.store_id())
        .ok_or_else(|| ApiError::UnknownRun {
            id: run_id.chars().take(64).collect(),
        })
}

/// Starts a run of `key`'s thread: a message (with `strategy`) or a resume. Holds its thread's
/// place among the server's concurrent turns (or, behind another run of its thread, a place in
/// its tenant's line) until the run ends (see [`crate::run_slots`]). The run's task runs in a `turn` span
/// (see [`turn_span`](crate::turn::turn_span)) naming the run, the request and the principal.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn start(
    state: &AppState,
    request_id: &str,
    principal: &Principal,
    served: &ServedFlow,
    key: &ThreadKey,
    message: Option<String>,
    resume: Option<HashMap<String, Value>>,
    strategy: DoubleText,
    run_id: Option<String>,
) -> Result<RunHandle, ApiError> {
    use tracing::Instrument;
    let span = crate::turn::turn_span(
        &key.flow,
        &key.id,
        None,
        resume.is_some(),
        None,
        request_id,
        principal.id(),
    );
    let run = start_in_span(
        state, principal, served, key, message, resume, strategy, run_id,
    )
    .instrument(span.clone())
    .await?;
    span.record("run_id", run.id());
    Ok(run)
}

/// What a run request with both or neither of `message` and `resume` gets.
const MESSAGE_OR_RESUME: &str =
    "send either `message` (a new turn) or `resume` (interrupt id -> data), not both and not neither";

#[allow(clippy::too_many_arguments)]
async fn start_in_span(
    state: &AppState,
    principal: &Principal,
    served: &ServedFlow,
    key: &ThreadKey,
    message: Option<String>,
    resume: Option<HashMap<String, Value>>,
    strategy: DoubleText,
    run_id: Option<String>,
) -> Result<RunHandle, ApiError> {
    let with_id = |request: TurnRequest| match &run_id {
        Some(id) => request.run_id(id.clone()),
        None => request,
    };
    let run = match (message, resume) {
        (Some(message), None) => {
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
            let permit = state.admit_run(&key.tenant, &key.store_id())?;
            let run = served
                .runner()
                .start(with_id(
                    TurnRequest::new(key.store_id(), Message::user(message))
                        .if_busy(strategy)
                        .by(principal),
                ))
                .await?;
            hold_until_end(&run, permit);
            run
        }
        (None, Some(targets)) => {
            // Scope before existence: a caller who may answer nothing learns nothing of the
            // thread (a fork point's continuation, which answers nothing, needs `chat`). The
            // engine checks each answer (the flow's approvals).
            served
                .approvals()
                .require_resume(state, &key.store_id(), principal, &targets)
                .await?;
            let permit = state.admit_run(&key.tenant, &key.store_id())?;
            let run = served
                .runner()
                .start(with_id(
                    TurnRequest::resume(key.store_id(), targets).by(principal),
                ))
                .await?;
            hold_until_end(&run, permit);
            run
        }
        _ => return Err(ApiError::BadRequest(MESSAGE_OR_RESUME.into())),
    };
    Ok(run)
}

/// Keeps `permit` (the run's place, see [`crate::run_slots`]) until `run` ends.
fn hold_until_end(run: &RunHandle, permit: impl Send + 'static) {
    let run = run.clone();
    tokio::spawn(async move {
        run.wait().await;
        drop(permit);
    });
}

/// `POST /v1/flows/{flow}/threads/{thread}/runs`: starts a run; answers `{"run_id", ...}`
/// (202), or with `"stream": true` its events as SSE.
pub(crate) async fn create_run(
    State(state): State<AppState>,
    request_id: RequestId,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    headers: HeaderMap,
    JsonBody(request): JsonBody<CreateRun>,
) -> Result<Response, ApiError> {
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    let mut run_id = None;
    let mut again = false;
    if let Some(idem) = crate::idempotency::header_key(&headers)? {
        let fingerprint = json!({
            "route": "runs",
            "message": request.message,
            "resume": request.resume.as_ref().map(|r| r.iter().collect::<std::collections::BTreeMap<_, _>>()),
            "stream": request.stream,
        });
        let keyed = crate::idempotency::keyed(
            &state,
            "Idempotency-Key",
            principal.id(),
            &key,
            &idem,
            &fingerprint,
        )
        .await?;
        again = keyed.again;
        if keyed.again {
            if let Some(answer) =
                existing_run(&state, &served, &key, &keyed.run_id, request.stream).await?
            {
                return Ok(answer);
            }
        }
        run_id = Some(keyed.run_id);
    }
    let strategy = parse_strategy(request.multitask_strategy.as_deref())?;
    let default = if request.stream {
        OnDisconnect::Cancel
    } else {
        OnDisconnect::Continue
    };
    let disconnect = on_disconnect(request.on_disconnect.as_deref(), default)?;
    let webhook = match &request.webhook {
        None => None,
        Some(url) => {
            let url = crate::webhooks::check_url(state.outbound(), url)?;
            let secret = state.webhook_secret().ok_or_else(|| {
                ApiError::BadRequest(
                    "this server sends no webhooks: it has no webhook secret (ServerBuilder::webhook_secret)"
                        .into(),
                )
            })?;
            Some((url, secret.to_vec()))
        }
    };
    if let (Some(queue), false, Some(message), None) = (
        state.queue_settings(),
        request.stream,
        &request.message,
        &request.resume,
    ) {
        if let (true, Some(id)) = (again, &run_id) {
            // The run the key queued: its row, from any process (nothing is queued again).
            if let Some(row) = crate::queue::queued_info(queue, &served, &key, id).await? {
                return Ok((StatusCode::ACCEPTED, Json(row)).into_response());
            }
        }
        let body = crate::queue::enqueue(
            &state,
            queue,
            &principal,
            &served,
            &key,
            message.clone(),
            strategy,
            webhook.as_ref().map(|(url, _)| url.to_string()),
            run_id.clone(),
        )
        .await?;
        return Ok((StatusCode::ACCEPTED, Json(body)).into_response());
    }
    let run = start(
        &state,
        &request_id.0,
        &principal,
        &served,
        &key,
        request.message,
        request.resume,
        strategy,
        run_id,
    )
    .await?;
    if let Some((url, secret)) = webhook {
        let thread = key.id.clone();
        let tenant = key.tenant.clone();
        crate::webhooks::after(
            state.outbound().clone(),
            tenant,
            run.clone(),
            url,
            secret,
            move |run| {
                let mut body = run
                    .outcome()
                    .map(|o| outcome_json(run.id(), &o, run.failure().as_ref()))
                    .unwrap_or_default();
                body["thread"] = Value::String(thread);
                body
            },
        );
    }
    if request.stream {
        return Ok(run_sse(run, key.id, None, state.limits(), disconnect)?.into_response());
    }
    Ok((StatusCode::ACCEPTED, Json(info_json(&key.id, &run.info()))).into_response())
}

/// `GET .../runs`: the thread's runs this server remembers, oldest first, a page at a time
/// (`?limit=N&offset=M`, at most [`MAX_PAGE`](crate::paging::MAX_PAGE); `next_offset` while
/// more follow).
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id)): ApiPath<(String, String)>,
    page: Result<
        axum::extract::Query<crate::paging::PageQuery>,
        axum::extract::rejection::QueryRejection,
    >,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let page = crate::paging::PageQuery::of(page)?;
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    let mut runs: Vec<Value> = match state.queue_settings() {
        Some(queue) => crate::queue::queued_runs(queue, &key).await?,
        None => Vec::new(),
    };
    let local: Vec<Value> = served
        .runner()
        .thread(&key.store_id())
        .runs()
        .iter()
        .filter(|r| !runs.iter().any(|q| q["run_id"] == r.run_id.as_str()))
        .map(|r| info_json(&key.id, r))
        .collect();
    runs.extend(local);
    let (runs, next) = page.cut(runs, crate::paging::MAX_PAGE);
    Ok(Json(json!({ "runs": runs, "next_offset": next })))
}

/// `GET .../runs/{run}`: one run's status.
pub(crate) async fn get_run(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id, run)): ApiPath<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    if let Some(queue) = state.queue_settings() {
        if let Some(info) = crate::queue::queued_info(queue, &served, &key, &run).await? {
            return Ok(Json(info));
        }
    }
    if let Some(run) = served.runner().run_handle(&run) {
        if run.thread_id() == key.store_id() {
            return Ok(Json(info_json(&key.id, &run.info())));
        }
    }
    // A run of an earlier process (or another one on the store): its record says how it ended.
    match recorded_outcome(&state, &key, &run).await? {
        Some(outcome) => Ok(Json(recorded_info(&key.id, &run, &outcome))),
        None => Err(unknown_run(&run)),
    }
}

fn unknown_run(run_id: &str) -> ApiError {
    ApiError::UnknownRun {
        id: run_id.chars().take(64).collect(),
    }
}

/// How run `run_id` of `key`'s thread ended, from the thread's records (its last part);
/// `None` if the thread has no record of it.
async fn recorded_outcome(
    state: &AppState,
    key: &ThreadKey,
    run_id: &str,
) -> Result<Option<agentweave_runtime::RunOutcome>, ApiError> {
    let records = crate::idempotency::recorded(state, key, run_id).await?;
    Ok(records
        .last()
        .and_then(agentweave_runtime::RunOutcome::of_record))
}

/// The status of a run known from its record.
fn recorded_info(thread: &str, run_id: &str, outcome: &agentweave_runtime::RunOutcome) -> Value {
    json!({
        "run_id": run_id,
        "thread": thread,
        "status": outcome.status().as_str(),
        "outcome": outcome_json(run_id, outcome, None),
        "recorded": true,
    })
}

/// What a request sent again with its `Idempotency-Key` gets when its run exists: the run
/// live in this process (its status, or its stream), or its record. `None`: neither (the
/// first request never started its run, or its process died: the engine recovers a dead
/// turn of the run when the request is sent on).
async fn existing_run(
    state: &AppState,
    served: &ServedFlow,
    key: &ThreadKey,
    run_id: &str,
    stream: bool,
) -> Result<Option<Response>, ApiError> {
    if let Some(run) = served
        .runner()
        .run_handle(run_id)
        .filter(|r| r.thread_id() == key.store_id())
    {
        if stream {
            let body = run_sse(
                run,
                key.id.clone(),
                None,
                state.limits(),
                OnDisconnect::Continue,
            )?;
            return Ok(Some(body.into_response()));
        }
        return Ok(Some(
            (StatusCode::ACCEPTED, Json(info_json(&key.id, &run.info()))).into_response(),
        ));
    }
    let records = crate::idempotency::recorded(state, key, run_id).await?;
    let Some(outcome) = records
        .last()
        .and_then(agentweave_runtime::RunOutcome::of_record)
    else {
        return Ok(None);
    };
    if stream {
        let resumed = records.first().is_some_and(|r| !r.starts_turn());
        return Ok(Some(crate::idempotency::recorded_turn_sse(
            &records,
            key,
            resumed,
            state.limits(),
        )));
    }
    Ok(Some(
        (
            StatusCode::ACCEPTED,
            Json(recorded_info(&key.id, run_id, &outcome)),
        )
            .into_response(),
    ))
}

/// The `Last-Event-ID` header: absent, or an event id.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::UnknownEvent(
                "Last-Event-ID is not an event id: send the `id` of the last event you received"
                    .into(),
            )
        })
}

/// `GET .../runs/{run}/stream`: the run's events as SSE, after `Last-Event-ID` if sent. The
/// run goes on if the client goes away.
pub(crate) async fn stream_run(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id, run)): ApiPath<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    principal.require(Scope::Read)?;
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    let after = last_event_id(&headers)?;
    if let Some(queue) = state.queue_settings() {
        if let Some(body) =
            crate::queue::stream_queued(&state, queue, &served, &key, &run, after).await?
        {
            return Ok(body);
        }
    }
    let run = run_of(&served, &key, &run)?;
    Ok(run_sse(run, key.id, after, state.limits(), OnDisconnect::Continue)?.into_response())
}

/// `GET .../runs/{run}/wait`: waits for the run's end and answers its outcome.
pub(crate) async fn wait_run(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id, run)): ApiPath<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    if let Some(queue) = state.queue_settings() {
        if let Some(outcome) = crate::queue::wait_queued(queue, &served, &key, &run).await? {
            return Ok(Json(outcome));
        }
    }
    if let Some(handle) = served
        .runner()
        .run_handle(&run)
        .filter(|r| r.thread_id() == key.store_id())
    {
        let outcome = handle.wait().await;
        return Ok(Json(outcome_json(
            handle.id(),
            &outcome,
            handle.failure().as_ref(),
        )));
    }
    // A run of an earlier process: its record, once the turn is recorded. A turn whose process
    // died is being finished by the server's recovery: wait for it (up to the turn limit).
    let deadline = tokio::time::Instant::now() + state.limits().max_turn_duration;
    loop {
        if let Some(outcome) = recorded_outcome(&state, &key, &run).await? {
            return Ok(Json(outcome_json(&run, &outcome, None)));
        }
        if !crate::idempotency::dead_turn_pending(&state, &key).await
            || tokio::time::Instant::now() >= deadline
        {
            return Err(unknown_run(&run));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `POST .../runs/{run}/cancel`: asks the run to stop (`mode`, `timeout_ms`); 202.
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id, run)): ApiPath<(String, String, String)>,
    JsonBody(request): JsonBody<CancelRun>,
) -> Result<Response, ApiError> {
    principal.require(Scope::Chat)?;
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    let mode: CancelMode = match request.mode.as_deref() {
        None => CancelMode::IMMEDIATE,
        Some(m) => m
            .parse()
            .map_err(|e: agentweave_runtime::cancel::UnknownCancelMode| {
                ApiError::BadRequest(e.to_string())
            })?,
    };
    if mode.is_empty() {
        return Err(ApiError::BadRequest(
            "the cancel mode names no stop point: use immediate, after_model or after_tools".into(),
        ));
    }
    if let Some(queue) = state.queue_settings() {
        if let Some(answer) = crate::queue::cancel_queued(
            &state,
            queue,
            &served,
            &key,
            &run,
            mode,
            request.timeout_ms,
        )
        .await?
        {
            return Ok(answer);
        }
    }
    let run = run_of(&served, &key, &run)?;
    run.cancel(mode, request.timeout_ms.map(Duration::from_millis))
        .map_err(|e| match e {
            CancelError::Ended { .. } => ApiError::RunEnded(e.to_string()),
            other => ApiError::BadRequest(other.to_string()),
        })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "run_id": run.id(), "cancel_mode": mode })),
    )
        .into_response())
}

/// `POST .../runs/{run}/steer`: sends a message to the running turn, which takes it in at its
/// next safe point (after its tool calls, before the model is asked again; see
/// [`RunHandle::steer`](agentweave_runtime::RunHandle::steer)); 202. The scope is `chat`, as for
/// cancel; a run that has ended is a 409 `run_ended`. The run must be running in this process.
pub(crate) async fn steer_run(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id, run)): ApiPath<(String, String, String)>,
    JsonBody(request): JsonBody<SteerRun>,
) -> Result<Response, ApiError> {
    principal.require(Scope::Chat)?;
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    let limit = state.limits().max_message_bytes;
    if request.message.len() > limit {
        return Err(ApiError::BadRequest(format!(
            "the message has {} bytes; this server takes at most {limit} \
             (Limits::max_message_bytes)",
            request.message.len()
        )));
    }
    let run = run_of(&served, &key, &run)?;
    run.steer(Message::user(request.message))
        .map_err(|e| ApiError::RunEnded(e.to_string()))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "run_id": run.id(), "steered": true })),
    )
        .into_response())
}

/// `POST .../runs/{run}/resume`: continues a cancelled run as a new run (202, its id).
pub(crate) async fn resume_run(
    State(state): State<AppState>,
    request_id: RequestId,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath((flow, id, run)): ApiPath<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    use tracing::Instrument;
    principal.require(Scope::Chat)?;
    let (served, key) = key_of(&state, &flow, &tenant, &id)?;
    let mut run_id = None;
    if let Some(idem) = crate::idempotency::header_key(&headers)? {
        let keyed = crate::idempotency::keyed(
            &state,
            "Idempotency-Key",
            principal.id(),
            &key,
            &idem,
            &json!({"route": "runs_resume", "run": run}),
        )
        .await?;
        if keyed.again {
            if let Some(answer) = existing_run(&state, &served, &key, &keyed.run_id, false).await? {
                return Ok(answer);
            }
        }
        run_id = Some(keyed.run_id);
    }
    // Scope before existence, as for `/resume` (continuing a stop answers nothing: `chat`).
    served
        .approvals()
        .require_continue(&state, &key.store_id(), &principal)
        .await?;
    let run = run_of(&served, &key, &run)?;
    let permit = state.admit_run(&key.tenant, &key.store_id())?;
    let span = crate::turn::turn_span(
        &key.flow,
        &key.id,
        None,
        true,
        None,
        &request_id.0,
        principal.id(),
    );
    let again = TurnRequest::again(&run).map_err(|e| match e {
        RunError::Thread(e) => ApiError::from(e),
        other => ApiError::Conflict(other.to_string()),
    })?;
    // A run cancelled before its answers were recorded answers again: the one sending it
    // again answers, with the authority answering takes (never the stored answer's authority,
    // never nobody's); the engine checks it.
    let again = match run_id {
        Some(id) => again.run_id(id),
        None => again,
    };
    let next = served
        .runner()
        .start(again.by(&principal))
        .instrument(span.clone())
        .await?;
    span.record("run_id", next.id());
    hold_until_end(&next, permit);
    Ok((StatusCode::ACCEPTED, Json(info_json(&key.id, &next.info()))).into_response())
}
