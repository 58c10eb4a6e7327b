//! What a reader sees of the caller's threads, for the console and any UI: the list of its
//! threads of a flow, and one thread's timeline (its turns with their recorded events, the
//! user's input and the tokens each turn used), so that a page reloaded on a thread rebuilds
//! what it showed.
//!
//! | route | answer |
//! | --- | --- |
//! | `GET /v1/flows/{flow}/threads` | `{"threads": [{"thread", "turns", "updated_at_ms", "waiting", "running"}], "next_offset"}`, the newest first, a page at a time (`?limit=N&offset=M`, at most 100) |
//! | `GET /v1/flows/{flow}/threads/{thread}/timeline` (`?limit=N&offset=M`, at most 100 records) | `{"thread", "records": [{"turn", "resumed", "at_ms", "started_at", "input", "events", "end", "usage"}], "next_offset"}`; `end` is `{"status": "completed", "answered_by"}`, `{"status": "interrupted", "interrupts": N}`, `{"status": "stopped"}` (cancelled at a safe point) or `{"status": "fork_point", "step"}` (a fork made inside a turn, which its owner continues) |
//!
//! Both need `read`; a thread is the caller's tenant's. Events go out in their
//! [outward form](crate::outward::OutwardEvent); store keys, checkpoint ids and resume data
//! stay inside.

use agentweave_runtime::cancel::is_cancel_interrupt;
use agentweave_runtime::store::{RecordEnd, RecordStart, RecordedEvent, ThreadRecord};
use agentweave_runtime::{Role, Usage};
use axum::extract::State;
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde_json::{json, Value};

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::outward::{OutwardAction, OutwardEvent, OutwardMessage};
use crate::principal::{Principal, Scope};
use crate::state::AppState;
use crate::thread::ThreadKey;

/// The routes, for the authenticated part of `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/flows/{flow}/threads", get(list_threads))
        .route("/flows/{flow}/threads/{thread}/timeline", get(timeline))
}

/// `GET /v1/flows/{flow}/threads`: the caller's threads of the flow, the most recently
/// updated first: each with its number of turns, when its last record was written, how many
/// interrupts it waits on (a stop at a safe point is none) and whether a run of it is going in
/// this server.
async fn list_threads(
    State(state): State<AppState>,
    principal: Principal,
    Extension(tenant): Extension<Tenant>,
    ApiPath(flow): ApiPath<String>,
    page: Result<
        axum::extract::Query<crate::paging::PageQuery>,
        axum::extract::rejection::QueryRejection,
    >,
) -> Result<Json<Value>, ApiError> {
    principal.require(Scope::Read)?;
    let page = crate::paging::PageQuery::of(page)?;
    let served = state.flow(&flow)?;
    let prefix = ThreadKey::prefix(served.name(), &tenant.0);
    let mut threads = Vec::new();
    for store_id in state.threads().list().await? {
        let Some(thread) = store_id.strip_prefix(&prefix) else {
            continue;
        };
        let Some(head) = state.threads().head(&store_id).await? else {
            continue;
        };
        let waiting = match &head.last.end {
            // A fork point asks nobody anything: its owner continues it.
            end if agentweave_runtime::fork_point_step(end).is_some() => 0,
            RecordEnd::Interrupted { interrupts, .. } => interrupts
                .iter()
                .filter(|i| !is_cancel_interrupt(i))
                .count(),
            RecordEnd::Completed { .. } => 0,
        };
        let running = served
            .runner()
            .thread(&store_id)
            .runs()
            .iter()
            .any(|r| !r.status.is_final());
        threads.push((
            head.last.at_ms,
            json!({
                "thread": thread,
                "turns": head.turns,
                "updated_at_ms": head.last.at_ms,
                "waiting": waiting,
                "running": running,
            }),
        ));
    }
    threads.sort_by_key(|t| std::cmp::Reverse(t.0));
    let threads: Vec<Value> = threads.into_iter().map(|(_, t)| t).collect();
    let (threads, next) = page.cut(threads, crate::paging::MAX_PAGE);
    Ok(Json(json!({ "threads": threads, "next_offset": next })))
}

/// `GET /v1/flows/{flow}/threads/{thread}/timeline`: the thread's records, oldest first, each
/// a turn or the resume of one, with the events it recorded; a page at a time
/// (`?limit=N&offset=M`, at most [`MAX_PAGE`](crate::paging::MAX_PAGE) records; `next_offset`
/// while more follow).
async fn timeline(
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
    let served = state.flow(&flow)?;
    let key = ThreadKey::new(served.name(), &tenant.0, &id)?;
    let records = served.runner().thread(&key.store_id()).records().await?;
    if records.is_empty() {
        return Err(ApiError::UnknownThread { flow, id: key.id });
    }
    // A values step (`update_state`) is no part of the conversation: the thread's history
    // (`GET .../history`) lists it.
    let records: Vec<&ThreadRecord> = records
        .iter()
        .filter(|r| !matches!(r.start, RecordStart::Values { .. }))
        .collect();
    let (records, next) = page.cut(records, crate::paging::MAX_PAGE);
    let records: Vec<Value> = records.into_iter().map(record_json).collect();
    Ok(Json(
        json!({ "thread": key.id, "records": records, "next_offset": next }),
    ))
}

/// One record as the timeline shows it.
fn record_json(record: &ThreadRecord) -> Value {
    let (resumed, input): (bool, Vec<&str>) = match &record.start {
        RecordStart::Turn { input } => (
            false,
            input
                .iter()
                .filter(|m| m.role == Role::User)
                .map(|m| m.content.as_str())
                .collect(),
        ),
        RecordStart::Resume { .. } | RecordStart::Values { .. } => (true, Vec::new()),
    };
    let end = match &record.end {
        RecordEnd::Completed { answered_by } => {
            json!({ "status": "completed", "answered_by": answered_by })
        }
        end if agentweave_runtime::fork_point_step(end).is_some() => json!({
            "status": "fork_point",
            "step": agentweave_runtime::fork_point_step(end),
        }),
        // A turn cancelled at a safe point is recorded with cancel interrupts only.
        RecordEnd::Interrupted { interrupts, .. } if interrupts.iter().all(is_cancel_interrupt) => {
            json!({ "status": "stopped" })
        }
        RecordEnd::Interrupted { interrupts, .. } => json!({
            "status": "interrupted",
            "interrupts": interrupts.iter().filter(|i| !is_cancel_interrupt(i)).count(),
        }),
    };
    let events: Vec<OutwardEvent<'_>> = record.events.iter().map(outward).collect();
    json!({
        "turn": record.turn,
        "resumed": resumed,
        "at_ms": record.at_ms,
        "started_at": record.started_at,
        "input": input,
        "events": events,
        "end": end,
        "usage": usage_of(&record.events),
    })
}

/// A recorded event in its outward form.
pub(crate) fn outward(event: &RecordedEvent) -> OutwardEvent<'_> {
    OutwardEvent {
        agent_name: &event.agent_name,
        run_path: &event.run_path,
        message: event.message.as_ref().map(OutwardMessage::of),
        streamed: false,
        custom: None,
        action: event.action.as_ref().map(OutwardAction::of),
        error: None,
    }
}

/// The tokens the record's model calls used (the sum of its messages' usage).
fn usage_of(events: &[RecordedEvent]) -> Usage {
    let mut total = Usage::new(0, 0);
    for usage in events
        .iter()
        .filter_map(|e| e.message.as_ref()?.usage.as_deref())
    {
        total.input_tokens += usage.input_tokens;
        total.output_tokens += usage.output_tokens;
    }
    total
}
