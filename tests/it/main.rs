//! The integration tests of the facade (agentflow): one test binary, a module per area. Each
//! test binary links the whole dependency graph, so one per crate keeps `cargo test` from
//! spending its time linking.
//! An area behind a feature is a `#[cfg(feature = ...)]` module here.

// The example's flow, which `readme` and `dsl_svg_browser` read (a file can be a module once).
#[allow(dead_code)]
#[path = "../../examples/customer_service.rs"]
mod customer_service;

#[cfg(feature = "a2a")]
mod a2a_remote;
mod custom_store;
mod dsl_api;
mod dsl_delegation;
mod dsl_guide_errors;
mod dsl_large;
mod dsl_lowering;
mod dsl_map_types;
mod dsl_pedantic;
mod dsl_resume;
mod dsl_skills;
mod dsl_svg_browser;
mod dsl_workflow;
#[cfg(feature = "eval")]
mod eval_typed;
#[cfg(feature = "otel")]
mod otel;
mod readme;
mod renamed_dependency;
mod strict_lints;
#[cfg(feature = "temporal")]
mod temporal_replay;
