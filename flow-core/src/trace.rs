//! The tracing gate and the `agent` span every agent run opens (the chat and tool spans of LLM
//! agents are `crate::telemetry`'s).

use tracing::Span;

/// Whether a subscriber may want this crate's (info-level) spans. Without one, spans are not
/// made at all: `tracing`'s `log` feature (turned on by dependencies such as `sqlx`) would
/// otherwise format every field of every span for the `log` crate, on every hop.
#[inline]
pub(crate) fn spans_wanted() -> bool {
    tracing::level_enabled!(tracing::Level::INFO)
}

/// The span of one agent run (fields `agent` and `run_path`), boxed; `None` when no subscriber
/// wants it.
#[inline]
pub(crate) fn agent_span(agent: &str, run_path: &crate::run_path::RunPath) -> Option<Box<Span>> {
    spans_wanted()
        .then(|| tracing::info_span!("agent", agent = %agent, run_path = %run_path))
        .filter(|span| !span.is_disabled())
        .map(Box::new)
}
