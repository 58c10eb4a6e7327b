//! What a middleware hook may answer with ([`HookError`]), which hook it was ([`Hook`]), and the
//! error an agent's run ends with when a hook stops it ([`MiddlewareError`]). They sit with the
//! events because every event can carry one; the hooks themselves are
//! [`crate::middleware`].

use std::fmt;
use std::sync::Arc;

use crate::budget::BudgetExceeded;
use crate::run_path::RunPath;

/// Why a hook stopped the agent: a refusal (a guardrail said no) or a failure; or a budget
/// the call would cross, checked where the hook has the call made
/// ([`HookError::budget_exceeded`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError {
    /// Refusal or failure.
    pub kind: HookErrorKind,
    /// Why, in words (the error event says it).
    pub message: Arc<str>,
    /// The budget refusal this error carries ([`HookError::budget_exceeded`]).
    pub(crate) exceeded: Option<Box<BudgetExceeded>>,
}

/// Whether a [`HookError`] is a refusal or a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookErrorKind {
    /// A guardrail refused: the input or output is not allowed.
    Refused,
    /// The middleware could not do its work.
    Failed,
}

impl HookError {
    /// A guardrail's refusal, with the reason.
    pub fn refuse(reason: impl Into<Arc<str>>) -> Self {
        HookError {
            kind: HookErrorKind::Refused,
            message: reason.into(),
            exceeded: None,
        }
    }

    /// A failure of the middleware itself.
    pub fn failed(message: impl fmt::Display) -> Self {
        HookError {
            kind: HookErrorKind::Failed,
            message: message.to_string().into(),
            exceeded: None,
        }
    }

    /// A budget the call would cross, found by a hook that has the call made elsewhere (a
    /// Temporal worker's model activity, which reserves the call's spending there): the
    /// agent's run ends with [`AgentError::BudgetExceeded`](crate::AgentError::BudgetExceeded),
    /// as when the engine refuses the call itself, not with a middleware error.
    ///
    /// ```
    /// use agentweave_core::budget::{BudgetExceeded, BudgetKind, BudgetScope};
    /// use agentweave_core::middleware::HookError;
    /// let refusal = BudgetExceeded {
    ///     budget: BudgetKind::ModelCalls,
    ///     scope: BudgetScope::Thread,
    ///     agent: "clerk".into(),
    ///     limit: 3,
    ///     would_reach: 4,
    /// };
    /// let error = HookError::budget_exceeded(refusal.clone());
    /// assert_eq!(error.exceeded(), Some(&refusal));
    /// ```
    pub fn budget_exceeded(exceeded: BudgetExceeded) -> Self {
        HookError {
            kind: HookErrorKind::Refused,
            message: exceeded.to_string().into(),
            exceeded: Some(Box::new(exceeded)),
        }
    }

    /// The budget refusal this error carries, if it is one ([`HookError::budget_exceeded`]).
    pub fn exceeded(&self) -> Option<&BudgetExceeded> {
        self.exceeded.as_deref()
    }
}

/// Which hook an error comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// [`Middleware::before_agent`](crate::middleware::Middleware::before_agent).
    BeforeAgent,
    /// [`Middleware::after_agent`](crate::middleware::Middleware::after_agent).
    AfterAgent,
    /// [`Middleware::before_model`](crate::middleware::Middleware::before_model).
    BeforeModel,
    /// [`Middleware::after_model`](crate::middleware::Middleware::after_model).
    AfterModel,
    /// [`Middleware::before_tool`](crate::middleware::Middleware::before_tool).
    BeforeTool,
    /// [`Middleware::after_tool`](crate::middleware::Middleware::after_tool).
    AfterTool,
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Hook::BeforeAgent => "before_agent",
            Hook::AfterAgent => "after_agent",
            Hook::BeforeModel => "before_model",
            Hook::AfterModel => "after_model",
            Hook::BeforeTool => "before_tool",
            Hook::AfterTool => "after_tool",
        })
    }
}

/// A middleware stopped an agent: the error its run ends with, as
/// [`AgentError::Middleware`](crate::AgentError::Middleware).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MiddlewareError {
    /// A guardrail refused.
    #[error(
        "middleware '{middleware}' refused in {hook} of agent '{agent}' (at {run_path}): {reason}"
    )]
    Refused {
        /// The middleware.
        middleware: Arc<str>,
        /// The hook.
        hook: Hook,
        /// The agent.
        agent: Arc<str>,
        /// Its run path.
        run_path: RunPath,
        /// Why.
        reason: Arc<str>,
    },
    /// A middleware failed.
    #[error(
        "middleware '{middleware}' failed in {hook} of agent '{agent}' (at {run_path}): {message}"
    )]
    Failed {
        /// The middleware.
        middleware: Arc<str>,
        /// The hook.
        hook: Hook,
        /// The agent.
        agent: Arc<str>,
        /// Its run path.
        run_path: RunPath,
        /// What went wrong.
        message: Arc<str>,
    },
    /// A hook found that the call would cross a budget ([`HookError::budget_exceeded`]); as
    /// an agent's error it is [`AgentError::BudgetExceeded`](crate::AgentError::BudgetExceeded).
    #[error("{exceeded}")]
    BudgetExceeded {
        /// The middleware.
        middleware: Arc<str>,
        /// The hook.
        hook: Hook,
        /// The refusal.
        #[source]
        exceeded: BudgetExceeded,
    },
    /// A middleware panicked.
    #[error(
        "middleware '{middleware}' panicked in {hook} of agent '{agent}' (at {run_path}): \
         {message}; the agent's run was stopped"
    )]
    Panicked {
        /// The middleware.
        middleware: Arc<str>,
        /// The hook.
        hook: Hook,
        /// The agent.
        agent: Arc<str>,
        /// Its run path.
        run_path: RunPath,
        /// The panic message.
        message: Arc<str>,
    },
}

impl MiddlewareError {
    /// The hook the error comes from.
    pub fn hook(&self) -> Hook {
        match self {
            MiddlewareError::Refused { hook, .. }
            | MiddlewareError::Failed { hook, .. }
            | MiddlewareError::BudgetExceeded { hook, .. }
            | MiddlewareError::Panicked { hook, .. } => *hook,
        }
    }

    /// Whether a guardrail refused (rather than a middleware failing).
    pub fn is_refusal(&self) -> bool {
        matches!(self, MiddlewareError::Refused { .. })
    }
}
