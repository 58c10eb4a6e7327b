//! Running the body of an `#[agent]` fn: [`run_boxed`] and [`run_boxed_input`] for the common
//! shape, [`run_body`] and [`run_body_cx`] for a body whose output type cannot be named, so
//! the glue around each body (the context, the resume info, the outcome) is written and
//! type-checked once here instead of once per agent in the user's crate.
//!
//! The common shape: `#[agent]` turns `async fn triage(cx: &AgentContext) -> R { .. }` into a
//! plain fn returning its body as a [`BodyFuture`] (`body_future(async move { .. })`), which
//! [`run_boxed`] takes as a fn pointer. The compiler then proves the body's future `Send` once,
//! where it is boxed, against a concrete type. Taking the `async fn` itself means proving it for
//! every lifetime of the context, through an associated type, once for the call and again for
//! its generic arguments: for a 200-agent flow that was about a tenth of `cargo check`. The
//! price is one allocation per run of an agent fn.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
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

/// The body of an `#[agent]` fn, boxed, borrowing the context for `'a`.
#[doc(hidden)]
pub type BodyFuture<'a, Out> = Pin<Box<dyn Future<Output = Out> + Send + 'a>>;

/// Boxes the body of an `#[agent]` fn whose output is `Out` (named by the marker, so that the
/// body's `?` and `return` are checked against it, as in the `async fn` the user wrote).
#[doc(hidden)]
pub fn body_future<'a, Out, F>(_out: PhantomData<Out>, body: F) -> BodyFuture<'a, Out>
where
    F: Future<Output = Out> + Send + 'a,
{
    Box::pin(body)
}

/// Runs (or resumes, with `resume`) agent `A` whose body is `body(cx)`, boxed (see the module's
/// guide): the stream of its events, ending with what its outcome emits.
#[doc(hidden)]
pub fn run_boxed<A, Out>(
    run: RunContext,
    resume: ResumeInfo,
    body: for<'a> fn(&'a AgentContext) -> BodyFuture<'a, Out>,
) -> EventStream
where
    A: AgentSpec + ?Sized,
    Out: IntoOutcome<A> + 'static,
{
    run_boxed_with::<A, Out, _>(run, resume, body)
}

/// As [`run_boxed`], for a body that takes the input too: `body(cx, input)`.
#[doc(hidden)]
pub fn run_boxed_input<A, Out>(
    run: RunContext,
    input: AgentInput,
    resume: ResumeInfo,
    body: for<'a> fn(&'a AgentContext, AgentInput) -> BodyFuture<'a, Out>,
) -> EventStream
where
    A: AgentSpec + ?Sized,
    Out: IntoOutcome<A> + 'static,
{
    run_boxed_with::<A, Out, _>(run, resume, move |cx| body(cx, input))
}

/// What [`run_boxed`] and [`run_boxed_input`] run: `body` on the agent's context, then its
/// outcome. (Generic over the body, which these two give as a fn pointer, so the bound over
/// every lifetime of the context is checked here, once.)
fn run_boxed_with<A, Out, F>(run: RunContext, resume: ResumeInfo, body: F) -> EventStream
where
    A: AgentSpec + ?Sized,
    Out: IntoOutcome<A> + 'static,
    F: for<'a> FnOnce(&'a AgentContext) -> BodyFuture<'a, Out> + Send + 'static,
{
    generate(run, move |cx| async move {
        let cx = AgentContext::__start::<A>(cx, resume);
        let outcome = body(&cx).await;
        outcome.into_outcome(&cx)
    })
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
/// stream of its events, ending with what its outcome (of type `Out`) emits.
///
/// `A` and `Out` come as markers rather than as generic arguments written at the call: a
/// call with explicit generic arguments makes the compiler prove this fn's bounds (the
/// body's future for every lifetime of the context, and `Send`) a second time, for the
/// annotation, which cost about as much as the rest of an agent's glue.
#[doc(hidden)]
pub fn run_body<A, F, Out>(
    _agent: PhantomData<A>,
    _out: PhantomData<Out>,
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
pub fn run_body_cx<A, F, Out>(
    _agent: PhantomData<A>,
    _out: PhantomData<Out>,
    run: RunContext,
    resume: ResumeInfo,
    body: F,
) -> EventStream
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
