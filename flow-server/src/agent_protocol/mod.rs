//! The Agent Protocol shape of threads and runs that LangGraph's clients speak
//! (`langgraph-sdk`), served under `/v1` beside the native API: a served flow is an
//! "assistant" (its `assistant_id` is the flow's name), a thread is the flow's thread, a run is
//! a [`RunHandle`](flow_runtime::RunHandle) of the flow's runner.
//!
//! - `handlers`: the endpoints (assistants: search, get, graph, schemas; threads: create,
//!   get, delete, search, copy; thread
//!   state, its update and history; runs: create, stream, wait, join, join the stream,
//!   cancel, list);
//! - `convert`: agentflow's messages and records in the protocol's JSON (LangChain message
//!   dicts, thread state);
//! - `modes`: the stream modes (`values`, `updates`, `messages`, `messages-tuple`, `events`,
//!   `debug`, `custom`, `tasks`, `checkpoints`, with or without subgraphs) and their events.
//!
//! Which flow a thread belongs to is learnt from its first run (or found in the store); thread
//! metadata given at creation (at most 16 KiB of JSON) is kept in the journal store beside the
//! thread, never in this process's memory, and removed with it.

mod convert;
mod handlers;
mod modes;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::state::AppState;

/// The Agent Protocol routes, for the authenticated part of `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/assistants/search", post(handlers::search_assistants))
        .route("/assistants/{assistant}", get(handlers::get_assistant))
        .route(
            "/assistants/{assistant}/graph",
            get(handlers::assistant_graph),
        )
        .route(
            "/assistants/{assistant}/schemas",
            get(handlers::assistant_schemas),
        )
        .route("/threads/{thread}/copy", post(handlers::copy_thread))
        .route("/threads", post(handlers::create_thread))
        .route(
            "/threads/{thread}",
            get(handlers::get_thread).delete(handlers::delete_thread),
        )
        .route("/threads/search", post(handlers::search_threads))
        .route(
            "/threads/{thread}/state",
            get(handlers::thread_state).post(handlers::update_state),
        )
        .route("/threads/{thread}/history", post(handlers::thread_history))
        .route(
            "/threads/{thread}/runs",
            post(handlers::create_run).get(handlers::list_runs),
        )
        .route(
            "/threads/{thread}/runs/stream",
            post(handlers::stream_new_run),
        )
        .route("/threads/{thread}/runs/wait", post(handlers::wait_new_run))
        .route("/threads/{thread}/runs/{run}", get(handlers::get_run))
        .route("/threads/{thread}/runs/{run}/join", get(handlers::join_run))
        .route(
            "/threads/{thread}/runs/{run}/stream",
            get(handlers::join_stream),
        )
        .route(
            "/threads/{thread}/runs/{run}/cancel",
            post(handlers::cancel_run),
        )
        .layer(Extension(Arc::new(handlers::Threads::default())))
}
