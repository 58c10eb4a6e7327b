//! Runs over HTTP (`/v1/flows/{flow}/threads/{thread}/runs`): a turn started as a background
//! run answers its run id at once and runs as a task of the server, not of the request; any
//! client attaches to its events over SSE, from the start or after the `Last-Event-ID` it saw
//! last (each event has an `id:`), waits for its outcome, cancels it with a mode, steers it
//! with a message its turn takes in at the next safe point (`POST .../steer`), lists a
//! thread's runs. A message meeting a running run of its thread follows the request's
//! `multitask_strategy` (reject, enqueue, interrupt, rollback, steer).
//!
//! - `handlers`: the endpoints and their request bodies;
//! - `stream`: a run's events as Server-Sent Events with ids, and the `done` data.
//!
//! The library side is [`agentweave_runtime::RunHandle`]; the runs live in the flow's runner in this
//! process (several processes on one store share threads, not runs), unless the server has a
//! run queue: then a background run is queued, its events and cancel requests go through the
//! queue, and every process answers for it (see [`crate::queue`]).

mod handlers;
mod stream;

use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The run routes, for the authenticated part of `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/flows/{flow}/threads/{thread}/runs",
            post(handlers::create_run).get(handlers::list_runs),
        )
        .route(
            "/flows/{flow}/threads/{thread}/runs/{run}",
            get(handlers::get_run),
        )
        .route(
            "/flows/{flow}/threads/{thread}/runs/{run}/stream",
            get(handlers::stream_run),
        )
        .route(
            "/flows/{flow}/threads/{thread}/runs/{run}/wait",
            get(handlers::wait_run),
        )
        .route(
            "/flows/{flow}/threads/{thread}/runs/{run}/cancel",
            post(handlers::cancel_run),
        )
        .route(
            "/flows/{flow}/threads/{thread}/runs/{run}/steer",
            post(handlers::steer_run),
        )
        .route(
            "/flows/{flow}/threads/{thread}/runs/{run}/resume",
            post(handlers::resume_run),
        )
}

pub(crate) use handlers::{parse_strategy, run_of, start};
pub(crate) use stream::CancelOnDrop;
pub(crate) use stream::{event_parts, outcome_json, overtime};
