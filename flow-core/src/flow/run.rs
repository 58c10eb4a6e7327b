//! The run loop of a tree: runs the current node, records and forwards its events, then
//! follows the transfer its last own action asks for, until something else ends the run.
//!
//! It is a stream written by hand (a state machine) rather than async code under
//! [`generate`](crate::generate): an event goes from the running agent's stream to the caller
//! as the return value of one `poll_next`, with no queue, lock or wake-up of the loop's own on
//! the way. Only what may wait (an input built from a store or a streamed message, middleware)
//! is async code: a node's input is built at once when nothing it reads can wait (no thread,
//! no streamed message in the session), else by a boxed future the loop polls.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use futures::stream::CatchUnwind;
use futures::task::noop_waker_ref;
use futures::{FutureExt, Stream, StreamExt};

use super::{build_input, FlowAgent};
use crate::agent::middleware::{self, HookContext, MiddlewareError, Middlewares};
use crate::agent::{
    payload_key, payload_of_call, result_key, AgentInput, Delegation, EventStream, RunContext,
    TaskResult,
};
use crate::event::{Action, AgentError, AgentEvent, InterruptFrame};
use crate::message::Message;
use crate::resume::ResumeInfo;
use crate::run_path::RunPath;
use crate::session::SessionEvent;

/// The events of `start` run in `out` (the flow's own context) as a tree: see
/// [`FlowAgent`]'s run rules. With `resume`, the first node is the one the interrupt points
/// name, at their run path, and it is resumed instead of run.
pub(super) fn run_flow(
    start: FlowAgent,
    out: RunContext,
    resume: Option<ResumeInfo>,
) -> EventStream {
    let path = out.run_path().clone();
    let mut state = Loop {
        out,
        current: start,
        path,
        resume: None,
        step: Step::Start,
        node: None,
    };
    if let Some(info) = resume {
        if let Err(e) = state.locate(info) {
            // As an error the loop returned: the caller stamps it.
            state.step = Step::Last(Box::new(AgentEvent::error(e)));
        }
    }
    EventStream::new(FlowRun {
        preparing: None,
        state,
    })
}

/// A node's context, given back with the node's input.
type Prepared = (RunContext, Result<AgentInput, AgentError>);

/// Builds the input of the node `run` is for; gives `run` back with it.
async fn prepare(run: RunContext) -> Prepared {
    let node = run.node().expect("a node's context names its node");
    let input = build_input(&run, node).await;
    (run, input)
}

/// Whether the input of the node `run` is for can be built without waiting: outside a thread
/// (whose earlier turns a store may take time to read) and in a session that holds no
/// streamed message (which may not have ended). Then the loop builds it at once, with no
/// future kept between polls.
fn prepares_at_once(run: &RunContext) -> bool {
    run.thread().is_none() && !run.session().holds_streams()
}

/// The run loop as a stream: the future building a node's input when that may wait (boxed:
/// most hops build it at once, and the loop's state stays small); everything else is in
/// [`Loop`].
struct FlowRun {
    preparing: Option<BoxFuture<'static, Prepared>>,
    state: Loop,
}

/// The loop's state between polls.
struct Loop {
    /// The flow's own context: each node's context derives from it.
    out: RunContext,
    /// The node running, or about to.
    current: FlowAgent,
    /// Its run path.
    path: RunPath,
    /// What the first node resumes from, until it starts.
    resume: Option<ResumeInfo>,
    step: Step,
    /// The current node's run, once its input is built.
    node: Option<NodeRun>,
}

