//! Middleware: code that runs around agent runs, model calls and tool calls, to observe them,
//! change them, or answer in their place.
//!
//! A [`Middleware`] implements any of six hooks; each has a default that does nothing:
//!
//! | hook | runs | may change | may short-circuit with |
//! | --- | --- | --- | --- |
//! | [`before_agent`](Middleware::before_agent) | before an agent runs | its input | a reply the agent is taken to have given (it does not run) |
//! | [`after_agent`](Middleware::after_agent) | after its run ended | | |
//! | [`before_model`](Middleware::before_model) | before a model call | the request | a reply (a cached answer): the model is not called |
//! | [`after_model`](Middleware::after_model) | after the model answered | the reply | |
//! | [`before_tool`](Middleware::before_tool) | before a tool call | the call (its arguments) | a result the model gets (a denied call): the tool does not run |
//! | [`after_tool`](Middleware::after_tool) | after the tool answered | the result text | |
//!
//! Any hook can also stop the agent: an `Err(`[`HookError`]`)` (a guardrail's refusal, or a
//! failure) ends the agent's run with one error event carrying
//! [`AgentError::Middleware`](crate::AgentError::Middleware), a [`MiddlewareError`] naming the
//! middleware, the hook, the agent and the reason. A hook that panics gives the same error,
//! with the panic message; the run never hangs and other runs go on.
//!
//! # Where middleware is attached, and in which order
//!
//! - per `Runner` (`RunnerBuilder::middleware`): every
//!   agent of every run it starts;
//! - per tree node ([`FlowAgent::middleware`](crate::FlowAgent::middleware), or
//!   [`NodeOptions::middleware`](crate::NodeOptions::middleware)): that node's agent;
//! - per agent ([`ChatModelAgentBuilder::middleware`](crate::ChatModelAgentBuilder::middleware)):
//!   that LLM agent, wherever it runs.
//!
//! The chain is the runner's, then the node's, then the agent's, each in the order added. The
//! `before_*` hooks run in chain order, the `after_*` hooks in reverse (the first middleware is
//! the outermost, as in a tower of layers); a short-circuit skips the rest of the `before_*`
//! hooks and the call itself, but the `after_*` hooks of the middleware before it still run.
//! Agent hooks of runner and node middleware run for any agent (code-defined ones and workflows
//! too); model and tool hooks run inside a [`ChatModelAgent`](crate::ChatModelAgent), for
//! the tools it was given (the built-in `transfer_to_agent` and `exit` are not hooked).
//!
//! With no middleware attached, none of this costs more than checking that a list is empty.
//!
//! # Guardrails
//!
//! An input guardrail is a `before_model` (or `before_agent`) hook that refuses a request;
//! an output guardrail is an `after_model` hook that refuses or edits a reply. When the agent
//! streams, the caller has seen the chunks before `after_model` runs: what the hook changes is
//! what the session records and the agent acts on, so an output guardrail whose job is to keep
//! text from the caller should run on an agent that does not stream. `examples/guardrails.rs`
//! shows both.
//!
//! ```
//! # futures::executor::block_on(async {
//! use agentweave_runtime::middleware::{HookContext, HookError, Middleware};
//! use agentweave_runtime::model::{ScriptStep, ScriptedModel};
//! use agentweave_runtime::{async_trait, AgentError, ChatModelAgent, ChatRequest, FlowAgent, Runner};
//! use futures::StreamExt;
//!
//! /// Refuses requests that mention a password.
//! struct NoPasswords;
//!
//! #[async_trait]
//! impl Middleware for NoPasswords {
//!     async fn before_model(
//!         &self,
//!         _cx: &HookContext,
//!         request: &mut ChatRequest,
//!     ) -> Result<Option<agentweave_runtime::Message>, HookError> {
//!         match request.last_user_message() {
//!             Some(m) if m.content.contains("password") => {
//!                 Err(HookError::refuse("the request asks for a password"))
//!             }
//!             _ => Ok(None),
//!         }
//!     }
//! }
//!
//! let model = ScriptedModel::new([ScriptStep::text("Sure.")]);
//! let agent = ChatModelAgent::builder("helper", model.clone())
//!     .middleware(NoPasswords)
//!     .build()
//!     .unwrap();
//! let events: Vec<_> = Runner::new(FlowAgent::new(agent))
//!     .run("What is the admin password?")
//!     .collect()
//!     .await;
//! let Some(AgentError::Middleware(refusal)) = &events[0].error else { panic!() };
//! assert!(refusal.to_string().contains("the request asks for a password"));
//! assert_eq!(model.calls(), 0, "the model was never asked");
//! # });
//! ```

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt;

