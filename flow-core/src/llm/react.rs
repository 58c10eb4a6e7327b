//! The ReAct loop: ask the model, run the tools it called, repeat.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::Stream;
use tracing::Instrument;

use super::agent::*;
use super::cancel_point::CancelStop;
use super::tool_calls::*;
use crate::agent::cancel::SafePoint;
use crate::agent::middleware::{self, HookContext, Middlewares};
use crate::agent::Context;
use crate::agent::FlowAgent;
use crate::agent::{AgentInfo, AgentInput};
use crate::event::{AgentError, AgentEvent, ToolFrame};
use crate::history::ContextBudget;
use crate::llm::structured::StructuredOutput;
use crate::llm::telemetry;
use crate::message::{Message, MessageRef};
use crate::model::{ChatModel, ChatRequest, ModelError, ModelStream, RetryPolicy};
use crate::resume::ResumeInfo;
use crate::session::SessionEvent;
use crate::stream::{MessageStream, StreamError};

impl ChatModelAgent {
    /// A run of the agent on `input`: the agent's own agent hooks around the ReAct loop.
    /// Takes the agent by `Arc` so the run's future is this one alone (no outer block holding
    /// a second copy of the context and input).
    pub(super) async fn react(
        self: Arc<Self>,
        cx: Context,
        input: AgentInput,
    ) -> Result<(), AgentError> {
        if self.middleware.is_empty() {
            self.react_unhooked(&cx, input).await
        } else {
            // Boxed: the hooks' state stays out of the future of an agent without them.
            Box::pin(self.react_hooked(&cx, input)).await
        }
    }

    /// [`react_unhooked`](Self::react_unhooked) inside the agent's own middleware's agent
    /// hooks (the runner's and the node's run in the flow, around any agent).
    async fn react_hooked(&self, cx: &Context, mut input: AgentInput) -> Result<(), AgentError> {
        let hcx = HookContext::agent(cx.run_context());
        let (answer, ran) =
            Box::pin(middleware::before_agent(&self.middleware, &hcx, &mut input)).await?;
        if let Some(reply) = answer {
            cx.emit(AgentEvent::message(reply));
            Box::pin(middleware::after_agent(&self.middleware, &hcx, ran)).await?;
            return Ok(());
        }
        let result = self.react_unhooked(cx, input).await;
        Box::pin(middleware::after_agent(&self.middleware, &hcx, ran)).await?;
        result
    }

    /// The ReAct loop from the first request made of `input`.
    async fn react_unhooked(&self, cx: &Context, input: AgentInput) -> Result<(), AgentError> {
        let toolset = self.node_toolset(cx);
        let streaming = input.streaming;
        // The first request is built outside this future's state (a local held across the
        // await would take its room in every agent run's allocation).
        let request = self.first_request(cx, &toolset, input)?;
        self.react_loop(cx, &toolset, request, 0, streaming).await
    }

    /// The first request of a run: the system message, then `input`'s messages.
    fn first_request(
        &self,
        cx: &Context,
        toolset: &Toolset,
        input: AgentInput,
    ) -> Result<ChatRequest, AgentError> {
        let system = self.system_message(cx, toolset)?;
        // Room for the system message, the input, the model's first reply and one tool
        // result: a one-round turn never regrows it.
        let mut messages = Vec::with_capacity(input.messages.len() + 3);
        messages.extend(system);
        messages.extend(input.messages.iter().cloned());
        self.seed_prompt_tokens(cx, &messages, &input.messages, toolset);
        Ok(ChatRequest {
            messages,
            tools: toolset.definitions.clone(),
            output_schema: self.output.as_ref().map(|o| Arc::clone(&o.schema)),
            params: self.run_params(cx),
        })
    }

    /// The middleware around this agent's model and tool calls where `cx` runs it: the
    /// runner's, the node's, the agent's own.
    pub(super) fn middleware_chain(&self, cx: &Context) -> Middlewares {
        let run = cx.run_middleware();
        let node = cx.node().map(|n| &n.options().middleware);
        if run.is_empty() && node.map_or(true, Middlewares::is_empty) && self.middleware.is_empty()
        {
            // The common case, checked without building anything.
            return Middlewares::default();
        }
        Middlewares::chain(
            [Some(run), node, Some(&self.middleware)]
                .into_iter()
                .flatten(),
        )
    }

    /// The tool set of the node `cx` runs at (cached per set of transfer targets).
    pub(super) fn node_toolset(&self, cx: &Context) -> Arc<Toolset> {
        let toolset = self.own_toolset(cx);
        match cx.run_context().frontend_tools() {
            [] => toolset,
            extra => Arc::new(toolset.with_frontend(extra)),
        }
    }

