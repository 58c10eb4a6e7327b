//! Serve agentflow flows over HTTP: a JSON API under `/v1`, each conversation turn streamed as
//! Server-Sent Events, and an embedded web console at `/`.
//!
//! [`app`] builds the [`Router`] from an [`AppState`] (the flows, the store, the auth); [`serve`]
//! runs it on a listener. Keeping the two apart lets a test bind the same router to port 0 and
//! talk to it with a real HTTP client.
//!
//! ```no_run
//! use flow_runtime::{FileStore, FlowAgent, FnAgent};
//! use flow_server::{AppState, Auth};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let bot = FnAgent::new("bot", |cx, input| async move {
//!     cx.say(format!("you said: {}", input.messages.last().unwrap().content));
//!     Ok(())
//! });
//! let state = AppState::builder(FileStore::open_default()?)
//!     .flow("echo", FlowAgent::new(bot))
//!     .auth(Auth::bearer(std::env::var("AGENTFLOW_TOKEN")?))
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
//! flow_server::serve(listener, state).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Endpoints
//!
//! | method and path | scope | what it does |
//! | --- | --- | --- |
//! | `GET /v1/health` | none | `{"status":"ok"}` while the process runs (no auth) |
//! | `GET /v1/ready` | none | `{"status":"ready"}` when the store answers, else 503 (no auth) |
//! | `GET /v1/me` | any | who the caller is: `{"id", "tenant", "scopes"}` (the console shows Approve buttons to `approve` only) |
//! | `GET /v1/flows` | `read`, `chat` or `approve` | the served flows: name, root agent, description |
//! | `GET /v1/flows/{flow}` | `read`, `chat` or `approve` | one flow: its tree (`tree`, nested `{name, description, no_parent, transfers, children}`) and `mermaid` |
//! | `GET /v1/flows/{flow}/mermaid` | `read`, `chat` or `approve` | the tree as a Mermaid flowchart (`text/vnd.mermaid`) |
//! | `GET /v1/flows/{flow}/svg` | `read`, `chat` or `approve` | the tree as a standalone SVG picture (`image/svg+xml`) |
//! | `POST /v1/flows/{flow}/threads/{thread}/turns` | `chat` | body `{"message": TEXT}`: runs one turn, answers `text/event-stream` (see [`wire`]); 409 while the thread waits for an approval |
//! | `GET /v1/flows/{flow}/threads/{thread}` | `read` | the thread: `turns`, `messages` (`{turn, agent, run_path, message}`, the user's and every agent's), `pending` interrupts, `approvals` ([`ApprovalRecord`]: who answered what, when, for whom) |
//! | `GET /v1/flows/{flow}/threads` | `read` | the caller's threads of the flow, newest first: `{thread, turns, updated_at_ms, waiting, running}` |
//! | `GET /v1/flows/{flow}/threads/{thread}/timeline` | `read` | a page (`?limit=N&offset=M`, at most 100; `next_offset`) of the thread's records (turns and resumes) with their outward events, the user's input and the tokens used: what the console rebuilds a reloaded page from |
//! | `DELETE /v1/flows/{flow}/threads/{thread}` | `chat` | deletes the thread and the checkpoint it waits on (204) |
//! | `GET /v1/flows/{flow}/threads/{thread}/history` | `read` | the thread's steps (`{id, parent, turn, agent, run_path, kind, at_ms}`: inputs, model replies, tool results, transfers, interrupts), the ids a fork takes |
//! | `POST /v1/flows/{flow}/threads/{thread}/fork` | `chat` | body `{"at_step": N, "thread": NEW}`: copies the thread up to step N into the new thread (201, `end`: `turn_end`, `interrupt` or `fork_point`); the original is untouched; 409 if NEW exists |
//! | `GET /v1/flows/{flow}/threads/{thread}/interrupts` | `read` or `approve` | the interrupts the thread waits on: `{thread, turn, id, info, address}`, paged as the timeline |
//! | `GET /v1/flows/{flow}/interrupts` | `read` or `approve` | every interrupt the caller's tenant's threads of the flow wait on (the approvals queue), paged as the timeline |
//! | `POST /v1/flows/{flow}/threads/{thread}/resume` | `approve` (or the flow's [`Approvals`]) | body `{"interrupt_id": ID, "data": VALUE}` or `{"targets": {ID: VALUE}}`: resumes, streamed like a turn; a second resume gets 409; the answer is recorded with who gave it |
//! | `GET /a2a/{flow}/.well-known/agent-card.json`, `POST /a2a/{flow}` | card: none; JSON-RPC: `chat` (`approve` to answer an input-required) | the flow as an A2A 1.0 agent: its card (no auth), JSON-RPC `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask` (a context is a thread, a task a turn, an interrupt `input-required`) |
//! | `POST /agui/{flow}` | `chat` (`approve` to resume) | the flow as an AG-UI agent: AG-UI's `RunAgentInput` in, the turn (or the resume) as AG-UI events out; front-end tools through [`FrontendTool`] |
//! | `GET /` | none | the web console |
//!
//! `admin` allows everything. A missing scope is 403 naming it; nothing runs.
//!
//! Every route that starts a turn or a run takes an `Idempotency-Key` header (A2A: the
//! message's `messageId`; AG-UI: the input's `runId`): a request sent again with its key gets
//! the run it started, never a second one; the same key with another request is 422
//! `idempotency_key_reused`. Turns are journaled ([`ServerBuilder::durability`], `Sync` by
//! default), and [`serve_until`] finishes the turns whose process died
//! ([`recover_dead_turns`]). The guide's chapter on runs says how, and how long keys are kept.
//!
//! Errors are `{"error": {"code", "message"}}` with the status of their [`ApiError`]; a failure
//! inside the server adds `correlation_id` (see [`outward`]).
//!
//! # Safety
//!
//! - Every `/v1` endpoint but health and readiness needs `Authorization: Bearer <token>`
//!   ([`Auth::bearer`]) or passes your [`Authenticator`]. Without auth ([`ServerBuilder::dev_mode`])
//!   [`serve`] listens on loopback addresses only and the API answers loopback peers only.
//! - [`Limits`]: request body size (413) and the time to send it (408), user message size,
//!   SSE event size; the time to send a request's head and its size (slow or idle connections
//!   are closed, a head over the limit gets 431); open connections and concurrent turns (503
//!   `overloaded` with `Retry-After`); how long one turn may stream.
//! - Every refusal is a JSON error with a stable code, malformed paths, bodies, content types
//!   and methods included (400, 415, 405); 401 says `WWW-Authenticate: Bearer`.
//! - No CORS headers unless you list origins ([`ServerBuilder::cors_origins`]): browsers on other
//!   sites cannot call the API.
//! - Errors carry no stack trace, file path or I/O error text; a panic in a handler is a JSON 500.
//! - With a tenant function ([`ServerBuilder::tenant`]), threads are stored per tenant: one
//!   tenant's thread id never reaches another tenant's thread (404).
//! - The server keeps nothing in memory between requests: threads and checkpoints live in the
//!   store, so several server processes on one store are one service.
#![warn(missing_docs)]

