//! The integration tests of agentweave-runtime: one test binary, a module per area. Each test binary
//! links the whole dependency graph, so one per crate keeps `cargo test` from spending its
//! time linking.
//! An area behind a feature is a `#[cfg(feature = ...)]` module here.
//! The files left in `tests/` are binaries of their own, each saying why at its top.
//! What the tests share is in `tests/support` ([`support`]).

#[path = "../support/mod.rs"]
mod support;

mod agent_tool;
mod answer_rule;
#[cfg(feature = "anthropic")]
mod anthropic;
mod batch_claims;
mod budgets;
mod capacity;
mod chat_agent;
mod chat_agent_features;
mod conformance;
mod context_budget;
mod custom_wrapper;
mod durable_turns;
mod event_json;
mod event_printer;
mod file_store_format;
mod flow;
mod frontend_tools;
mod genai_spans;
mod housekeeping;
mod journal;
mod map;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_auth;
#[cfg(feature = "mcp")]
mod mcp_elicitation;
#[cfg(feature = "mcp")]
mod mcp_http_bounds;
#[cfg(feature = "mcp")]
mod mcp_outbound;
#[cfg(feature = "http")]
mod memory_embedder;
mod memory_extract;
mod memory_recall;
mod memory_store;
mod memory_tools;
mod middleware;
mod multimodal;
#[cfg(feature = "openai")]
mod openai_compat;
mod recover;
mod reliability_cancel;
mod reliability_faults;
mod reliability_hostile;
mod reliability_load;
mod reliability_props;
mod reliability_security;
mod replay_props;
mod resume_props;
mod run_flood;
mod run_queue;
mod runs;
mod schedule_store;
mod sealed_store;
mod spending;
mod steer;
mod store_contract;
mod stream;
mod streaming_tools;
mod structured_output;
mod thread_values;
mod time_travel;
mod tool_interrupt;
mod tool_interrupt_orders;
mod tracing_spans;
mod usage;
mod workflow;
