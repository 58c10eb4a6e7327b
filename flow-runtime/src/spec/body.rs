//! Running the body of an `#[agent]` fn: [`run_body`] and [`run_body_cx`], generic over the
//! fn, so the glue around each body (the context, the resume info, the outcome) is written and
//! type-checked once here instead of once per agent in the user's crate.

use std::future::Future;
use std::sync::Arc;

use super::{AgentContext, AgentSpec, IntoOutcome};
use crate::agent::{generate, Agent, AgentInput, EventStream, RunContext};
use crate::resume::ResumeInfo;

/// An `#[agent]` fn taking `(cx: &AgentContext, input: AgentInput)`, for every lifetime of
/// the context: its future may borrow the context.
#[doc(hidden)]
pub trait AgentFnBody<'a, Out>:
    FnOnce(&'a AgentContext, AgentInput) -> <Self as AgentFnBody<'a, Out>>::Fut
{
    /// The body's future.
    type Fut: Future<Output = Out> + Send + 'a;
}

impl<'a, F, Fut, Out> AgentFnBody<'a, Out> for F
where
    F: FnOnce(&'a AgentContext, AgentInput) -> Fut,
    Fut: Future<Output = Out> + Send + 'a,
{
    type Fut = Fut;
}

/// An `#[agent]` fn taking `(cx: &AgentContext)`, for every lifetime of the context.
#[doc(hidden)]
pub trait AgentFnBodyCx<'a, Out>:
    FnOnce(&'a AgentContext) -> <Self as AgentFnBodyCx<'a, Out>>::Fut
{
    /// The body's future.
    type Fut: Future<Output = Out> + Send + 'a;
}

impl<'a, F, Fut, Out> AgentFnBodyCx<'a, Out> for F
where
    F: FnOnce(&'a AgentContext) -> Fut,
    Fut: Future<Output = Out> + Send + 'a,
{
    type Fut = Fut;
}

/// The run of an `#[agent]` type, one fn: `#[agent]` implements it, and the [`Agent`] impl
/// below reads the name and description from the type's [`AgentSpec`] and runs this for both
/// a run and a resume, so that impl is type-checked once here, not once per agent. Not a
/// public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent: it does not implement `Agent`",
    label = "not an agent",
    note = "implement `Agent`, or use `#[agent]`: on an async fn, or on a struct and on its impl \
            block holding `async fn run(&self, cx: &AgentContext, input: AgentInput)`"
)]
pub trait AgentBody: AgentSpec + Send + Sync + 'static {
    /// Runs the body; `resume` is empty for a plain run.
    fn run_body(
        self: Arc<Self>,
        run: RunContext,
        input: AgentInput,
        resume: ResumeInfo,
    ) -> EventStream;
}

#[diagnostic::do_not_recommend]
impl<T: AgentBody> Agent for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
        self.run_body(cx, input, ResumeInfo::default())
    }

    /// Runs the body again, resuming: its context carries the resume info.
    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        self.run_body(cx, input, info)
    }
}

/// Runs (or resumes, with `resume`) agent `A` whose body is the fn `body(cx, input)`: the
/// stream of its events, ending with what its outcome emits.
#[doc(hidden)]
pub fn run_body<A, F, Out>(
    run: RunContext,
    input: AgentInput,
    resume: ResumeInfo,
    body: F,
) -> EventStream
where
    A: AgentSpec + ?Sized,
    F: for<'a> AgentFnBody<'a, Out> + Send + 'static,
    Out: IntoOutcome<A>,
{
    generate(run, move |cx| async move {
        let cx = AgentContext::__start::<A>(cx, resume);
        let outcome = body(&cx, input).await;
        outcome.into_outcome(&cx)
    })
}

/// As [`run_body`], for a body that takes only the context.
#[doc(hidden)]
pub fn run_body_cx<A, F, Out>(run: RunContext, resume: ResumeInfo, body: F) -> EventStream
where
    A: AgentSpec + ?Sized,
    F: for<'a> AgentFnBodyCx<'a, Out> + Send + 'static,
    Out: IntoOutcome<A>,
{
    generate(run, move |cx| async move {
        let cx = AgentContext::__start::<A>(cx, resume);
        let outcome = body(&cx).await;
        outcome.into_outcome(&cx)
    })
}