// Layout (one concept per file):
// - `lib.rs`: `app()` (the router) and the auth layer in front of its `/v1` routes.
// - `auth`: who may call the API (`Auth`, `Authenticator`, bearer tokens) and the `Tenant`.
// - `access`: one access-log line per request (request id, method, path, status, principal).
// - `approvals`: who may answer a flow's interrupts (`Approvals`) and the record of answers.
// - `jwt`: JWT bearer authentication (`JwtAuth`: JWKS keys, issuer, audience, scope claim).
// - `principal`: who is calling (`Principal`: id, tenant, `Scopes`) and its extractor.
// - `state`: `AppState`, the flows, store and settings the handlers share, and its builder.
// - `limits`: `Limits`, what a request, a connection or a turn may take.
// - `error`: `ApiError`, every way a request fails as one JSON response.
// - `extract`: the request extractors (`JsonBody`, `ApiPath`) that fail as `ApiError`.
// - `routes`: the handlers of the `/v1` API.
// - `agent_protocol/`: the Agent Protocol (LangGraph clients) under /v1: threads, runs.
// - `queue/`: many servers, one queue: background runs in the store's run queue, the workers.
// - `recovery`: at start-up, the turns whose process died are recovered and recorded.
// - `idempotency`: `Idempotency-Key` (and A2A `messageId`, AG-UI `runId`) as run ids.
// - `runs/`: runs over HTTP (background runs, SSE attach with Last-Event-ID, wait, cancel).
// - `thread`: where a caller's thread lives in the store (`FLOW.TENANT.THREAD`).
// - `thread_views`: the caller's threads of a flow and one thread's timeline (for the console).
// - `turn`: a turn or resume of a thread as a stream of Server-Sent Events.
// - `sse`: the streamed response body (SSE frames, keep-alive, the streaming time limit).
// - `outward`: the one allow-listed outward form of events, messages, interrupts and errors
//   (public errors with correlation ids), used by every transport.
// - `wire`: the SSE events' table (public: clients read it), built from `outward`.
// - `webhooks`: a run's end POSTed, signed, to the URL it named.
// - `tree`: a flow's tree as JSON, Mermaid and SVG.
// - `console` (+ `console/`): the embedded web console's static files.
// - `serve`: the accept loop with the per-connection limits.
// - `a2a`: every served flow as an A2A agent (card, JSON-RPC endpoint, tasks).
// - `agui`: every served flow as an AG-UI agent (a run streamed as AG-UI events).
// - `demo`: the offline customer-service desk the example, tests and bench serve.
// - `bin/flow-server-demo.rs`: serves the demo.

