//! What an `#[agent]` body returns: [`AgentResult`], [`Exit`] and [`IntoOutcome`].

use super::AgentContext;
use crate::event::AgentError;

/// What an agent body returns: `Ok(outcome)` or an error that ends the agent's run with an
/// error event.
pub type AgentResult<T = ()> = Result<T, AgentError>;

/// Ends the run here: returned by an `#[agent]` body, it emits an event carrying
/// [`Action::Exit`](crate::event::Action::Exit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Exit;

/// What an `#[agent]` body returns, turned into the event that steers the run.
///
/// `A` is the agent type: an agent's transfer enum is an outcome of that agent only, so an
/// agent cannot return another agent's targets.
///
/// | returned | effect |
/// | --- | --- |
/// | `()` | nothing more is emitted: the agent's last own action (if any) decides |
/// | [`Exit`] | an event carrying [`Action::Exit`](crate::event::Action::Exit) |
/// | `TriageTransfer::Refund` | the transfer messages, the second carrying the transfer |
/// | `None` / `Some(x)` | nothing / as `x` |
/// | `Err(e)` / `Ok(x)` | an error event / as `x` |
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an outcome agent `{A}` can return",
    label = "returned by the body of agent `{A}`",
    note = "an #[agent] body returns `()`, `Exit`, the agent's own transfer enum \
            (declared with `#[agent(transfers = [...])]`), or an `Option` or `AgentResult` of one"
)]
pub trait IntoOutcome<A: ?Sized> {
    /// Emits what this outcome means through `cx`; an `Err` becomes the agent's error event.
    fn into_outcome(self, cx: &AgentContext) -> AgentResult;
}

impl<A: ?Sized> IntoOutcome<A> for () {
    fn into_outcome(self, _cx: &AgentContext) -> AgentResult {
        Ok(())
    }
}

impl<A: ?Sized> IntoOutcome<A> for Exit {
    fn into_outcome(self, cx: &AgentContext) -> AgentResult {
        cx.cx.exit();
        Ok(())
    }
}

impl<A: ?Sized, T: IntoOutcome<A>> IntoOutcome<A> for Option<T> {
    fn into_outcome(self, cx: &AgentContext) -> AgentResult {
        match self {
            Some(outcome) => outcome.into_outcome(cx),
            None => Ok(()),
        }
    }
}

impl<A: ?Sized, T: IntoOutcome<A>, E: Into<AgentError>> IntoOutcome<A> for Result<T, E> {
    fn into_outcome(self, cx: &AgentContext) -> AgentResult {
        self.map_err(Into::into)?.into_outcome(cx)
    }
}