/// Where the loop is.
enum Step {
    /// The current node is next: its input is to be built.
    Start,
    /// Its input is being built (the `preparing` future).
    Preparing,
    /// Its middleware's `before_agent` hooks run.
    Before(BoxFuture<'static, Before>),
    /// Its agent runs; its events are forwarded.
    Running,
    /// Its middleware's `after_agent` hooks run; then the run follows the transfer the node
    /// asked for, or ends.
    After(BoxFuture<'static, Result<(), MiddlewareError>>, Then),
    /// The run ends after this event (boxed: once per run at most, and the loop's state stays
    /// small).
    Last(Box<AgentEvent>),
    /// The run has ended.
    Done,
}

/// What comes after the `after_agent` hooks.
#[derive(Clone, Copy)]
enum Then {
    /// Follow the node's transfer, if it asked for one.
    Follow,
    /// End the run (middleware answered in the agent's place).
    End,
}

/// What the `before_agent` hooks gave: the chain, the input they may have changed, and
/// whether one answered in the agent's place.
type Before = (
    Hooked,
    AgentInput,
    Result<(Option<Message>, usize), MiddlewareError>,
);

/// A node's middleware chain, its hook context, and how many `before_agent` hooks ran (those
/// get their `after_agent`).
struct Hooked {
    hooks: Middlewares,
    hcx: HookContext,
    ran: usize,
}

impl Hooked {
    /// The `after_agent` hooks, as a future the loop polls in place.
    fn after(self: Box<Self>) -> BoxFuture<'static, Result<(), MiddlewareError>> {
        async move { middleware::after_agent(&self.hooks, &self.hcx, self.ran).await }.boxed()
    }
}

/// One node's run.
struct NodeRun {
    /// The node's context, until its agent takes it (the loop records the node's events
    /// through its own context: they share the run).
    run: Option<RunContext>,
    /// The agent's events (a panic while polling becomes an error event).
    events: Option<CatchUnwind<AssertUnwindSafe<EventStream>>>,
    /// The agent's span, entered while its stream is polled; `None` without a subscriber
    /// (boxed: the loop's state stays small when nobody traces).
    span: Option<Box<tracing::Span>>,
    hooked: Option<Box<Hooked>>,
    /// The last own event, as recorded: its action decides what happens next.
    last_own: Option<Arc<SessionEvent>>,
    interrupted: bool,
    /// The ids given to the interrupts forwarded so far.
    interrupt_ids: Vec<String>,
    /// The interrupts being resumed: one raised again at the same place keeps its id.
    earlier: Option<ResumeInfo>,
    /// How many events the session held when the node started (a single-turn node's
    /// answers are read from there).
    first_event: usize,
}

impl Stream for FlowRun {
    type Item = AgentEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        let this = self.get_mut();
        let state = &mut this.state;
        loop {
            match &mut state.step {
                Step::Start => {
                    let run = state
                        .out
                        .at(Arc::clone(&state.current.this().name), state.path.clone())
                        .with_node(state.current.clone());
                    if prepares_at_once(&run) {
                        // Nothing it reads can wait: ready at its first poll (made and polled
                        // in place, never moved).
                        let built = {
                            let node = run.node().expect("a node's context names its node");
                            let building = std::pin::pin!(build_input(&run, node));
                            building.poll(&mut TaskContext::from_waker(noop_waker_ref()))
                        };
                        match built {
                            Poll::Ready(Ok(input)) => state.prepared(run, input),
                            // As an error the loop returned: the caller stamps it.
                            Poll::Ready(Err(e)) => state.end_with(AgentEvent::error(e)),
                            Poll::Pending => {
                                // Unexpectedly waiting: built again by a future (what the
                                // first try took from the session is built afresh).
                                this.preparing = Some(prepare(run).boxed());
                                state.step = Step::Preparing;
                            }
                        }
                    } else {
                        this.preparing = Some(prepare(run).boxed());
                        state.step = Step::Preparing;
                    }
                }
                Step::Preparing => {
                    let Some(preparing) = this.preparing.as_mut() else {
                        unreachable!("a node being prepared has its future");
                    };
                    let Poll::Ready((run, input)) = preparing.poll_unpin(cx) else {
                        return Poll::Pending;
                    };
                    this.preparing = None;
                    match input {
                        Ok(input) => state.prepared(run, input),
                        // As an error the loop returned: the caller stamps it.
                        Err(e) => state.end_with(AgentEvent::error(e)),
                    }
                }
                Step::Before(before) => {
                    let Poll::Ready((hooked, input, outcome)) = before.as_mut().poll(cx) else {
                        return Poll::Pending;
                    };
                    if let Some(answer) = state.before_ran(hooked, input, outcome) {
                        return Poll::Ready(Some(answer));
                    }
                }
                Step::Running => match state.poll_agent(cx) {
                    Poll::Ready(Some(event)) => return Poll::Ready(Some(event)),
                    Poll::Ready(None) => {}
                    Poll::Pending => return Poll::Pending,
                },
                Step::After(after, then) => {
                    let Poll::Ready(done) = after.as_mut().poll(cx) else {
                        return Poll::Pending;
                    };
                    let then = *then;
                    match done {
                        Err(e) => {
                            let event = state.stamped(AgentEvent::error(e.into()));
                            state.end_with(event);
                        }
                        Ok(()) => match then {
                            Then::Follow => state.follow(),
                            Then::End => state.end(),
                        },
                    }
                }
                Step::Last(_) => {
                    let Step::Last(event) = std::mem::replace(&mut state.step, Step::Done) else {
                        unreachable!()
                    };
                    return Poll::Ready(Some(*event));
                }
                Step::Done => return Poll::Ready(None),
            }
        }
    }
}