mod a2a;
mod access;
mod agent_protocol;
mod agui;
mod approvals;
mod auth;
mod console;
pub mod demo;
mod error;
mod extract;
mod idempotency;
mod jwt;
mod limits;
pub mod outward;
mod paging;
mod principal;
mod queue;
mod recovery;
mod routes;
mod run_slots;
mod runs;
mod serve;
mod sse;
mod state;
mod thread;
mod thread_views;
mod time_travel;
mod tree;
mod turn;
pub mod webhooks;
pub mod wire;

use std::net::SocketAddr;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::routing::post;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::CorsLayer;
use tower_http::trace::TraceLayer;

pub use access::RequestId;
pub use agui::FrontendTool;
pub use approvals::{ApprovalRecord, Approvals};
pub use auth::{bearer_token, Auth, Authenticator, Tenant, SHARED_TENANT};
pub use error::ApiError;
pub use jwt::{JwtAuth, JwtConfigError};
pub use limits::Limits;
pub use principal::{Principal, Scope, Scopes};
pub use queue::{run_workers, QueueOptions, Workers};
pub use recovery::{recover_dead_turns, RecoveryReport};
pub use serve::{serve, serve_until};
pub use state::{AppState, BuildError, RunnerFn, ServedFlow, ServerBuilder, TenantFn};
pub use thread::{store_thread_id, valid_thread_id};
pub use tree::{mermaid, svg, TreeNode};