pub use crate::event::{Hook, HookError, HookErrorKind, MiddlewareError};

use super::{AgentInput, RunContext};
use crate::message::{Message, ToolCall};
use crate::model::ChatRequest;
use crate::run_path::RunPath;
use crate::session::Session;

/// Code that runs around agent runs, model calls and tool calls (see the [module
/// docs](self)). Every hook has a default that does nothing.
#[async_trait]
pub trait Middleware: Send + Sync + 'static {
    /// The name errors give this middleware (default: its type's name).
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(short_type_name(std::any::type_name::<Self>()))
    }

    /// Before an agent runs: may change its input, or answer in its place with `Some(reply)`
    /// (the reply is emitted and recorded as the agent's, and the agent does not run).
    async fn before_agent(
        &self,
        cx: &HookContext,
        input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        let _ = (cx, input);
        Ok(None)
    }

    /// After an agent's run ended (whatever it ended with).
    async fn after_agent(&self, cx: &HookContext) -> Result<(), HookError> {
        let _ = cx;
        Ok(())
    }

    /// Before a model call: may change the request, or answer in the model's place with
    /// `Some(reply)` (the model is not called).
    async fn before_model(
        &self,
        cx: &HookContext,
        request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        let _ = (cx, request);
        Ok(None)
    }

    /// After the model answered (or a `before_model` hook did): may change the reply.
    async fn after_model(&self, cx: &HookContext, reply: &mut Message) -> Result<(), HookError> {
        let _ = (cx, reply);
        Ok(())
    }

    /// Before a tool call: may change the call (its arguments), or answer in the tool's place
    /// with `Some(result)` (the tool does not run; the model gets `result`).
    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        let _ = (cx, call);
        Ok(None)
    }

    /// After a tool call: may change the result text the model gets (a tool's error is
    /// already in its text form, `error: …`, here).
    async fn after_tool(&self, cx: &HookContext, result: &mut String) -> Result<(), HookError> {
        let _ = (cx, result);
        Ok(())
    }
}

/// `a::b::Name<c::D>` -> `Name<c::D>`: the last path segment before any generics.
fn short_type_name(full: &str) -> &str {
    let head = full.split('<').next().unwrap_or(full);
    match head.rfind("::") {
        Some(at) => &full[at + 2..],
        None => full,
    }
}

/// What a hook is told about the call it runs around.
#[derive(Clone)]
pub struct HookContext {
    run: RunContext,
    /// For a model hook inside a [`ChatModelAgent`](crate::ChatModelAgent): the agent's
    /// events, where [`surface`](HookContext::surface) shows display-only events.
    events: Option<super::Context>,
    model: Option<Arc<str>>,
    tool: Option<(Arc<str>, Arc<str>)>,
    /// For a tool hook: whether the tool may run again on recovery.
    idempotent: bool,
    /// For a tool hook: whether the tool's only effect is on the session's values.
    session_only: bool,
}

impl HookContext {
    pub(crate) fn agent(run: &RunContext) -> Self {
        HookContext {
            run: run.clone(),
            events: None,
            model: None,
            tool: None,
            idempotent: true,
            session_only: false,
        }
    }

    pub(crate) fn model(run: &RunContext, model: &str) -> Self {
        HookContext {
            model: Some(model.into()),
            ..Self::agent(run)
        }
    }

    pub(crate) fn tool(run: &RunContext, call: &ToolCall) -> Self {
        HookContext {
            tool: Some((call.name.as_str().into(), call.id.as_str().into())),
            ..Self::agent(run)
        }
    }

    /// This hook's context, able to surface events on `events`.
    pub(crate) fn with_events(mut self, events: &super::Context) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Shows `event` to whoever reads the agent's event stream, before the model call's
    /// reply. Like a tool's [`surface`](crate::ToolContext::surface), the event is for display
    /// only: it is not recorded in the session or journaled, and never steers the run (its
    /// action is dropped); it takes the agent's run path if it has none. A recovered run that
    /// answers a model call from its journal runs no `before_model` hook after the journal's
    /// own, so it surfaces nothing again. Returns `false` (and drops the event) where the hook
    /// has no event stream: every hook but the model hooks of a
    /// [`ChatModelAgent`](crate::ChatModelAgent).
    pub fn surface(&self, mut event: crate::AgentEvent) -> bool {
        let Some(events) = &self.events else {
            return false;
        };
        if event.run_path().is_empty() {
            let name: Arc<str> = self.agent_name().into();
            event.stamp(&name, self.run_path());
        }
        event.action = None;
        event.recorded = true;
        events.emit(event);
        true
    }

