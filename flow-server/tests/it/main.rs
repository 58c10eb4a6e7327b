//! The integration tests of agentweave-server: one test binary, a module per area. Each test binary
//! links the whole dependency graph, so one per crate keeps `cargo test` from spending its
//! time linking.
//! The files left in `tests/` are binaries of their own, each saying why at its top.
//! What the tests share is in `tests/common` ([`common`]).

#[path = "../common/mod.rs"]
mod common;

mod a2a;
mod a2a_letter;
mod agui;
mod agui_ids;
mod authority;
mod authority_doors;
mod bounded_reads;
mod browser;
mod budget_code;
mod delete_after_flood;
mod delete_after_run;
mod failed_streams;
mod http;
mod idempotency;
mod jwt;
mod langgraph_letter;
mod langgraph_sdk;
#[cfg(feature = "mcp")]
mod mcp_serve;
mod memory_routes;
mod outbound;
mod outward;
mod queued_runs;
mod run_flood;
mod runner_config;
mod runs;
mod scale_out;
mod schedules;
#[cfg(feature = "temporal")]
mod temporal;
#[cfg(feature = "temporal")]
#[path = "../common/temporal.rs"]
mod temporal_support;
mod thread_views;
mod time_travel;
mod tool_approvals;
mod tool_progress;
mod turn_flood;
mod usage_report;
mod webhooks;
