//! Running the body of an `#[agent]` fn: [`run_body`] and [`run_body_cx`], generic over the
//! fn, so the glue around each body (the context, the resume info, the outcome) is written and
//! type-checked once here instead of once per agent in the user's crate.

use std::future::Future;

use super::{AgentContext, AgentSpec, IntoOutcome};
use crate::agent::{generate, AgentInput, EventStream, RunContext};
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
