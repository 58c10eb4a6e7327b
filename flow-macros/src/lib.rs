//! Procedural macros of agentflow: `#[agent]` and `flow!`.
//!
//! Use them through the `agentweave` facade (`agentweave::agent`, `agentweave::flow!`), which
//! documents them with examples; generated code names only `::agentweave::__private` (or the
//! path the facade passes in), never this crate or the runtime directly.
//!
//! Layout: [`agent`] expands `#[agent]`; `flow` expands `flow!` in four stages, `parse` (the
//! syntax) -> `tree` (the nodes, flattened, their options checked by `attr`) -> `validate` (the
//! tree's rules, errors collected in `ctxt`) -> `lower` (tokens out), with `docs` writing the
//! generated rustdoc. `skills` checks and embeds the skill folders both macros name.

mod agent;
mod ctxt;
mod flow;
mod manifest;
mod names;
mod skills;
#[cfg(test)]
mod snapshot_tests;
mod target;

use proc_macro::TokenStream;

/// Turns an async fn, a struct, or a struct's impl block into an agent type.
///
/// See the `agentweave` facade's documentation of `agent` for the forms, the options and
/// examples.
#[proc_macro_attribute]
pub fn agent(args: TokenStream, item: TokenStream) -> TokenStream {
    agent::expand(args.into(), item.into()).into()
}

/// The implementation of `agentweave::flow!`: takes the facade's path, a `;`, then the flow.
/// Use `agentweave::flow!`, which passes its own path so a renamed dependency still works.
#[doc(hidden)]
#[proc_macro]
pub fn __flow(input: TokenStream) -> TokenStream {
    flow::expand(input.into()).into()
}
