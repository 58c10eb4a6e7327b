//! Middleware: code that runs around agent runs, model calls and tool calls, to observe them,
//! change them, or answer in their place ([`Middleware`], [`HookContext`]), and the errors a
//! hook reports.

pub use agentweave_runtime::middleware::*;
