//! Any served flow as an A2A agent (Agent2Agent protocol 1.0, JSON-RPC binding).
//!
//! | method and path | what it does |
//! | --- | --- |
//! | `GET /a2a/{flow}/.well-known/agent-card.json` | the flow's agent card (no auth): name, the root agent's description, one skill per agent, the bearer scheme, streaming |
//! | `GET /.well-known/agent-card.json` | the card of the server's only flow |
//! | `POST /a2a/{flow}` | JSON-RPC: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask` (same auth, tenants and limits as `/v1`) |
//!
//! An A2A `contextId` is an agentflow thread, a task is one turn of it (`CONTEXT.TURN`); an
//! interrupt is the state `input-required` (its question in the status message) and the
//! client's next message in the context answers it (the turn resumes); the turn's answer is
//! the artifact `answer`. The agent's plan (the kit's `write_plan`, thread value `kit.plan`) is
//! the artifact `plan`, sent again each time the agent rewrites it (each version replaces the
//! one before: a data part `{"steps": [{"step", "status"}]}` and a text checklist). An approval (an interrupt whose info has `approval`, as a tool
//! approval's has) takes `{"approve": BOOL, "reason"?}` as data, or the text
//! `approve` or `deny` (also `yes`/`no`); any other text is refused with the accepted answers,
//! and the input-required message's data part states them (`answer` of each interrupt). Each message's metadata names its agent and run path
//! (`{"agentflow": {"agent", "runPath"}}`).
//!
//! Files:
//! - `card`: the agent card of a flow.
//! - `map`: every mapping between agentflow and A2A (events, interrupts, resume data, errors).
//! - `tasks`: the tasks of this process (a turn run apart from the request, its updates).
//! - `push`: push notifications: webhook configurations per task, told when the task ends or
//!   waits for input.
//! - `rpc`: the JSON-RPC endpoint and the card handlers.
//! - `validate`: the parameter checks A2A asks that a lenient reading would let through.

mod card;
mod map;
mod push;
mod rpc;
mod tasks;
mod validate;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The A2A routes, to merge into the server's router.
pub(crate) fn router<S>(state: &AppState) -> Router<S> {
    let a2a = rpc::A2aState {
        app: state.clone(),
        tasks: Arc::new(tasks::Tasks::new(
            state.webhook_secret().map(<[u8]>::to_vec),
            state.outbound().clone(),
        )),
    };
    let authenticated = Router::new()
        .route("/a2a/{flow}", post(rpc::endpoint))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::authenticate,
        ));
    Router::new()
        .route("/.well-known/agent-card.json", get(rpc::root_card))
        .route(
            "/a2a/{flow}/.well-known/agent-card.json",
            get(rpc::flow_card),
        )
        .merge(authenticated)
        .with_state(a2a)
}
