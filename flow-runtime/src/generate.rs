//! Event streams written as ordinary async code: [`generate`] and the [`Context`] it hands out.

use std::collections::VecDeque;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll, Waker};

use futures::Stream;

use crate::agent::{EventStream, RunContext};
use crate::event::{Action, AgentError, AgentEvent, InterruptInfo};
use crate::message::{Message, ToolCall};
use crate::stream::MessageStream;

/// Name of the tool a transfer is expressed with in the conversation.
pub const TRANSFER_TOOL_NAME: &str = "transfer_to_agent";

/// The pair of messages that records a transfer in the conversation: an assistant message
/// calling `transfer_to_agent` with `{"agent_name": target}`, and its tool result
/// `successfully transferred to agent [target]`. The second carries the transfer action when
/// emitted with [`Context::transfer`].
pub fn transfer_messages(target: &str) -> (Message, Message) {
    let call_id = format!("transfer-{target}");
    // `{"agent_name": target}` as JSON text, written directly (no `Value` map per transfer).
    let name = serde_json::to_string(target).expect("a string serializes");
    let mut arguments = String::with_capacity(name.len() + 15);
    arguments.push_str("{\"agent_name\":");
    arguments.push_str(&name);
    arguments.push('}');
    let call = Message::assistant_tool_calls(
        "",
        vec![ToolCall::new(
            call_id.clone(),
            TRANSFER_TOOL_NAME,
            arguments,
        )],
    );
    let result = Message::tool(
        format!("successfully transferred to agent [{target}]"),
        call_id,
        TRANSFER_TOOL_NAME,
    );
    (call, result)
}

#[derive(Default)]
struct Queue {
    events: VecDeque<AgentEvent>,
    /// The consumer's waker, stored when it found nothing to read.
    consumer: Option<Waker>,
}

/// What a code-defined agent's body uses to emit events; it also derefs to the
/// [`RunContext`] (session, run path, root input).
///
/// Emitting never waits: events queue up and the caller reads them in order as it polls.
#[derive(Clone)]
pub struct Context {
    run: RunContext,
    queue: Arc<Mutex<Queue>>,
}

impl Context {
    /// Emits an event.
    pub fn emit(&self, event: AgentEvent) {
        let mut q = self.queue.lock().expect("event queue lock");
        q.events.push_back(event);
        if let Some(w) = q.consumer.take() {
            w.wake();
        }
    }

    /// Emits an event and waits until the caller has taken it (and every event before it).
    ///
    /// Use it in loops that may emit without end: the caller paces them, and dropping the
    /// stream stops them at this await.
    pub async fn yield_event(&self, event: AgentEvent) {
        self.emit(event);
        YieldOnce { yielded: false }.await;
    }

    /// Emits an assistant message with the given text.
    pub fn say(&self, text: impl Into<String>) {
        self.emit(AgentEvent::message(Message::assistant(text)));
    }

    /// Emits a message.
    pub fn send(&self, message: Message) {
        self.emit(AgentEvent::message(message));
    }

    /// Emits a streamed message.
    pub fn send_stream(&self, stream: MessageStream) {
        self.emit(AgentEvent::stream(stream));
    }

    /// Emits the two transfer messages of [`transfer_messages`], the second carrying
    /// [`Action::TransferToAgent`]. Whether the target is legal is checked when this agent's
    /// stream ends: an unknown target becomes an error event.
    pub fn transfer(&self, target: &str) {
        // A transfer to a neighbour in the tree shares the messages the tree made for it,
        // and their context forms.
        let made = self.run.node().and_then(|n| n.transfer_messages_to(target));
        let (target, call, result, forms) = match made {
            Some((target, call, result, forms)) => (target, call, result, Some(forms)),
            None => {
                let (call, result) = transfer_messages(target);
                (Arc::from(target), Arc::new(call), Arc::new(result), None)
            }
        };
        let (call_form, result_form) = forms.unzip();
        let mut call = AgentEvent::message(call);
        call.context = call_form;
        let mut result = AgentEvent::message(result).with_action(Action::TransferToAgent(target));
        result.context = result_form;
        self.emit(call);
        self.emit(result);
    }

