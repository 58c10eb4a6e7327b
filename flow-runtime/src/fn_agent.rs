//! [`FnAgent`]: an agent made from an async closure, for tests, examples and glue code.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::event::AgentError;
use crate::generate::{generate, Context};

type Body = dyn Fn(Context, AgentInput) -> futures::future::BoxFuture<'static, Result<(), AgentError>>
    + Send
    + Sync;

/// An agent whose behaviour is an async closure: it emits through the [`Context`] and ends
/// with whatever action its last event carries.
///
/// ```
/// use flow_runtime::{FnAgent, FlowAgent, Runner};
/// use futures::StreamExt;
///
/// # futures::executor::block_on(async {
/// let hello = FnAgent::new("hello", |cx, _input| async move {
///     cx.say("Hello!");
///     Ok(())
/// });
/// let events: Vec<_> = Runner::new(FlowAgent::new(hello)).query("hi").collect().await;
/// assert_eq!(events[0].message_output().unwrap().content, "Hello!");
/// assert_eq!(events[0].run_path().to_string(), "hello");
/// # });
/// ```
#[derive(Clone)]
pub struct FnAgent {
    name: Arc<str>,
    description: Arc<str>,
    body: Arc<Body>,
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
            body: Arc::new(move |cx, input| Box::pin(body(cx, input))),
        }
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
        generate(cx, move |cx| (self.body)(cx, input))
    }
}

impl fmt::Debug for FnAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnAgent")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
