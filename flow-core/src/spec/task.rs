//! Typed delegation for `#[agent]` bodies: [`Returns`] (the result type an agent declares with
//! `#[agent(returns = T)]`), [`Finish`] (what a body returns to finish its task) and
//! [`AgentContext::task_result`] (what its parent reads).

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{AgentContext, AgentResult, AgentSpec, IntoOutcome};
use crate::event::AgentError;

/// The result type of an agent that finishes a delegated task: `#[agent(returns = T)]`
/// implements it. `flow!` requires it of every agent on a `task` node, and a parent reads the
/// typed result with [`AgentContext::task_result`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent that declares a result type, so it can never finish a task",
    label = "not an agent with `returns = ...`",
    note = "a task's result is read by the agent that finishes the task, as in \
            `cx.task_result::<refund>()`, not by the result's type",
    note = "an agent declares its result with `#[agent(returns = MyOutcome)]` (a type with \
            serde's Serialize and Deserialize), and finishes its task by returning \
            `Finish(outcome)` from its body"
)]
pub trait Returns: AgentSpec {
    /// The result it returns to its parent.
    type Output: Serialize + DeserializeOwned + Send + 'static;
}

/// Returned by the body of an agent declared `#[agent(returns = T)]`: finishes its task with
/// the result `T`, which returns to its parent (see [`Delegation`](crate::Delegation)).
/// `Option<Finish<T>>` finishes or, with `None`, ends the run without finishing (the task
/// waits for the user's next turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Finish<T>(pub T);

/// `Self` is the result type agent `A` declares (`#[agent(returns = Self)]` implements it), so
/// a body that finishes with another type fails to compile naming both.
#[diagnostic::on_unimplemented(
    message = "agent `{A}` cannot finish with a `{Self}`: it is not the result type the agent declares",
    label = "`{Self}` is not `{A}`'s result type",
    note = "an agent finishes with the type given in its `#[agent(returns = ...)]`: return \
            `Finish(value)` with a value of that type, or change `returns`"
)]
pub trait ResultOf<A: ?Sized> {}

impl<A: ?Sized, T: Serialize + ResultOf<A>> IntoOutcome<A> for Finish<T> {
    fn into_outcome(self, cx: &AgentContext) -> AgentResult {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            AgentError::failed(
                cx.cx.agent_name(),
                format!("could not turn its task's result into JSON: {e}"),
            )
        })?;
        cx.cx.finish(value);
        Ok(())
    }
}

impl AgentContext {
    /// The typed result the sub-agent `A` returned to this agent in this run, if it is the one
    /// that returned last (see [`RunContext::task_result`](crate::RunContext::task_result)).
    ///
    /// # Errors
    ///
    /// If the result does not decode as `A::Output` (it was written by something other than
    /// `A`'s `Finish`).
    pub fn task_result<A: Returns>(&self) -> Option<AgentResult<A::Output>> {
        let done = self.run_context().task_result()?;
        if &*done.from != A::NAME {
            return None;
        }
        Some(serde_json::from_value(done.result).map_err(|e| {
            AgentError::failed(
                self.cx.agent_name(),
                format!(
                    "the result agent '{}' returned does not decode as its declared type: {e}",
                    A::NAME
                ),
            )
        }))
    }
}
