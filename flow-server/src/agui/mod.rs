//! Any served flow as an AG-UI agent, for front ends that speak AG-UI (CopilotKit and others,
//! through `@ag-ui/client`'s `HttpAgent`).
//!
//! | method and path | what it does |
//! | --- | --- |
//! | `POST /agui/{flow}` | body AG-UI's `RunAgentInput`: runs one turn of thread `threadId` from the last user message, or resumes the thread's interrupts with the `resume` entries; answers the run as AG-UI events (SSE) |
//!
//! The run's events: `RUN_STARTED`; `STATE_SNAPSHOT` (the run's session values in their
//! [outward form](crate::outward::OutwardValues), and under `agentweave` the agent in charge,
//! its run path and the turn) and a `STATE_DELTA` (JSON Patch) whenever the agents change a
//! value or another agent takes over; `TEXT_MESSAGE_START/CONTENT/END` for what
//! agents say (one `CONTENT` per streamed chunk); `TOOL_CALL_START/ARGS/END` for their tool
//! calls and `TOOL_CALL_RESULT` for the results; `CUSTOM` `agentflow.transfer` and
//! `agentflow.interrupt`; then `RUN_FINISHED` (outcome `success` with the answer as `result`,
//! or `interrupt` listing what the thread waits on) or `RUN_ERROR`. Each event's metadata names
//! its agent and run path (`{"agentflow": {"agent", "runPath"}}`). Same auth, tenants and
//! limits as `/v1`.
//!
//! The shared state goes both ways: the members of the input's `state` (but `agentweave`)
//! become session values of the run before its first agent starts, so a client that sends
//! back the state it got (as `HttpAgent` does) carries the values from one run to the next.
//!
//! Front-end tools: the input's `tools` join every LLM agent's tools for the run
//! ([`RunOptions::frontend_tools`](agentweave_runtime::RunOptions::frontend_tools)), and an agent
//! may be given a [`FrontendTool`] at build time; either way an agent calls it like any tool; the call goes to
//! the client (`TOOL_CALL_*`, then `RUN_FINISHED` with the call in `pendingToolCallIds`), and
//! the client's next run answers it with a `tool` message for that call id. Tool call ids are
//! unique within a run whatever the models send (a repeated one goes out as `ID~2`...), and a
//! front-end tool's result is matched back under the id its call went out with.
//!
//! Files:
//! - `map`: every mapping between agentflow and AG-UI.
//! - `call_ids`: tool call ids unique within a run.
//! - `frontend_tool`: `FrontendTool`, a tool whose calls the front end answers.
//! - `run`: the endpoint.

mod call_ids;
mod frontend_tool;
mod map;
mod run;

pub use frontend_tool::FrontendTool;

use axum::routing::post;
use axum::Router;

use crate::state::AppState;

/// The AG-UI routes, to merge into the server's router.
pub(crate) fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/agui/{flow}", post(run::run))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::authenticate,
        ))
}
