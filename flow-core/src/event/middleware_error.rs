//! What a middleware hook may answer with ([`HookError`]), which hook it was ([`Hook`]), and the
//! error an agent's run ends with when a hook stops it ([`MiddlewareError`]). They sit with the
//! events because every event can carry one; the hooks themselves are
//! [`crate::middleware`].

use std::fmt;
use std::sync::Arc;

use crate::budget::{BudgetError, BudgetExceeded};
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
    /// The budget check's error this error carries ([`HookError::budget_exceeded`],
    /// [`HookError::budget_error`]).
    pub(crate) budget: Option<Box<BudgetError>>,
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
            budget: None,
        }
    }

    /// A failure of the middleware itself.
    pub fn failed(message: impl fmt::Display) -> Self {
        HookError {
            kind: HookErrorKind::Failed,
            message: message.to_string().into(),
            budget: None,
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
        HookError::budget_error(BudgetError::Exceeded(exceeded))
    }

    /// A budget check made by a hook that has the call made elsewhere, which did not pass the
    /// call: the agent's run ends as when the engine checks the call itself. A crossed budget
    /// ([`BudgetError::Exceeded`]) is [`budget_exceeded`](Self::budget_exceeded); another
    /// error (a model without a price under a money budget) ends the run with
    /// [`AgentError::Failed`](crate::AgentError::Failed) of the agent, with the check's message.
    ///
    /// ```
    /// use agentweave_core::budget::BudgetError;
    /// use agentweave_core::middleware::HookError;
    /// let error = HookError::budget_error(BudgetError::Unpriced {
    ///     agent: "clerk".into(),
    ///     model: "gpt-x".into(),
    /// });
    /// assert_eq!(error.exceeded(), None);
    /// assert!(error.message.contains("no price"));
    /// ```
    pub fn budget_error(error: BudgetError) -> Self {
        HookError {
            kind: match error {
                BudgetError::Exceeded(_) => HookErrorKind::Refused,
                _ => HookErrorKind::Failed,
            },
            message: error.to_string().into(),
            budget: Some(Box::new(error)),
        }
    }

    /// The budget refusal this error carries, if it is one ([`HookError::budget_exceeded`]).
    pub fn exceeded(&self) -> Option<&BudgetExceeded> {
        match self.budget.as_deref() {
            Some(BudgetError::Exceeded(exceeded)) => Some(exceeded),
            _ => None,
        }
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
    /// A hook's budget check did not pass the call for another reason than a crossed budget
    /// ([`HookError::budget_error`]: a model without a price under a money budget); as an
    /// agent's error it is [`AgentError::Failed`](crate::AgentError::Failed) of `agent` with
    /// the check's message, the error of the same check in process.
    #[error("{error}")]
    BudgetFailed {
        /// The middleware.
        middleware: Arc<str>,
        /// The hook.
        hook: Hook,
        /// The agent whose call was checked.
        agent: Arc<str>,
        /// What the check said (boxed: a middleware error is carried in the futures of
        /// every hooked call, so its size is kept to its other variants').
        #[source]
        error: Box<BudgetError>,
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
            | MiddlewareError::BudgetFailed { hook, .. }
            | MiddlewareError::Panicked { hook, .. } => *hook,
        }
    }

    /// Whether a guardrail refused (rather than a middleware failing).
    pub fn is_refusal(&self) -> bool {
        matches!(self, MiddlewareError::Refused { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AgentError;

    #[test]
    fn a_hooks_unpriced_model_ends_the_run_as_the_engines_own_check_does() {
        let unpriced = BudgetError::Unpriced {
            agent: "clerk".into(),
            model: "gpt-x".into(),
        };
        let error = AgentError::from(MiddlewareError::BudgetFailed {
            middleware: "temporal".into(),
            hook: Hook::BeforeModel,
            agent: "clerk".into(),
            error: Box::new(unpriced.clone()),
        });
        let AgentError::Failed { agent, message } = &error else {
            panic!("not a failure: {error:?}");
        };
        assert_eq!((&**agent, &**message), ("clerk", &*unpriced.to_string()));
        assert_eq!(error.kind(), "failed");
    }

    #[test]
    fn a_middleware_error_stays_small() {
        // Carried in the future of every hooked call: a larger error grows those futures (and
        // an agent run's allocation past the allocator's small requests).
        const { assert!(std::mem::size_of::<MiddlewareError>() <= 64) };
    }
}
