//! [`AgentError`]: what an event reports when something went wrong.

use std::fmt;
use std::sync::Arc;

use super::MiddlewareError;
use crate::stream::StreamError;

/// An error reported in an event: by an agent, a tool, a model or the framework itself.
///
/// # Finding a typed error
///
/// Ask the error, never its variant: [`downcast_ref::<T>()`](AgentError::downcast_ref) finds
/// a `T` wherever this error carries one (under [`Custom`](AgentError::Custom),
/// [`ChatAgent`](AgentError::ChatAgent), any typed variant, and down their `source()`
/// chains), and [`chat_agent_error`](AgentError::chat_agent_error) gives a
/// [`ChatModelAgent`](crate::ChatModelAgent)'s own error. Matching a variant to downcast its
/// payload (`if let AgentError::Custom(e) = &error { e.downcast_ref::<ChatAgentError>() }`)
/// still compiles when the framework moves an error to another variant, and then silently
/// finds nothing: `ChatAgentError` was once under `Custom` and is under `ChatAgent` now.
///
/// ```
/// use agentweave_runtime::{AgentError, ChatAgentError};
/// let error: AgentError = ChatAgentError::MaxIterations { agent: "clerk".into(), limit: 3 }.into();
/// assert!(matches!(
///     error.downcast_ref::<ChatAgentError>(),
///     Some(ChatAgentError::MaxIterations { limit: 3, .. })
/// ));
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("the till is closed")]
/// struct TillClosed;
/// let error = AgentError::custom(TillClosed);
/// assert!(error.downcast_ref::<TillClosed>().is_some());
/// assert!(error.downcast_ref::<ChatAgentError>().is_none());
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A transfer named an agent that is neither a sub-agent nor the parent.
    #[error("transfer failed: agent '{target}' not found when transferring from '{from}'")]
    TransferTargetNotFound {
        /// The agent asked for.
        target: Arc<str>,
        /// The agent that asked.
        from: Arc<str>,
    },
    /// A transfer to the parent from an agent barred from it.
    #[error(
        "transfer refused: agent '{from}' may not transfer to its parent '{target}' \
         (it was built with disallow_transfer_to_parent)"
    )]
    TransferToParentRefused {
        /// The parent.
        target: Arc<str>,
        /// The barred agent.
        from: Arc<str>,
    },
    /// An agent panicked; the run ended cleanly after this event.
    #[error("panic in agent '{agent}': {message}")]
    Panic {
        /// The agent whose code panicked.
        agent: Arc<str>,
        /// The panic payload, when it was a string.
        message: Arc<str>,
    },
    /// A message stream failed part-way.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// Anything else an agent reports.
    #[error("agent '{agent}' failed: {message}")]
    Failed {
        /// The agent reporting.
        agent: Arc<str>,
        /// What went wrong.
        message: Arc<str>,
    },
    /// Resume reached an agent that was interrupted but cannot be resumed.
    #[error(
        "agent '{agent}' was interrupted but is not resumable; implement Agent::resume for it \
         (or use FnAgent::on_resume)"
    )]
    NotResumable {
        /// The agent.
        agent: Arc<str>,
    },
    /// A checkpoint could not be saved or used; the run stopped and the stored checkpoint was
    /// left as it was.
    #[error("checkpoint: {message}")]
    Checkpoint {
        /// What went wrong.
        message: Arc<str>,
    },
    /// The run met one of its [`RunLimits`](crate::RunLimits) and stopped there.
    #[error(transparent)]
    LimitReached(#[from] crate::limits::LimitReached),
    /// The run's next call would have crossed one of its [`Budgets`](crate::budget::Budgets);
    /// the run stopped before making it.
    #[error(transparent)]
    BudgetExceeded(#[from] crate::budget::BudgetExceeded),
    /// A [middleware](crate::middleware) hook refused (a guardrail) or failed or panicked; the
    /// agent's run ended with this event. Boxed: it is rare, and every event moves its error
    /// field.
    #[error(transparent)]
    Middleware(Box<MiddlewareError>),
    /// A thread's earlier turns could not be read, or the turn could not be recorded; the
    /// thread was left as it was.
    #[error("thread: {message}")]
    Thread {
        /// What went wrong.
        message: Arc<str>,
    },
    /// A [`ChatModelAgent`](crate::ChatModelAgent)'s own failure (its model gave no answer,
    /// its limit of model calls, an output that does not decode, an instruction that cannot
    /// be made, a resume that does not fit): read it typed with
    /// [`AgentError::chat_agent_error`], which gives the
    /// [`ChatAgentError`](crate::ChatAgentError).
    #[error("{error}")]
    ChatAgent {
        /// The agent.
        agent: Arc<str>,
        /// The [`ChatAgentError`](crate::ChatAgentError) (kept behind a trait object here, as
        /// the LLM layer builds on this one).
        error: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// An error of another type: the caller's own (made by [`AgentError::custom`]) or a
    /// workflow's [`WorkflowError`](crate::WorkflowError). Find its type with [`downcast_ref`](AgentError::downcast_ref), not by
    /// matching this variant (see [Finding a typed error](AgentError#finding-a-typed-error)).
    #[error(transparent)]
    Custom(Arc<dyn std::error::Error + Send + Sync>),
}

impl From<MiddlewareError> for AgentError {
    /// A middleware's error; a hook's budget refusal
    /// ([`HookError::budget_exceeded`](crate::middleware::HookError::budget_exceeded)) is the
    /// run's [`AgentError::BudgetExceeded`], as if the engine had refused the call; a hook's
    /// other budget error ([`MiddlewareError::BudgetFailed`]) is [`AgentError::Failed`] of the
    /// agent, as the engine's own check fails.
    fn from(error: MiddlewareError) -> Self {
        match error {
            MiddlewareError::BudgetExceeded { exceeded, .. } => {
                AgentError::BudgetExceeded(exceeded)
            }
            MiddlewareError::BudgetFailed { agent, error, .. } => AgentError::failed(agent, error),
            other => AgentError::Middleware(Box::new(other)),
        }
    }
}

impl AgentError {
    /// A failure of the named agent, described in words.
    pub fn failed(agent: impl Into<Arc<str>>, message: impl fmt::Display) -> Self {
        AgentError::Failed {
            agent: agent.into(),
            message: message.to_string().into(),
        }
    }

    /// Wraps any error type.
    pub fn custom(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        AgentError::Custom(Arc::new(error))
    }

    /// The error's kind, as its JSON form names it ([`ErrorJson`](crate::ErrorJson)):
    /// `transfer_target_not_found`, `transfer_to_parent_refused`, `panic`, `stream`, `failed`,
    /// `not_resumable`, `checkpoint`, `thread`, `limit_reached`, `budget_exceeded`, `middleware`,
    /// `chat_agent` or `custom`.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentError::TransferTargetNotFound { .. } => "transfer_target_not_found",
            AgentError::TransferToParentRefused { .. } => "transfer_to_parent_refused",
            AgentError::Panic { .. } => "panic",
            AgentError::Stream(_) => "stream",
            AgentError::Failed { .. } => "failed",
            AgentError::NotResumable { .. } => "not_resumable",
            AgentError::Checkpoint { .. } => "checkpoint",
            AgentError::Thread { .. } => "thread",
            AgentError::LimitReached(_) => "limit_reached",
            AgentError::BudgetExceeded(_) => "budget_exceeded",
            AgentError::Middleware(_) => "middleware",
            AgentError::ChatAgent { .. } => "chat_agent",
            AgentError::Custom(_) => "custom",
        }
    }

    /// The error of type `T` this error carries, wherever it is: the payload of
    /// [`Custom`](AgentError::Custom) or [`ChatAgent`](AgentError::ChatAgent), a typed
    /// variant's error ([`LimitReached`](crate::LimitReached), a
    /// [`MiddlewareError`](crate::MiddlewareError), ...), or any error down their `source()`
    /// chains. The one way to find a typed error: it keeps finding it when the framework moves
    /// an error between variants (see [Finding a typed error](AgentError#finding-a-typed-error)).
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(match self {
            AgentError::Custom(error) | AgentError::ChatAgent { error, .. } => &**error,
            AgentError::Stream(error) => error,
            AgentError::LimitReached(error) => error,
            AgentError::BudgetExceeded(error) => error,
            AgentError::Middleware(error) => &**error,
            other => other,
        });
        while let Some(error) = next {
            if let Some(found) = error.downcast_ref::<T>() {
                return Some(found);
            }
            next = error.source();
        }
        None
    }

    /// The agent the error is about, if it names one (for a transfer, the agent that asked).
    pub fn agent(&self) -> Option<&Arc<str>> {
        match self {
            AgentError::TransferTargetNotFound { from, .. }
            | AgentError::TransferToParentRefused { from, .. } => Some(from),
            AgentError::Panic { agent, .. }
            | AgentError::Failed { agent, .. }
            | AgentError::NotResumable { agent }
            | AgentError::ChatAgent { agent, .. } => Some(agent),
            AgentError::LimitReached(limit) => Some(&limit.agent),
            AgentError::BudgetExceeded(budget) => Some(&budget.agent),
            AgentError::Middleware(error) => match &**error {
                MiddlewareError::Refused { agent, .. }
                | MiddlewareError::Failed { agent, .. }
                | MiddlewareError::Panicked { agent, .. }
                | MiddlewareError::BudgetFailed { agent, .. } => Some(agent),
                MiddlewareError::BudgetExceeded { exceeded, .. } => Some(&exceeded.agent),
            },
            _ => None,
        }
    }

    pub(crate) fn from_panic(agent: &Arc<str>, payload: Box<dyn std::any::Any + Send>) -> Self {
        let message: Arc<str> = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).into()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.as_str().into()
        } else {
            "non-string panic payload".into()
        };
        AgentError::Panic {
            agent: Arc::clone(agent),
            message,
        }
    }
}

/// The message of a panic payload (a `&str` or `String` panic), in words.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