impl Loop {
    /// Moves to the node the interrupt points of `info` name (anywhere in the tree), at the
    /// run path they name.
    fn locate(&mut self, mut info: ResumeInfo) -> Result<(), AgentError> {
        // Given the level of the custom agent that holds this tree (a wrapper whose `resume`
        // passes its own info on), the tree's nodes are one level below.
        while let Some((name, at)) = info.node() {
            if *at != self.path || self.current.find(name).is_some() || info.was_interrupted() {
                break;
            }
            let mut below = info.children();
            if below.len() != 1 {
                break;
            }
            info = below.remove(0).1;
        }
        let Some((name, at)) = info.node() else {
            return Err(AgentError::Checkpoint {
                message: format!(
                    "the interrupt points below '{}' disagree on which agent was running",
                    self.current.name()
                )
                .into(),
            });
        };
        let at = at.clone();
        self.current = self
            .current
            .find(name)
            .ok_or_else(|| AgentError::Checkpoint {
                message: format!(
                    "the checkpoint resumes agent '{name}', which is not in the tree of '{}'",
                    self.current.name()
                )
                .into(),
            })?;
        self.path = at;
        self.resume = Some(info);
        Ok(())
    }

    /// `event` stamped with the current node's name and run path.
    fn stamped(&self, event: AgentEvent) -> AgentEvent {
        event.stamped(&self.current.this().name, &self.path)
    }

    /// Ends the run after `event`; what the node ran is dropped first.
    fn end_with(&mut self, event: AgentEvent) {
        self.node = None;
        self.step = Step::Last(Box::new(event));
    }

    /// Ends the run.
    fn end(&mut self) {
        self.node = None;
        self.step = Step::Done;
    }

    /// The current node's input is built: its `before_agent` hooks run if it has any, else
    /// its agent starts.
    fn prepared(&mut self, run: RunContext, input: AgentInput) {
        let node = self.current.this();
        let span = crate::trace::agent_span(
            &node.name,
            &node.description,
            &self.path,
            run.conversation_id(),
        );
        let no_hooks = run.run_middleware().is_empty() && node.options.middleware.is_empty();
        let hooks = (!no_hooks)
            .then(|| Middlewares::chain([run.run_middleware(), &node.options.middleware]));
        self.node = Some(NodeRun {
            run: Some(run),
            events: None,
            span,
            hooked: None,
            last_own: None,
            interrupted: false,
            interrupt_ids: Vec::new(),
            earlier: None,
            first_event: self.out.session().len(),
        });
        match hooks {
            None => self.start_agent(input),
            Some(hooks) => {
                let node = self.node.as_ref().expect("the node was just set");
                let hcx = HookContext::agent(node.run.as_ref().expect("not started yet"));
                let mut input = input;
                self.step = Step::Before(
                    async move {
                        let outcome = middleware::before_agent(&hooks, &hcx, &mut input).await;
                        (Hooked { hooks, hcx, ran: 0 }, input, outcome)
                    }
                    .boxed(),
                );
            }
        }
    }

    /// The `before_agent` hooks ran: the agent starts, or the answer one gave is recorded as
    /// the agent's own and returned (the run ends after the `after_agent` hooks).
    fn before_ran(
        &mut self,
        mut hooked: Hooked,
        input: AgentInput,
        outcome: Result<(Option<Message>, usize), MiddlewareError>,
    ) -> Option<AgentEvent> {
        match outcome {
            Ok((None, ran)) => {
                hooked.ran = ran;
                if let Some(node) = &mut self.node {
                    node.hooked = Some(Box::new(hooked));
                }
                self.start_agent(input);
                None
            }
            Ok((Some(reply), ran)) => {
                hooked.ran = ran;
                // Answered in the agent's place: recorded as its own (within the run's event
                // limit), and the run ends.
                let mut event = self.stamped(AgentEvent::message(reply));
                if let Err(limit) = self.out.record(&event, &self.current.this().name) {
                    let error = self.stamped(AgentEvent::error(limit.into()));
                    self.end_with(error);
                    return None;
                }
                event.recorded = true;
                self.step = Step::After(Box::new(hooked).after(), Then::End);
                Some(event)
            }
            Err(e) => {
                let error = self.stamped(AgentEvent::error(e.into()));
                self.end_with(error);
                None
            }
        }
    }