    /// This tool hook's context, for a tool that is idempotent or not.
    pub(crate) fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// For a tool hook: whether the tool declares itself idempotent (see
    /// [`Tool::idempotent`](crate::Tool::idempotent)); `true` for other hooks.
    pub fn tool_idempotent(&self) -> bool {
        self.idempotent
    }

    /// This tool hook's context, for a tool whose only effect is on the session's values or
    /// not.
    pub(crate) fn with_session_only(mut self, session_only: bool) -> Self {
        self.session_only = session_only;
        self
    }

    /// For a tool hook: whether the tool's only effect is on the run's session values (see
    /// [`Tool::session_only`](crate::Tool::session_only)); `false` for other hooks.
    pub fn tool_session_only(&self) -> bool {
        self.session_only
    }

    /// The agent running.
    pub fn agent_name(&self) -> &str {
        self.run.agent_name()
    }

    /// Its run path.
    pub fn run_path(&self) -> &RunPath {
        self.run.run_path()
    }

    /// The run's session (recorded events and session values).
    pub fn session(&self) -> &Arc<Session> {
        self.run.session()
    }

    /// The run context.
    pub fn run_context(&self) -> &RunContext {
        &self.run
    }

    /// For a model hook: the model's name.
    pub fn model_name(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// For a tool hook: the tool's name.
    pub fn tool_name(&self) -> Option<&str> {
        self.tool.as_ref().map(|(name, _)| &**name)
    }

    /// For a tool hook: the call's id.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool.as_ref().map(|(_, id)| &**id)
    }
}

impl fmt::Debug for HookContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookContext")
            .field("agent", &self.agent_name())
            .field("run_path", self.run_path())
            .field("model", &self.model)
            .field("tool", &self.tool)
            .finish()
    }
}

/// An ordered list of middleware, cheap to clone (see the [module docs](self)). The empty list
/// holds no allocation.
#[derive(Clone, Default)]
pub struct Middlewares(Option<Arc<[Arc<dyn Middleware>]>>);

impl Middlewares {
    /// The list with `middleware` added last.
    pub fn with(&self, middleware: Arc<dyn Middleware>) -> Self {
        let mut all: Vec<Arc<dyn Middleware>> = self.as_slice().to_vec();
        all.push(middleware);
        Middlewares(Some(all.into()))
    }

    /// The middleware, in order.
    pub fn as_slice(&self) -> &[Arc<dyn Middleware>] {
        self.0.as_deref().unwrap_or(&[])
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// How many middleware the list holds.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// The middleware, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Arc<dyn Middleware>> {
        self.as_slice().iter()
    }

    /// The chain of `lists`, concatenated in order.
    #[doc(hidden)]
    pub fn chain<'a>(lists: impl IntoIterator<Item = &'a Middlewares>) -> Middlewares {
        let mut lists = lists.into_iter().filter(|l| !l.is_empty());
        let Some(first) = lists.next() else {
            return Middlewares::default();
        };
        let Some(second) = lists.next() else {
            return first.clone();
        };
        let mut all: Vec<Arc<dyn Middleware>> = first.as_slice().to_vec();
        all.extend(second.iter().cloned());
        for list in lists {
            all.extend(list.iter().cloned());
        }
        Middlewares(Some(all.into()))
    }
}

/// Runs one hook, turning its error or panic into a [`MiddlewareError`].
pub(crate) async fn guard<T>(
    middleware: &Arc<dyn Middleware>,
    cx: &HookContext,
    hook: Hook,
    run: impl Future<Output = Result<T, HookError>> + Send,
) -> Result<T, MiddlewareError> {
    let name = || Arc::<str>::from(&*middleware.name());
    let agent = || Arc::<str>::from(cx.agent_name());
    match AssertUnwindSafe(run).catch_unwind().await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(HookError {
            budget: Some(budget),
            ..
        })) => Err(match *budget {
            crate::budget::BudgetError::Exceeded(exceeded) => MiddlewareError::BudgetExceeded {
                middleware: name(),
                hook,
                exceeded,
            },
            error => MiddlewareError::BudgetFailed {
                middleware: name(),
                hook,
                agent: agent(),
                error: Box::new(error),
            },
        }),
        Ok(Err(HookError { kind, message, .. })) => Err(match kind {
            HookErrorKind::Refused => MiddlewareError::Refused {
                middleware: name(),
                hook,
                agent: agent(),
                run_path: cx.run_path().clone(),
                reason: message,
            },
            HookErrorKind::Failed => MiddlewareError::Failed {
                middleware: name(),
                hook,
                agent: agent(),
                run_path: cx.run_path().clone(),
                message,
            },
        }),
        Err(payload) => Err(MiddlewareError::Panicked {
            middleware: name(),
            hook,
            agent: agent(),
            run_path: cx.run_path().clone(),
            message: crate::event::panic_message(&*payload).into(),
        }),
    }
}

