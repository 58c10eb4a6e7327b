//! Errors in two faces: the public one a client sees ([`PublicError`]: a stable code, a short
//! message fit for an end user, a correlation id) and the internal one, logged with the same
//! correlation id and never sent.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use agentweave_runtime::{
    AgentError, ChatAgentError, CheckpointError, MiddlewareError, ModelError, RunFailure,
    StoreError, StreamError, ThreadError, ToolError,
};
use serde::Serialize;

/// The stable code of a [`PublicError`]: what kind of thing failed, in words a client can
/// switch on. Serialised in snake case (`model_unavailable`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PublicCode {
    /// The model did not answer (an outage, a refused request, a broken stream).
    ModelUnavailable,
    /// A tool failed in a way that ended the run.
    ToolFailed,
    /// The store could not save or read the conversation or its checkpoint.
    StoreUnavailable,
    /// The run reached one of its limits (model calls, events, tokens...).
    LimitReached,
    /// The run's next call would have crossed one of its budgets (tokens, money, calls, wall
    /// time), so it stopped before it.
    BudgetExceeded,
    /// A guardrail refused the request.
    Refused,
    /// Another request changed the conversation at the same time.
    Conflict,
    /// An agent could not complete the request.
    AgentFailed,
    /// The turn ran past the server's time limit and was cancelled.
    Timeout,
    /// Anything else inside the server.
    Internal,
}

impl PublicCode {
    /// The code as the JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PublicCode::ModelUnavailable => "model_unavailable",
            PublicCode::ToolFailed => "tool_failed",
            PublicCode::StoreUnavailable => "store_unavailable",
            PublicCode::LimitReached => "limit_reached",
            PublicCode::BudgetExceeded => "budget_exceeded",
            PublicCode::Refused => "refused",
            PublicCode::Conflict => "conflict",
            PublicCode::AgentFailed => "agent_failed",
            PublicCode::Timeout => "timeout",
            PublicCode::Internal => "internal",
        }
    }

    /// The short message an end user sees for this code.
    pub fn message(self) -> &'static str {
        match self {
            PublicCode::ModelUnavailable => "The assistant is unavailable right now; try again.",
            PublicCode::ToolFailed => "A tool the assistant needs failed; try again later.",
            PublicCode::StoreUnavailable => {
                "This conversation could not be saved or read right now; try again later."
            }
            PublicCode::LimitReached => {
                "This request reached the assistant's limits and was stopped."
            }
            PublicCode::BudgetExceeded => {
                "This request reached the assistant's budget and was stopped."
            }
            PublicCode::Refused => "This request was refused.",
            PublicCode::Conflict => {
                "Another request changed this conversation at the same time; send it again."
            }
            PublicCode::AgentFailed => "The assistant could not complete this request.",
            PublicCode::Timeout => "This request took too long and was stopped.",
            PublicCode::Internal => "Something went wrong on our side.",
        }
    }
}

impl fmt::Display for PublicCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The public face of an error: `{"code", "message", "correlation_id", "agent"?}`. The
/// message is the code's fixed text; the correlation id is in the server's log beside the
/// internal error, so an operator finds what happened from what the user reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublicError {
    /// What kind of thing failed.
    pub code: PublicCode,
    /// A short message for an end user.
    pub message: &'static str,
    /// The id joining this error to the internal one in the log.
    pub correlation_id: String,
    /// The agent that reported it, if one did (agent names are public: they are in run paths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Arc<str>>,
}

impl fmt::Display for PublicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (ref {})", self.message, self.correlation_id)
    }
}

/// The correlation id of event `event` of run `run`: 16 hex digits, the same for every reader.
fn run_correlation_id(run: &str, event: u64) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(run.as_bytes())
        .chain_update(b":")
        .chain_update(event.to_le_bytes())
        .finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A new correlation id: 16 hex digits, random.
pub(crate) fn correlation_id() -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(16);
    id
}

impl PublicError {
    /// A public error of `code` for the internal error `internal`, which is logged (with the
    /// correlation id) and not kept.
    pub fn new(code: PublicCode, internal: &dyn fmt::Display, agent: Option<Arc<str>>) -> Self {
        Self::with_id(code, internal, agent, correlation_id())
    }

    /// [`new`](Self::new) under the given correlation id.
    fn with_id(
        code: PublicCode,
        internal: &dyn fmt::Display,
        agent: Option<Arc<str>>,
        correlation_id: String,
    ) -> Self {
        match code {
            PublicCode::Refused
            | PublicCode::LimitReached
            | PublicCode::BudgetExceeded
            | PublicCode::Conflict => {
                tracing::warn!(
                    target: "agentweave_server::outward",
                    correlation_id = %correlation_id,
                    code = code.as_str(),
                    agent = agent.as_deref().unwrap_or(""),
                    error = %internal,
                    "run error"
                )
            }
            _ => tracing::error!(
                target: "agentweave_server::outward",
                correlation_id = %correlation_id,
                code = code.as_str(),
                agent = agent.as_deref().unwrap_or(""),
                error = %internal,
                "run error"
            ),
        }
        PublicError {
            code,
            message: code.message(),
            correlation_id,
            agent,
        }
    }

    /// The public face of an error an event reports.
    pub fn of_agent_error(error: &AgentError) -> Self {
        PublicError::new(code_of_agent_error(error), error, error.agent().cloned())
    }