    /// Starts the current node's agent (resumes it, for the first node of a resume).
    fn start_agent(&mut self, input: AgentInput) {
        let resuming = self.resume.take();
        let node = self.node.as_mut().expect("a node runs");
        node.earlier = resuming.clone();
        let agent = Arc::clone(&self.current.this().agent);
        let run = node.run.take().expect("an agent starts once");
        let started = std::panic::catch_unwind(AssertUnwindSafe(move || match resuming {
            None => agent.run(run, input),
            Some(info) => match agent.as_flow() {
                // A whole tree as this node's agent: its own level holds the next frame.
                Some(_) => {
                    let below = info.children().into_iter().next().map(|(_, i)| i);
                    agent.resume(run, input, below.unwrap_or_default())
                }
                None => agent.resume(run, input, info),
            },
        }));
        match started {
            Ok(events) => {
                node.events = Some(AssertUnwindSafe(events).catch_unwind());
                self.step = Step::Running;
            }
            Err(payload) => {
                let error = AgentError::from_panic(&self.current.this().name, payload);
                let error = self.stamped(AgentEvent::error(error));
                self.end_with(error);
            }
        }
    }

    /// Polls the running agent's stream: an event is stamped, recorded if it is the node's own
    /// (or, an interrupt, given its frame) and returned; at the end of the stream the loop
    /// moves on. `Ready(None)` means the step changed.
    fn poll_agent(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        let node = self.node.as_mut().expect("a node runs");
        let events = node.events.as_mut().expect("a running node has its stream");
        let polled = match &node.span {
            Some(span) => span.in_scope(|| events.poll_next_unpin(cx)),
            None => events.poll_next_unpin(cx),
        };
        let mut event = match polled {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Some(Ok(event))) => event,
            Poll::Ready(Some(Err(payload))) => {
                let error = AgentError::from_panic(&self.current.this().name, payload);
                let error = self.stamped(AgentEvent::error(error));
                self.end_with(error);
                return Poll::Ready(None);
            }
            Poll::Ready(None) => {
                node.events = None;
                match node.hooked.take() {
                    Some(hooked) => self.step = Step::After(hooked.after(), Then::Follow),
                    None => self.follow(),
                }
                return Poll::Ready(None);
            }
        };
        let path = &self.path;
        event.stamp(&self.current.this().name, path);
        let own = event.run_path().same(path) && !event.recorded;
        if let Some(Action::Interrupted(info)) = &mut event.action {
            // Any interrupt ends this level; each level adds its frame.
            node.interrupted = true;
            // An agent's own interrupt (or its tool's) is named by its run path.
            if own && info.address.is_empty() {
                info.id = path.to_string();
            }
            let wrapper = info.wrapper.take().map(|w| *w).unwrap_or_default();
            let tool = wrapper.tool;
            let frame = InterruptFrame {
                agent: Arc::clone(&self.current.this().name),
                run_path: path.clone(),
                state: wrapper.state,
                tool: tool.clone(),
            };
            info.address.insert(0, frame);
            let again = node
                .earlier
                .as_ref()
                .and_then(|e| e.earlier_id(&info.address));
            if let Some(id) = again {
                // Raised again where it was: the id the caller knows it by.
                info.id = id.to_owned();
            } else if let Some(tool) = &tool {
                // Two tool calls of one reply may stop at the same path: the later ones are
                // told apart by their call.
                if node.interrupt_ids.contains(&info.id) {
                    info.id = format!("{} (call {})", info.id, tool.call_id);
                }
            }
            node.interrupt_ids.push(info.id.clone());
        } else if own {
            match self.out.record(&event, &self.current.this().name) {
                Ok(recorded) => node.last_own = Some(recorded),
                Err(limit) => {
                    let error = self.stamped(AgentEvent::error(limit.into()));
                    self.end_with(error);
                    return Poll::Ready(None);
                }
            }
            event.recorded = true;
        }
        Poll::Ready(Some(event))
    }

    /// The current node has ended: an interrupt ends the run; a transfer its last own action
    /// asks for moves to the target (within the run's transfer limit); anything else ends the
    /// run.
    fn follow(&mut self) {
        let Some(node) = self.node.take() else {
            return self.end();
        };
        if node.interrupted {
            return self.end();
        }
        let mode = self.current.this().options.delegation;
        let target = match node.last_own.as_deref().and_then(|e| e.action()) {
            Some(Action::TransferToAgent(target)) => target,
            Some(Action::Finish(result)) => {
                let result = serde_json::Value::clone(result);
                return self.give_back(result);
            }
            // A single-turn agent's run is its whole task: its last message is its result.
            Some(Action::Exit) | Some(Action::Custom(_)) | None
                if mode == Delegation::SingleTurn =>
            {
                let result = self.answers_since(node.first_event);
                return self.give_back(result);
            }
            _ => return self.end(),
        };
        if let Err(limit) = self.out.count_transfer(&self.current.this().name) {
            let error = self.stamped(AgentEvent::error(limit.into()));
            return self.end_with(error);
        }
        match self.current.transfer_target(target) {
            Ok(next) => {
                // Reached by a transfer: no result is waiting for it (if its sub-agents give
                // any back); the payload the transfer carries is (if it declares one). A node
                // that does neither costs the transfer nothing here.
                let to = &self.current.tree.nodes[next];
                let session = self.out.session();
                if to.gets_results {
                    session.remove_value(&result_key(&to.name));
                }
                if let Some(expected) = &to.options.payload {
                    let payload = self.payload_since(node.first_event);
                    if let Some(given) = &payload {
                        if let Err(why) = expected.check(given) {
                            let error = AgentError::failed(
                                Arc::clone(&self.current.this().name),
                                format!(
                                    "its transfer to '{}' carried a payload that is not a {}: \
                                     {why}",
                                    to.name, expected.type_name
                                ),
                            );
                            let error = self.stamped(AgentEvent::error(error));
                            return self.end_with(error);
                        }
                    }
                    match payload {
                        Some(p) => {
                            let _ = session.set_value(payload_key(&to.name), p);
                        }
                        None => session.remove_value(&payload_key(&to.name)),
                    }
                }
                self.path = self
                    .path
                    .child(Arc::clone(&self.current.tree.nodes[next].name));
                self.current = self.current.at(next);
                self.step = Step::Start;
            }
            Err(error) => {
                let error = self.stamped(AgentEvent::error(error));
                self.end_with(error);
            }
        }
    }

    /// The payload of the current node's transfer: the one its last transfer call (a message
    /// of its own, recorded since event `first`) carries, if any.
    fn payload_since(&self, first: usize) -> Option<serde_json::Value> {
        self.out
            .session()
            .events_since(first)
            .iter()
            .rev()
            .filter(|e| e.run_path().same(&self.path))
            .filter_map(|e| e.message_now())
            .find(|m| !m.tool_calls.is_empty())
            .and_then(|m| payload_of_call(&m))
    }

    /// What a single-turn node answered: the assistant messages without tool calls recorded at
    /// or below its run path since event `first` (a workflow node's sub-agents answer for
    /// it): one answer as a string, several as an array of strings, none as null.
    fn answers_since(&self, first: usize) -> serde_json::Value {
        let mut answers: Vec<serde_json::Value> = self
            .out
            .session()
            .events_since(first)
            .iter()
            .filter(|e| e.run_path().starts_with(&self.path))
            .filter_map(|e| e.message_now())
            .filter(|m| m.role == crate::message::Role::Assistant && m.tool_calls.is_empty())
            .map(|m| serde_json::Value::String(m.content.clone()))
            .collect();
        match answers.len() {
            0 => serde_json::Value::Null,
            1 => answers.pop().unwrap_or_default(),
            _ => serde_json::Value::Array(answers),
        }
    }

    /// The current node (a task or single-turn node) finished with `result`: control goes
    /// back to its parent, which runs again at the run path extended by its name, with the
    /// result kept for [`RunContext::task_result`] (within the run's transfer limit). A node
    /// in chat mode, or the root, cannot finish: that ends the run with an error event. The
    /// agent of a map's item that finishes ends the item: its result is the item's result,
    /// which the map reads from the record.
    fn give_back(&mut self, result: serde_json::Value) {
        if self.out.is_map_item_root(&self.path) {
            return self.end();
        }
        let node = self.current.this();
        let parent = node.parent.filter(|_| node.options.delegation.returns());
        let Some(parent) = parent else {
            let why = if node.parent.is_none() {
                "it is the root of its tree, so there is no parent to return a result to"
            } else {
                "its node is in chat mode, so control does not come back to its parent"
            };
            let error = AgentError::failed(
                Arc::clone(&node.name),
                format!(
                    "finished a task, but {why}; make the node a task (`{}(task)` in flow!, \
                     `FlowAgent::delegation(Delegation::Task)` at run time), or end the agent's \
                     run without finishing",
                    node.name
                ),
            );
            let error = self.stamped(AgentEvent::error(error));
            return self.end_with(error);
        };
        if let Err(limit) = self.out.count_transfer(&node.name) {
            let error = self.stamped(AgentEvent::error(limit.into()));
            return self.end_with(error);
        }
        let back = TaskResult {
            from: Arc::clone(&node.name),
            result,
        };
        let parent_name = Arc::clone(&self.current.tree.nodes[parent].name);
        let _ = self
            .out
            .session()
            .set_value(result_key(&parent_name), &back);
        self.path = self.path.child(parent_name);
        self.current = self.current.at(parent);
        self.step = Step::Start;
    }
}
