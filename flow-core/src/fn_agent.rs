//! [`FnAgent`]: an agent made from an async closure, for tests, examples and glue code.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::agent::{generate, Context};
use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::event::AgentError;
use crate::resume::ResumeInfo;

/// The resume body: makes the event stream of a resumed run (the closure's future lives in
/// the stream's own allocation, see [`generate`]).
type ResumeBody = dyn Fn(RunContext, AgentInput, ResumeInfo) -> EventStream + Send + Sync;

/// The run body: makes the event stream of a run.
type Body = dyn Fn(RunContext, AgentInput) -> EventStream + Send + Sync;

/// An agent whose behaviour is an async closure: it emits through the [`Context`] and ends
/// with whatever action its last event carries.
///
/// ```
/// use agentweave_runtime::{FnAgent, FlowAgent, Runner};
/// use futures::StreamExt;
///
/// # futures::executor::block_on(async {
/// let hello = FnAgent::new("hello", |cx, _input| async move {
///     cx.say("Hello!");
///     Ok(())
/// });
/// let events: Vec<_> = Runner::new(FlowAgent::new(hello)).run("hi").collect().await;
/// assert_eq!(events[0].message_output().unwrap().content, "Hello!");
/// assert_eq!(events[0].run_path().to_string(), "hello");
/// # });
/// ```
#[derive(Clone)]
pub struct FnAgent {
    name: Arc<str>,
    description: Arc<str>,
    body: Arc<Body>,
    on_resume: Option<Arc<ResumeBody>>,
}

impl FnAgent {
    /// An agent named `name` running `body` on each run.
    pub fn new<F, Fut>(name: impl Into<Arc<str>>, body: F) -> Self
    where
        F: Fn(Context, AgentInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), AgentError>> + Send + 'static,
    {
        FnAgent {
            name: name.into(),
            description: Arc::from(""),
            body: Arc::new(move |run, input| generate(run, |cx| body(cx, input))),
            on_resume: None,
        }
    }

    /// Makes the agent resumable: after an interrupt, `body` runs with the [`ResumeInfo`]
    /// (saved state, the caller's resume data) instead of the run body.
    ///
    /// ```
    /// use agentweave_runtime::FnAgent;
    /// let approver = FnAgent::new("approver", |cx, _| async move {
    ///     cx.interrupt(serde_json::json!("approve refund of $40?"));
    ///     Ok(())
    /// })
    /// .on_resume(|cx, _input, info| async move {
    ///     let approved = info.data().and_then(|d| d.as_bool()).unwrap_or(false);
    ///     cx.say(if approved { "refund sent" } else { "refund declined" });
    ///     Ok(())
    /// });
    /// # let _ = approver;
    /// ```
    pub fn on_resume<F, Fut>(mut self, body: F) -> Self
    where
        F: Fn(Context, AgentInput, ResumeInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), AgentError>> + Send + 'static,
    {
        self.on_resume = Some(Arc::new(move |run, input, info| {
            generate(run, |cx| body(cx, input, info))
        }));
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<Arc<str>>) -> Self {
        self.description = description.into();
        self
    }
}

impl Agent for FnAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn run(self: Arc<Self>, cx: RunContext, input: AgentInput) -> EventStream {
        (self.body)(cx, input)
    }

    fn resume(self: Arc<Self>, cx: RunContext, input: AgentInput, info: ResumeInfo) -> EventStream {
        match &self.on_resume {
            Some(body) => body(cx, input, info),
            None => {
                EventStream::from_events([crate::AgentEvent::error(AgentError::NotResumable {
                    agent: Arc::clone(&self.name),
                })])
            }
        }
    }
}

impl fmt::Debug for FnAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnAgent")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