    /// [`of_agent_error`](Self::of_agent_error) under `correlation_id` (the reference an
    /// earlier frame showed for the same failure).
    pub(crate) fn of_agent_error_as(error: &AgentError, correlation_id: String) -> Self {
        PublicError::with_id(
            code_of_agent_error(error),
            error,
            error.agent().cloned(),
            correlation_id,
        )
    }

    /// The public face of an error a kept run event carries: `failure` is the typed error
    /// behind it ([`RunEvent::failure`](agentweave_runtime::RunEvent::failure)); `text` is the
    /// error's text as the event holds it, used (logged, never sent) when the typed error is
    /// not known. `key` names the event (run id and event id) so that every reader of the same
    /// event gets the same correlation id.
    pub fn of_run_failure(failure: Option<&RunFailure>, text: &str, key: (&str, u64)) -> Self {
        let (code, agent) = match failure {
            Some(RunFailure::Agent(e)) => (code_of_agent_error(e), e.agent().cloned()),
            Some(RunFailure::Thread(e)) => (code_of_thread_error(e), None),
            _ => (PublicCode::Internal, None),
        };
        let internal: &dyn fmt::Display = match failure {
            Some(f) => f,
            None => &text,
        };
        PublicError::with_id(code, internal, agent, run_correlation_id(key.0, key.1))
    }

    /// The public face of a streamed message's failure (the model's stream broke).
    pub fn of_stream_error(error: &StreamError, agent: &str) -> Self {
        PublicError::new(PublicCode::ModelUnavailable, error, Some(agent.into()))
    }

    /// The public face of a turn that failed and was not recorded (a turn that failed on an
    /// agent's error takes that error's code and agent).
    pub fn of_turn_failure(error: &ThreadError) -> Self {
        let agent = match error {
            ThreadError::TurnFailed { error, .. } => error.agent().cloned(),
            _ => None,
        };
        PublicError::new(code_of_thread_error(error), error, agent)
    }

    /// [`of_turn_failure`](Self::of_turn_failure) under `correlation_id`: the reference an
    /// earlier frame of the same turn already showed for the error the turn failed on.
    pub(crate) fn of_turn_failure_as(error: &ThreadError, correlation_id: String) -> Self {
        let agent = match error {
            ThreadError::TurnFailed { error, .. } => error.agent().cloned(),
            _ => None,
        };
        PublicError::with_id(code_of_thread_error(error), error, agent, correlation_id)
    }

    /// An internal failure described by `internal` (logged, not sent).
    pub fn internal(internal: &dyn fmt::Display) -> Self {
        PublicError::new(PublicCode::Internal, internal, None)
    }
}

/// The public code of a turn's failure.
pub(crate) fn code_of_thread_error(error: &ThreadError) -> PublicCode {
    match error {
        ThreadError::Store(_) | ThreadError::Checkpoint(_) => PublicCode::StoreUnavailable,
        ThreadError::TurnFailed { error, .. } => code_of_agent_error(error),
        ThreadError::Busy { .. }
        | ThreadError::RunsGoing { .. }
        | ThreadError::Conflict { .. }
        | ThreadError::LeaseLost { .. } => PublicCode::Conflict,
        _ => PublicCode::Internal,
    }
}

/// The code of an error an event reports: by its variant, and for an error of another type
/// (`AgentError::ChatAgent`, `AgentError::Custom`) by the first error of a known type along its
/// source chain.
pub(crate) fn code_of_agent_error(error: &AgentError) -> PublicCode {
    match error {
        AgentError::Stream(_) => PublicCode::ModelUnavailable,
        AgentError::Checkpoint { .. } | AgentError::Thread { .. } => PublicCode::StoreUnavailable,
        AgentError::LimitReached(_) => PublicCode::LimitReached,
        AgentError::BudgetExceeded(_) => PublicCode::BudgetExceeded,
        AgentError::Middleware(m) => match &**m {
            MiddlewareError::Refused { .. } => PublicCode::Refused,
            _ => PublicCode::Internal,
        },
        AgentError::Panic { .. } => PublicCode::Internal,
        // A ChatModelAgent's own error (a model outage, too many iterations, ...), or an error
        // of the caller's type: the first error of a known type along the chain says.
        AgentError::ChatAgent { error, .. } | AgentError::Custom(error) => code_of_chain(&**error),
        _ => PublicCode::AgentFailed,
    }
}

fn code_of_chain(error: &(dyn StdError + 'static)) -> PublicCode {
    let mut next: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(chat) = e.downcast_ref::<ChatAgentError>() {
            match chat {
                ChatAgentError::Model { .. } => return PublicCode::ModelUnavailable,
                ChatAgentError::MaxIterations { .. } => return PublicCode::LimitReached,
                _ => {}
            }
        }
        if e.is::<ModelError>() || e.is::<StreamError>() {
            return PublicCode::ModelUnavailable;
        }
        if e.is::<ToolError>() {
            return PublicCode::ToolFailed;
        }
        if e.is::<StoreError>() || e.is::<CheckpointError>() || e.is::<ThreadError>() {
            return PublicCode::StoreUnavailable;
        }
        if let Some(agent) = e.downcast_ref::<AgentError>() {
            return code_of_agent_error(agent);
        }
        next = e.source();
    }
    PublicCode::AgentFailed
}