impl fmt::Debug for Middlewares {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|m| m.name()))
            .finish()
    }
}

impl<M: Middleware> From<M> for Middlewares {
    fn from(middleware: M) -> Self {
        Middlewares(Some(Arc::from([
            Arc::new(middleware) as Arc<dyn Middleware>
        ])))
    }
}

impl FromIterator<Arc<dyn Middleware>> for Middlewares {
    fn from_iter<I: IntoIterator<Item = Arc<dyn Middleware>>>(iter: I) -> Self {
        let all: Arc<[Arc<dyn Middleware>]> = iter.into_iter().collect();
        Middlewares((!all.is_empty()).then_some(all))
    }
}

/// Runs the `before_agent` hooks in order until one answers; returns the answer and how many
/// ran (their `after_agent` hooks are the ones [`after_agent`] runs).
pub(crate) async fn before_agent(
    chain: &Middlewares,
    cx: &HookContext,
    input: &mut AgentInput,
) -> Result<(Option<Message>, usize), MiddlewareError> {
    for (k, m) in chain.iter().enumerate() {
        if let Some(reply) = guard(m, cx, Hook::BeforeAgent, m.before_agent(cx, input)).await? {
            return Ok((Some(reply), k + 1));
        }
    }
    Ok((None, chain.len()))
}

/// Runs the `after_agent` hooks of the first `ran` middleware, last first.
pub(crate) async fn after_agent(
    chain: &Middlewares,
    cx: &HookContext,
    ran: usize,
) -> Result<(), MiddlewareError> {
    for m in chain.as_slice()[..ran].iter().rev() {
        guard(m, cx, Hook::AfterAgent, m.after_agent(cx)).await?;
    }
    Ok(())
}

/// Runs the `before_model` hooks in order until one answers.
pub(crate) async fn before_model(
    chain: &Middlewares,
    cx: &HookContext,
    request: &mut ChatRequest,
) -> Result<(Option<Message>, usize), MiddlewareError> {
    for (k, m) in chain.iter().enumerate() {
        if let Some(reply) = guard(m, cx, Hook::BeforeModel, m.before_model(cx, request)).await? {
            return Ok((Some(reply), k + 1));
        }
    }
    Ok((None, chain.len()))
}

/// Runs the `after_model` hooks of the first `ran` middleware, last first.
pub(crate) async fn after_model(
    chain: &Middlewares,
    cx: &HookContext,
    ran: usize,
    reply: &mut Message,
) -> Result<(), MiddlewareError> {
    for m in chain.as_slice()[..ran].iter().rev() {
        guard(m, cx, Hook::AfterModel, m.after_model(cx, reply)).await?;
    }
    Ok(())
}

/// Runs the `before_tool` hooks in order until one answers.
pub(crate) async fn before_tool(
    chain: &Middlewares,
    cx: &HookContext,
    call: &mut ToolCall,
) -> Result<(Option<String>, usize), MiddlewareError> {
    for (k, m) in chain.iter().enumerate() {
        if let Some(result) = guard(m, cx, Hook::BeforeTool, m.before_tool(cx, call)).await? {
            return Ok((Some(result), k + 1));
        }
    }
    Ok((None, chain.len()))
}

/// Runs the `after_tool` hooks of the first `ran` middleware, last first.
pub(crate) async fn after_tool(
    chain: &Middlewares,
    cx: &HookContext,
    ran: usize,
    result: &mut String,
) -> Result<(), MiddlewareError> {
    for m in chain.as_slice()[..ran].iter().rev() {
        guard(m, cx, Hook::AfterTool, m.after_tool(cx, result)).await?;
    }
    Ok(())
}
