//! The Agent Protocol shape of threads and runs that LangGraph's clients speak
//! (`langgraph-sdk`), served under `/v1` beside the native API: a served flow is an
//! "assistant" (its `assistant_id` is the flow's name), a thread is the flow's thread, a run is
//! a [`RunHandle`](agentweave_runtime::RunHandle) of the flow's runner.
//!
//! - `assistants`: the served flows as assistants (search, get, graph, schemas);
//! - `handlers`: the callers, the threads' own facts, and the endpoints of threads (create,
//!   get, delete, state) and runs (create, stream, wait, join, join the stream, cancel, list);
//! - `thread_state`: a thread's history (a state per checkpoint), its update, its copy, and
//!   the search over threads;
//! - `convert`: agentflow's messages and records in the protocol's JSON (LangChain message
//!   dicts, thread state);
//! - `crons`: the `runs/crons` routes (LangGraph's crons, over the server's schedules, see
//!   [`crate::schedules`]);
//! - `store`: the `store` routes (items and namespaces of long-term memory, see
//!   [`crate::memory`]);
//! - `modes`: the stream modes (`values`, `updates`, `messages`, `messages-tuple`, `events`,
//!   `debug`, `custom`, `tasks`, `checkpoints`, with or without subgraphs) and their events.
//!
//! Which flow a thread belongs to is learnt from its first run (or found in the store); thread
//! metadata given at creation (at most 16 KiB of JSON) is kept in the journal store beside the
//! thread, never in this process's memory, and removed with it.

mod assistants;
mod convert;
mod crons;
mod handlers;
mod modes;
mod store;
mod thread_state;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::state::AppState;

/// The Agent Protocol routes, for the authenticated part of `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/assistants/search", post(assistants::search_assistants))
        .route("/assistants/{assistant}", get(assistants::get_assistant))
        .route(
            "/assistants/{assistant}/graph",
            get(assistants::assistant_graph),
        )
        .route(
            "/assistants/{assistant}/schemas",
            get(assistants::assistant_schemas),
        )
        .route("/threads/{thread}/copy", post(thread_state::copy_thread))
        .route("/threads", post(handlers::create_thread))
        .route(
            "/threads/{thread}",
            get(handlers::get_thread).delete(handlers::delete_thread),
        )
        .route("/threads/search", post(thread_state::search_threads))
        .route(
            "/threads/{thread}/state",
            get(handlers::thread_state).post(thread_state::update_state),
        )
        .route(
            "/threads/{thread}/history",
            post(thread_state::thread_history),
        )
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
        .route(
            "/store/items",
            get(store::get_item)
                .put(store::put_item)
                .delete(store::delete_item),
        )
        .route("/store/items/search", post(store::search_items))
        .route("/runs/crons", post(crons::create_cron))
        .route(
            "/threads/{thread}/runs/crons",
            post(crons::create_thread_cron),
        )
        .route("/runs/crons/search", post(crons::search_crons))
        .route("/runs/crons/count", post(crons::count_crons))
        .route(
            "/runs/crons/{cron}",
            axum::routing::patch(crons::update_cron).delete(crons::delete_cron),
        )
        .route("/store/namespaces", post(store::list_namespaces))
        .layer(Extension(Arc::new(handlers::Threads::default())))
}