    /// The tool set of the agent at its node, before the run's front-end tools.
    fn own_toolset(&self, cx: &Context) -> Arc<Toolset> {
        let node = cx.node();
        let same = |targets: &[AgentInfo]| match node {
            Some(node) => node.has_transfer_targets(targets),
            None => targets.is_empty(),
        };
        let read_back = self.read_back_page(node);
        if let Some(toolset) = self.cached_toolset(same, read_back) {
            return toolset;
        }
        let targets = node.map(FlowAgent::transfer_targets).unwrap_or_default();
        let payloads = node.map(FlowAgent::target_payloads).unwrap_or_default();
        self.toolset_for(targets, payloads, read_back)
    }

    /// The ReAct loop from a conversation, with `used` model calls already made.
    pub(super) async fn react_loop(
        &self,
        cx: &Context,
        toolset: &Toolset,
        mut request: ChatRequest,
        mut used: usize,
        streaming: bool,
    ) -> Result<(), AgentError> {
        let mut bad_answers: u32 = 0;
        while used < self.max_iterations {
            let reply = match self.budget_at(cx.node()) {
                None => self.ask_model(cx, &request, streaming).await?,
                // Boxed: a budget's state stays out of the future of an agent without one.
                Some(budget) => {
                    Box::pin(self.ask_within(cx, budget, &mut request, streaming)).await?
                }
            };
            used += 1;
            request.messages.push(Arc::clone(&reply));
            // Eino's rule: an `AFTER_MODEL` cancel takes effect at the end of the model call
            // that ends first after it arrived (a final answer too: in a workflow the run would
            // go on to the next agent); one that arrives during tool calls waits for the next.
            if cx.stops_at(SafePoint::AfterModel).is_some() {
                let at = request.messages.len() - 1;
                return self.stop_for_cancel(
                    cx,
                    SafePoint::AfterModel,
                    &request.messages,
                    used,
                    Some(at),
                );
            }
            if reply.tool_calls.is_empty() {
                // Messages sent to the run while the model answered: the model is asked
                // again with them.
                if self.take_steers(cx, &mut request) {
                    continue;
                }
                let Some(output) = &self.output else {
                    self.store_output(cx, &reply.content);
                    return Ok(());
                };
                match self.take_output(cx, output, &reply, &mut bad_answers) {
                    Ok(None) => {
                        self.store_output(cx, &reply.content);
                        return Ok(());
                    }
                    Ok(Some(correction)) => {
                        request.messages.push(Arc::new(Message::user(correction)));
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            let reply_at = request.messages.len() - 1;
            let turn =
                Box::pin(self.run_tools(cx, toolset, &mut request.messages, reply_at, used, None))
                    .await?;
            if self.turn_ended(cx, turn) {
                return Ok(());
            }
            if cx.stops_at(SafePoint::AfterTools).is_some() {
                return self.stop_for_cancel(
                    cx,
                    SafePoint::AfterTools,
                    &request.messages,
                    used,
                    None,
                );
            }
            // The safe point for steering: the tool calls have run, the model is asked next.
            self.take_steers(cx, &mut request);
        }
        Err(ChatAgentError::MaxIterations {
            agent: Arc::clone(&self.name),
            limit: self.max_iterations,
        }
        .into())
    }

    /// Takes in the run's steering messages (see [`SteerQueue`](crate::SteerQueue)): each
    /// becomes a user message of this agent, emitted (so recorded at this point of the run)
    /// and added to the conversation. Whether there was any.
    fn take_steers(&self, cx: &Context, request: &mut ChatRequest) -> bool {
        let Some(queue) = cx.steering() else {
            return false;
        };
        let messages = queue.take_at(cx.run_path());
        if messages.is_empty() {
            return false;
        }
        for message in messages {
            let message: MessageRef = Arc::new(message);
            cx.emit(AgentEvent::message(Arc::clone(&message)));
            request.messages.push(message);
        }
        true
    }

    /// Resumes a turn whose tool calls were interrupted: the saved conversation, the results
    /// of the calls that had finished, and a resumed run of each interrupted call; then the
    /// ReAct loop goes on.
    pub(super) async fn resume_react(
        &self,
        cx: Context,
        input: AgentInput,
        info: ResumeInfo,
    ) -> Result<(), AgentError> {
        let fail = |message: String| -> AgentError {
            ChatAgentError::Resume {
                agent: Arc::clone(&self.name),
                message: message.into(),
            }
            .into()
        };
        if info.was_interrupted() {
            if let Some(stop) = info.state().and_then(CancelStop::of) {
                return self.resume_cancelled(&cx, input, stop).await;
            }
            return Err(fail(
                "the interrupt names the agent itself, but it only stops for interrupts raised \
                 inside its tool calls"
                    .into(),
            ));
        }
        let saved: SavedTurn = info
            .state()
            .cloned()
            .ok_or_else(|| fail("its interrupt carries no saved conversation".into()))
            .and_then(|state| {
                serde_json::from_value(state)
                    .map_err(|e| fail(format!("its saved conversation does not decode ({e})")))
            })?;
        let mut below: Vec<(ToolFrame, ResumeInfo)> = info.tool_calls();
        for (call, _) in &below {
            if !saved.pending.iter().any(|(id, _)| *id == call.call_id) {
                return Err(fail(format!(
                    "the resume info has interrupt points in tool call '{}' ({}), which was not \
                     pending",
                    call.call_id, call.name
                )));
            }
        }
        let mut resumes = Vec::with_capacity(saved.pending.len());
        for (id, state) in &saved.pending {
            let Some(k) = below.iter().position(|(call, _)| call.call_id == *id) else {
                return Err(fail(format!(
                    "tool call '{id}' was interrupted but the resume info has no interrupt \
                     point in it; resume with every interrupt of the run"
                )));
            };
            let (_, info) = below.remove(k);
            resumes.push((id.clone(), info, state.clone()));
        }
        let reply_at = saved
            .reply_index()
            .filter(|&at| !saved.messages[at].tool_calls.is_empty())
            .ok_or_else(|| fail("its saved conversation has no reply that called tools".into()))?;
        let toolset = self.node_toolset(&cx);
        let mut request = ChatRequest {
            messages: saved.messages.clone(),
            tools: toolset.definitions.clone(),
            output_schema: self.output.as_ref().map(|o| Arc::clone(&o.schema)),
            params: self.run_params(&cx),
        };
        let resumed = Resumed {
            next_call: saved.next_call,
            ending: saved.ending.clone(),
            output: saved.output.clone(),
            results: saved.results.clone(),
            direct: saved.direct.clone(),
            calls: resumes,
        };
        let turn = self
            .run_tools(
                &cx,
                &toolset,
                &mut request.messages,
                reply_at,
                saved.used,
                Some(resumed),
            )
            .await?;
        if self.turn_ended(&cx, turn) {
            return Ok(());
        }
        // The resume's history modifier edits the conversation before the model sees it.
        if let Some(modify) = cx.agent_options().and_then(|o| o.history_modifier.clone()) {
            request.messages = modify(std::mem::take(&mut request.messages));
        }
        self.react_loop(&cx, &toolset, request, saved.used, input.streaming)
            .await
    }

    /// Whether a turn of tool calls ended the run; stores its final output, if it made one.
    pub(super) fn turn_ended(&self, cx: &Context, turn: Turn) -> bool {
        match turn {
            Turn::Continue => false,
            Turn::Ended(output) => {
                if let Some(output) = output {
                    self.store_output(cx, &output);
                }
                true
            }
            Turn::Interrupted => true,
        }
    }

    /// [`ask_model`](Self::ask_model) with `request` first fitted to `budget`; the reply's
    /// usage calibrates the budget's counter.
    async fn ask_within(
        &self,
        cx: &Context,
        budget: &ContextBudget,
        request: &mut ChatRequest,
        streaming: bool,
    ) -> Result<MessageRef, AgentError> {
        let fitted = self.fit_budget(cx, budget, request).await?;
        let reply = self.ask_model(cx, &fitted.request, streaming).await?;
        self.calibrate(budget, fitted.counted, &reply);
        Ok(reply)
    }

    /// One answer of the model, retried per the policy, with the middleware around it;
    /// emitted as an event (a streamed one as it streams); its usage is added to the run's.
    pub(super) async fn ask_model(
        &self,
        cx: &Context,
        request: &ChatRequest,
        streaming: bool,
    ) -> Result<MessageRef, AgentError> {
        self.check_model_budget(cx, request)?;
        let chain = self.middleware_chain(cx);
        let (reply, streamed) = if chain.is_empty() {
            self.call_model(cx, request, streaming).await?
        } else {
            // Boxed: the hooks' state stays out of the future of a call without middleware.
            Box::pin(self.hooked_model_call(cx, &chain, request, streaming)).await?
        };
        self.charge_model_call(cx, &reply);
        if streamed {
            // The caller has had the chunks; inside a tree the session gets the whole message
            // now that it is complete (see the module docs of `agent`).
            if cx.node().is_some() {
                cx.session().push(SessionEvent::new(
                    cx.agent_name(),
                    cx.run_path().clone(),
                    Some(Arc::clone(&reply)),
                    None,
                ));
            }
        } else {
            let mut event = AgentEvent::message(Arc::clone(&reply));
            // A transfer reply shares the context form the tree made for the transfer (used
            // only if it reads the same).
            event.context = cx
                .node()
                .and_then(|n| n.transfer_forms_like(&reply))
                .map(|(call, _)| call);
            cx.emit(event);
        }
        Ok(reply)
    }

    /// [`call_model`](Self::call_model) inside the `before_model` and `after_model` hooks of
    /// `chain`: a hook may change the request, answer in the model's place, or edit the reply.
    async fn hooked_model_call(
        &self,
        cx: &Context,
        chain: &Middlewares,
        request: &ChatRequest,
        streaming: bool,
    ) -> Result<(MessageRef, bool), AgentError> {
        let hcx = HookContext::model(cx.run_context(), self.model.model_name()).with_events(cx);
        let mut edited = request.clone();
        let (answer, ran) = middleware::before_model(chain, &hcx, &mut edited).await?;
        let (mut reply, streamed) = match answer {
            Some(reply) => {
                // An answer in the model's place that reports usage (the journal's replay of
                // a recovered run, a cache) says those tokens were spent: they count.
                if let Some(usage) = reply.usage.as_deref().copied() {
                    let model = reply.model.as_deref().unwrap_or(self.model.model_name());
                    cx.session().add_usage(cx.agent_name(), model, usage);
                }
                (reply, false)
            }
            None => {
                let (reply, streamed) = self.call_model(cx, &edited, streaming).await?;
                (Arc::unwrap_or_clone(reply), streamed)
            }
        };
        middleware::after_model(chain, &hcx, ran, &mut reply).await?;
        Ok((Arc::new(reply), streamed))
    }

    /// Calls the model, retried per the policy, each attempt in its span; returns the reply
    /// and whether it was streamed to the caller (a whole reply is not emitted yet).
    async fn call_model(
        &self,
        cx: &Context,
        request: &ChatRequest,
        streaming: bool,
    ) -> Result<(MessageRef, bool), AgentError> {
        match cx.run_context().spending() {
            None => self.model_attempts(cx, request, streaming).await,
            // Boxed: the shared spending's state stays out of the future of a run without it.
            Some(gate) => Box::pin(self.spending_call(cx, gate, request, streaming)).await,
        }
    }

    /// The model's attempts at one answer, retried per the policy (see
    /// [`call_model`](Self::call_model)).
    pub(super) async fn model_attempts(
        &self,
        cx: &Context,
        request: &ChatRequest,
        streaming: bool,
    ) -> Result<(MessageRef, bool), AgentError> {
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let span = telemetry::model_span(
                cx,
                self.model.model_name(),
                self.model.provider_name(),
                attempt,
                streaming,
            );
            if self.record_content {
                telemetry::record_request(&span, request);
            }
            let result = if streaming {
                // Boxed: the stream's state stays out of the future of a whole-reply call.
                Box::pin(self.stream_attempt(cx, request, attempt))
                    .instrument(span.clone())
                    .await
            } else if span.is_none() {
                // No subscriber wants the span: the call is not wrapped in it (a wrapper
                // enters and leaves even a span that is none on every poll).
                self.model.generate(request).await.map(Arc::new)
            } else {
                self.model
                    .generate(request)
                    .instrument(span.clone())
                    .await
                    .map(Arc::new)
            };
            match result {
                Ok(reply) => {
                    telemetry::record_reply(&span, &reply, self.record_content);
                    if !span.is_disabled() {
                        self.record_cost(cx, &span, &reply);
                    }
                    // Counted as soon as the model answered: a reply a middleware refuses
                    // later has used its tokens all the same.
                    if let Some(usage) = reply.usage.as_deref().copied() {
                        let model = reply.model.as_deref().unwrap_or(self.model.model_name());
                        cx.session().add_usage(cx.agent_name(), model, usage);
                    }
                    return Ok((reply, streaming));
                }
                Err(error) if self.retry.should_retry(attempt, &error) => {
                    telemetry::record_model_error(&span, &error);
                    drop(span);
                    let wait = self.retry_wait(cx, attempt, &error);
                    tracing::warn!(
                        agent = %self.name,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        %error,
                        "model call failed; retrying"
                    );
                    cx.run_context().host().sleep(wait).await;
                }
                Err(source) => {
                    telemetry::record_model_error(&span, &source);
                    return Err(ChatAgentError::Model {
                        agent: Arc::clone(&self.name),
                        attempts: attempt,
                        source,
                    }
                    .into());
                }
            }
        }
    }

    /// The wait before retry `attempt` after `error`: the policy's backoff, jittered by a share
    /// drawn from the host's clock, the agent and the attempt (the same on a manual clock).
    fn retry_wait(&self, cx: &Context, attempt: u32, error: &ModelError) -> std::time::Duration {
        use std::hash::BuildHasher;
        let wait = self.retry.delay(attempt, error);
        if self.retry.jitter <= 0.0 || error.retry_after().is_some() {
            // A server's Retry-After is a floor, not a hint: it is not shortened.
            return wait;
        }
        let now = cx.run_context().host().now();
        let hash = rustc_hash::FxBuildHasher.hash_one((now, attempt, &*self.name, cx.run_path()));
        // Fx mixes its last input weakly into the high bits: spread the whole word.
        let seed = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        self.retry.jittered(wait, seed)
    }

    /// Decodes a final answer into the declared output type and stores it; returns the
    /// correction to send the model if it did not decode and retries are left.
    pub(super) fn take_output(
        &self,
        cx: &Context,
        output: &StructuredOutput,
        reply: &Message,
        bad_answers: &mut u32,
    ) -> Result<Option<String>, AgentError> {
        match output.schema.decode(&reply.content) {
            Ok(value) => {
                let key = output.key.as_deref().unwrap_or(&self.name);
                cx.session().add_values([(key.to_owned(), value)]);
                Ok(None)
            }
            Err(error) if *bad_answers < output.retries => {
                *bad_answers += 1;
                tracing::debug!(agent = %self.name, %error, "answer does not decode; asking again");
                Ok(Some(output.schema.correction(&error)))
            }
            Err(error) => Err(ChatAgentError::Output {
                agent: Arc::clone(&self.name),
                schema: output.schema.name.as_str().into(),
                attempts: *bad_answers + 1,
                error: error.to_string().into(),
                answer: crate::model::truncate(&reply.content, 500).into(),
            }
            .into()),
        }
    }

    /// One streamed attempt: the chunks go to the caller live; the agent gets the whole
    /// message only if the stream completes (see the module docs).
    pub(super) async fn stream_attempt(
        &self,
        cx: &Context,
        request: &ChatRequest,
        attempt: u32,
    ) -> Result<MessageRef, ModelError> {
        let chunks = self.model.stream(request).await?;
        let failure: Arc<Mutex<Option<ModelError>>> = Arc::default();
        let live = MessageStream::from_stream(AttemptChunks {
            chunks,
            failure: Arc::clone(&failure),
            retry: self.retry.clone(),
            agent: Arc::clone(&self.name),
            attempt,
        });
        // The agent's own copy of the message is concatenated as the chunks pass: it holds
        // no reader, so the stream keeps no chunk for it.
        let record = live.record();
        let mut event = AgentEvent::stream(live);
        // Inside a tree the flow would record the event's stream as it passes; this agent
        // records the message itself once the stream is complete (in `ask_model`).
        event.recorded = cx.node().is_some();
        // Let the consumer take the event (and every one before it) first, so that its reader
        // pulls the chunks live; the record then reads whatever the consumer has not.
        cx.yield_event(event).await;
        match record.message().await {
            Ok(whole) => Ok(whole),
            Err(e) => Err(failure
                .lock()
                .expect("model failure slot")
                .take()
                .unwrap_or_else(|| ModelError::StreamInterrupted {
                    model: self.model.model_name().into(),
                    message: e.message,
                })),
        }
    }
}

/// A streamed attempt's chunks as the source of its [`MessageStream`]: a model error becomes a
/// [`StreamError`] that says whether the agent will retry, and is kept for the agent.
pub(super) struct AttemptChunks {
    pub(super) chunks: ModelStream,
    pub(super) failure: Arc<Mutex<Option<ModelError>>>,
    pub(super) retry: RetryPolicy,
    pub(super) agent: Arc<str>,
    pub(super) attempt: u32,
}

impl AttemptChunks {
    #[cold]
    pub(super) fn fail(&self, error: ModelError) -> StreamError {
        let next = if self.retry.should_retry(self.attempt, &error) {
            format!(
                "agent '{}' will retry (attempt {} of {})",
                self.agent,
                self.attempt + 1,
                self.retry.max_retries + 1
            )
        } else {
            format!("agent '{}' is giving up", self.agent)
        };
        let text = format!("{error}; {next}");
        *self.failure.lock().expect("model failure slot") = Some(error);
        StreamError::new(text)
    }
}

impl Stream for AttemptChunks {
    type Item = Result<Message, StreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        match self.chunks.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => Poll::Ready(Some(Ok(chunk))),
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(self.fail(error)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}
