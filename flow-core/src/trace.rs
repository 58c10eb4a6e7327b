//! The tracing gate and the `invoke_agent` span every agent run opens (the chat and tool spans of LLM
//! agents are `crate::telemetry`'s).

use tracing::Span;

/// Whether a subscriber may want this crate's (info-level) spans. Without one, spans are not
/// made at all: `tracing`'s `log` feature (turned on by dependencies such as `sqlx`) would
/// otherwise format every field of every span for the `log` crate, on every hop.
#[inline]
pub(crate) fn spans_wanted() -> bool {
    tracing::level_enabled!(tracing::Level::INFO)
}

/// The span of one agent run, boxed; `None` when no subscriber wants it. Named and attributed
/// as the OpenTelemetry GenAI conventions' "invoke agent" span of an agent run in process:
/// `invoke_agent`, `otel.name` = `invoke_agent {agent}`, `gen_ai.operation.name`,
/// `gen_ai.agent.name`, `gen_ai.agent.description` (when the agent has one),
/// `gen_ai.conversation.id` (a thread's turn), and `agentflow.run_path`.
#[inline]
pub(crate) fn agent_span(
    agent: &str,
    description: &str,
    run_path: &crate::run_path::RunPath,
    conversation: Option<&str>,
) -> Option<Box<Span>> {
    spans_wanted()
        .then(|| {
            tracing::info_span!(
                "invoke_agent",
                otel.name = %format_args!("invoke_agent {agent}"),
                otel.kind = "internal",
                gen_ai.operation.name = "invoke_agent",
                gen_ai.agent.name = %agent,
                gen_ai.agent.description = (!description.is_empty()).then_some(description),
                gen_ai.conversation.id = conversation,
                agentflow.run_path = %run_path,
            )
        })
        .filter(|span| !span.is_disabled())
        .map(Box::new)
}