    /// Emits an interrupt: the run stops after this agent's stream ends and can be resumed
    /// from a checkpoint. `info` is shown to the caller; use
    /// [`interrupt_with_state`](Context::interrupt_with_state) to get state back on resume.
    pub fn interrupt(&self, info: serde_json::Value) {
        self.emit(AgentEvent::action(Action::Interrupted(InterruptInfo::new(
            info,
        ))));
    }

    /// Emits an interrupt carrying state this agent gets back in its
    /// [`ResumeInfo::state`](crate::ResumeInfo::state).
    pub fn interrupt_with_state(&self, info: serde_json::Value, state: serde_json::Value) {
        let interrupt = InterruptInfo::new(info).with_state(state);
        self.emit(AgentEvent::action(Action::Interrupted(interrupt)));
    }

    /// Emits an event whose only content is [`Action::Exit`].
    pub fn exit(&self) {
        self.emit(AgentEvent::action(Action::Exit));
    }

    /// Emits an event whose only content is [`Action::BreakLoop`] naming this agent: the
    /// innermost [`Loop`](crate::Loop) workflow around it stops once this agent's sub-agent
    /// run ends.
    pub fn break_loop(&self) {
        self.emit(AgentEvent::action(Action::BreakLoop(Arc::from(
            self.agent_name(),
        ))));
    }

    /// The run context.
    pub fn run_context(&self) -> &RunContext {
        &self.run
    }
}

impl Deref for Context {
    type Target = RunContext;
    fn deref(&self) -> &RunContext {
        &self.run
    }
}

/// Turns async code into an [`EventStream`]: `body` gets a [`Context`] to emit with; what it
/// emits is streamed in order; an `Err` it returns becomes a last error event.
///
/// The body runs inside the caller's polling (no task is spawned), so dropping the stream drops
/// the body at its next await point.
///
/// ```
/// # futures::executor::block_on(async {
/// use flow_runtime::{generate, RunContext, Session};
/// use futures::StreamExt;
/// let cx = RunContext::new_run(Session::new(), [], false, "bot");
/// let events: Vec<_> = generate(cx, |cx| async move {
///     cx.say("one");
///     cx.say("two");
///     Ok(())
/// })
/// .collect()
/// .await;
/// assert_eq!(events.len(), 2);
/// # });
/// ```
pub fn generate<F, Fut>(run: RunContext, body: F) -> EventStream
where
    F: FnOnce(Context) -> Fut,
    Fut: Future<Output = Result<(), AgentError>> + Send + 'static,
{
    let queue = Arc::new(Mutex::new(Queue::default()));
    let cx = Context {
        run,
        queue: Arc::clone(&queue),
    };
    let fut = body(cx);
    // The body lives inside the stream's own allocation: no second box per agent run.
    EventStream::new(Generated {
        fut: Some(fut),
        queue,
    })
}

/// Returns `Pending` once, so the generated stream hands out what is queued before the body
/// goes on.
struct YieldOnce {
    yielded: bool,
}

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        // The generated stream returns a queued event right after this, so the wake is only
        // needed when the body is polled by someone else (e.g. moved into a spawned task).
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

pin_project_lite::pin_project! {
    struct Generated<Fut> {
        #[pin]
        fut: Option<Fut>,
        queue: Arc<Mutex<Queue>>,
    }
}

impl<Fut> Stream for Generated<Fut>
where
    Fut: Future<Output = Result<(), AgentError>>,
{
    type Item = AgentEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        let mut this = self.project();
        if let Some(ev) = this
            .queue
            .lock()
            .expect("event queue lock")
            .events
            .pop_front()
        {
            return Poll::Ready(Some(ev));
        }
        let Some(fut) = this.fut.as_mut().as_pin_mut() else {
            return Poll::Ready(None);
        };
        let done = fut.poll(cx);
        let mut q = this.queue.lock().expect("event queue lock");
        match done {
            Poll::Ready(result) => {
                if let Err(e) = result {
                    q.events.push_back(AgentEvent::error(e));
                }
                let next = q.events.pop_front();
                drop(q);
                this.fut.set(None);
                Poll::Ready(next)
            }
            Poll::Pending => match q.events.pop_front() {
                Some(ev) => Poll::Ready(Some(ev)),
                None => {
                    q.consumer = Some(cx.waker().clone());
                    Poll::Pending
                }
            },
        }
    }
}
