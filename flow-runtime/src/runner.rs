//! [`Runner`]: the top-level entry point of a run.

use std::sync::Arc;

use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::flow::FlowAgent;
use crate::message::{Message, MessageRef};
use crate::session::Session;

/// Runs a tree: each call starts a new run with its own [`Session`].
///
/// ```
/// use flow_runtime::{FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let bot = FnAgent::new("bot", |cx, input| async move {
///     cx.say(format!("you said: {}", input.messages[0].content));
///     Ok(())
/// });
/// let runner = Runner::new(FlowAgent::new(bot));
/// let events: Vec<_> = runner.query("hello").collect().await;
/// assert_eq!(events[0].message_output().unwrap().content, "you said: hello");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Runner {
    agent: FlowAgent,
    streaming: bool,
}

impl Runner {
    /// A runner for the tree `agent` is the root of (or the subtree it heads).
    pub fn new(agent: FlowAgent) -> Self {
        Runner {
            agent,
            streaming: false,
        }
    }

    /// Asks agents for streamed output (they see it as [`AgentInput::streaming`]).
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// The tree this runner runs.
    pub fn agent(&self) -> &FlowAgent {
        &self.agent
    }

    /// Starts a run on the given messages, in a new session.
    pub fn run(&self, messages: impl IntoIterator<Item = Message>) -> EventStream {
        self.run_in(Session::new(), messages.into_iter().map(Arc::new))
    }

    /// Starts a run on one user message.
    pub fn query(&self, text: impl Into<String>) -> EventStream {
        self.run([Message::user(text)])
    }

    /// Starts a run in a session you provide (to preset session values, or to read the record
    /// afterwards). Use a new session per run: a session is the record of one run.
    pub fn run_in(
        &self,
        session: Arc<Session>,
        messages: impl IntoIterator<Item = MessageRef>,
    ) -> EventStream {
        let messages: Vec<MessageRef> = messages.into_iter().collect();
        let cx = RunContext::new_run(
            session,
            messages.iter().cloned(),
            self.streaming,
            self.agent.name(),
        );
        let input = AgentInput {
            messages,
            streaming: self.streaming,
        };
        Arc::new(self.agent.clone()).run(cx, input)
    }
}
