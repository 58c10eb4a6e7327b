//! What each activity is called and how it is retried, as plain data (the workflow turns it
//! into Temporal's activity options).
//!
//! - **Names.** The Temporal Rust SDK registers activity types by Rust type, so the activity
//!   types are two: [`MODEL_ACTIVITY`] and [`TOOL_ACTIVITY`]. What the UI needs to tell calls
//!   apart is in each activity's *summary* (`billing → model gpt-4o`, `billing → tool pay`)
//!   and its *id* (`t3.7 billing.pay`: turn 3, the 7th effect of the turn).
//! - **Model calls** retry with exponential backoff ([`model_retry`]); a model error that says
//!   retrying cannot help (a 400, a refused request) is not retried
//!   ([`ModelFailure::retryable`]).
//! - **Tool calls** retry only if the tool is idempotent (it deduplicates on its idempotency
//!   key, or has no side effects: [`Tool::idempotent`](agentweave_core::Tool::idempotent)); a tool
//!   that declared itself non-idempotent runs at most once ([`tool_retry`]): if its worker dies
//!   during the call, the model is told the call may or may not have happened.

use std::time::Duration;

use agentweave_core::model::ModelError;
use serde::{Deserialize, Serialize};

/// The activity type of every model call.
pub const MODEL_ACTIVITY: &str = "agentflow.model";
/// The activity type of every tool call.
pub const TOOL_ACTIVITY: &str = "agentflow.tool";
/// The activity type that stores a part of a long conversation (see [`crate::parts`]).
pub const STORE_ACTIVITY: &str = "agentflow.store_part";
/// The activity type that reads a stored part back (see [`crate::parts`]).
pub const LOAD_ACTIVITY: &str = "agentflow.load_part";

/// How an activity is retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    /// The first wait between attempts.
    pub initial: Duration,
    /// The factor each wait is multiplied by.
    pub backoff: f64,
    /// The longest wait.
    pub max_interval: Duration,
    /// Attempts in all (1: no retry).
    pub max_attempts: u32,
}

/// Model calls: 1 s, 2 s, 4 s, ... up to 30 s, 6 attempts (rate limits and 5xx pass).
pub fn model_retry() -> Retry {
    Retry {
        initial: Duration::from_secs(1),
        backoff: 2.0,
        max_interval: Duration::from_secs(30),
        max_attempts: 6,
    }
}

/// Tool calls: an idempotent tool as a model call; another at most once.
pub fn tool_retry(idempotent: bool) -> Retry {
    if idempotent {
        Retry {
            initial: Duration::from_millis(500),
            ..model_retry()
        }
    } else {
        Retry {
            max_attempts: 1,
            ..model_retry()
        }
    }
}

/// The summary the Temporal UI shows for a model call.
pub fn model_summary(agent: &str, model: &str) -> String {
    format!("{agent} → model {model}")
}

/// The summary the Temporal UI shows for a tool call.
pub fn tool_summary(agent: &str, tool: &str) -> String {
    format!("{agent} → tool {tool}")
}

/// An activity's id: the turn, the effect's number in the turn, the agent and what it calls.
pub fn activity_id(turn: u64, effect: u64, agent: &str, what: &str) -> String {
    format!("t{turn}.{effect} {agent}.{what}")
}

/// A model call that failed, as the model activity reports it to Temporal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFailure {
    /// The error's text.
    pub message: String,
    /// Whether another attempt may succeed (429, 5xx, a connection error).
    pub retryable: bool,
}

impl ModelFailure {
    /// The failure of `error`.
    pub fn of(error: &ModelError) -> Self {
        ModelFailure {
            message: error.to_string(),
            retryable: error.retryable(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_idempotent_tool_runs_at_most_once() {
        assert_eq!(tool_retry(false).max_attempts, 1);
        assert!(tool_retry(true).max_attempts > 1);
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried_client_errors_are_not() {
        for (status, retried) in [
            (429, true),
            (500, true),
            (503, true),
            (400, false),
            (401, false),
        ] {
            let failure = ModelFailure::of(&ModelError::http("m", status, "body"));
            assert_eq!(failure.retryable, retried, "HTTP {status}");
        }
    }

    #[test]
    fn the_ui_names_the_agent_and_what_it_calls() {
        assert_eq!(model_summary("billing", "gpt-4o"), "billing → model gpt-4o");
        assert_eq!(tool_summary("billing", "pay"), "billing → tool pay");
        assert_eq!(activity_id(3, 7, "billing", "pay"), "t3.7 billing.pay");
    }
}