/// The router serving `state`: the `/v1` API and the console.
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/me", get(routes::me))
        .route("/flows", get(routes::list_flows))
        .route("/flows/{flow}", get(routes::get_flow))
        .route("/flows/{flow}/mermaid", get(routes::get_mermaid))
        .route("/flows/{flow}/svg", get(routes::get_svg))
        .route(
            "/flows/{flow}/threads/{thread}",
            get(routes::get_thread).delete(routes::delete_thread),
        )
        .route(
            "/flows/{flow}/threads/{thread}/turns",
            post(routes::post_turn),
        )
        .route(
            "/flows/{flow}/threads/{thread}/resume",
            post(routes::post_resume),
        )
        .route("/flows/{flow}/interrupts", get(routes::flow_interrupts))
        .route(
            "/flows/{flow}/threads/{thread}/interrupts",
            get(routes::thread_interrupts),
        )
        .merge(runs::routes())
        .merge(thread_views::routes())
        .merge(time_travel::routes())
        .merge(agent_protocol::routes())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authenticate,
        ))
        .route("/health", get(routes::health))
        .route("/ready", get(routes::ready))
        .method_not_allowed_fallback(routes::method_not_allowed);

    let mut router = Router::new()
        .route("/", get(console::index))
        .route("/console.js", get(console::script))
        .route("/console.css", get(console::style))
        .nest("/v1", api)
        .merge(a2a::router(&state))
        .merge(agui::router(&state))
        .method_not_allowed_fallback(routes::method_not_allowed)
        .fallback(routes::no_route)
        .layer(DefaultBodyLimit::max(state.limits().max_body_bytes))
        .layer(CatchPanicLayer::custom(|_panic| {
            ApiError::Incident(outward::PublicError::internal(
                &"a request handler panicked",
            ))
            .into_response()
        }))
        // The request's span names its path, never its query string (where a client may have
        // put a token).
        .layer(TraceLayer::new_for_http().make_span_with(
            |request: &axum::http::Request<axum::body::Body>| {
                tracing::debug_span!(
                    "request",
                    method = %request.method(),
                    path = %request.uri().path(),
                    version = ?request.version(),
                )
            },
        ))
        .layer(axum::middleware::from_fn(access::access_log));
    if !state.cors_origins().is_empty() {
        router = router.layer(
            CorsLayer::new()
                .allow_origin(state.cors_origins().to_vec())
                .allow_methods([Method::GET, Method::POST, Method::DELETE])
                .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE]),
        );
    }
    router.with_state(state)
}

/// The middleware in front of the authenticated routes: authenticates the request into a
/// [`Principal`], resolves its [`Tenant`], and puts both in the request's extensions (handlers
/// take them as `Principal` and `Extension<Tenant>`, and check their scope with
/// [`Principal::require`]). A router of another protocol mounted beside `/v1` puts its routes
/// behind it with `route_layer(axum::middleware::from_fn_with_state(state, authenticate))`.
pub async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let principal = match state.auth().check(&parts) {
        Ok(p) => p,
        Err(e) => return refused(&parts, e),
    };
    let tenant = match state.tenant_for(&principal, &parts) {
        Ok(t) => t,
        Err(e) => return refused(&parts, e),
    };
    if let Some(slot) = parts.extensions.get::<access::PrincipalSlot>() {
        *slot.0.lock().expect("principal slot") = Some(principal.id().into());
    }
    parts.extensions.insert(Tenant(tenant));
    parts.extensions.insert(principal);
    next.run(Request::from_parts(parts, body)).await
}

/// A refused request's answer. Its body is never read, so the connection cannot carry another
/// request after it: a request that has a body is told `Connection: close` (and the
/// connection is closed), rather than finding it closed without a word.
fn refused(parts: &axum::http::request::Parts, error: ApiError) -> Response {
    let mut response = error.into_response();
    let has_body = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || parts.headers.contains_key(header::TRANSFER_ENCODING);
    if has_body {
        response.headers_mut().insert(
            header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    response
}

/// Why [`serve`] stopped or did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Dev mode (no authentication) on an address others can reach.
    #[error(
        "refusing to serve without authentication on {addr}: dev mode listens on loopback \
         addresses only (127.0.0.1 or ::1); configure Auth::bearer to serve elsewhere"
    )]
    DevModeNotLoopback {
        /// The listener's address.
        addr: SocketAddr,
    },
    /// The listener failed.
    #[error("the listener failed: {0}")]
    Io(#[from] std::io::Error),
}
