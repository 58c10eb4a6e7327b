//! Event streams written as ordinary async code: [`generate`] and the [`Context`] it hands out.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll, Waker};

use futures::Stream;

use crate::agent::{EventStream, RunContext};
use crate::event::{Action, AgentError, AgentEvent, InterruptInfo};
use crate::message::Message;
use crate::stream::MessageStream;
use crate::transfer::transfer_messages;

#[derive(Default)]
struct Queue {
    events: VecDeque<AgentEvent>,
    /// The consumer's waker, stored when it found nothing to read.
    consumer: Option<Waker>,
}

/// A generated stream's queue, and the run's prompt tokens as its budget checks last counted
/// them (untouched by a run without budgets that read them; read without the queue's lock).
#[derive(Default)]
struct Shared {
    q: Mutex<Queue>,
    prompt: crate::session::PromptCount,
}

/// The event queue of a generated stream, taken from this thread's pool of queues of finished
/// runs (an agent run would otherwise allocate a queue and its buffer) and given back to it
/// when the stream is dropped, if nothing else holds it. The pool keeps at most
/// [`POOLED`] queues, each with room for at most [`POOLED_ROOM`] events.
struct Pooled(Option<Arc<Shared>>);

/// How many queues a thread keeps for reuse.
const POOLED: usize = 16;
/// The most room for events a pooled queue keeps.
const POOLED_ROOM: usize = 8;

thread_local! {
    static QUEUES: RefCell<Vec<Arc<Shared>>> = const { RefCell::new(Vec::new()) };
}

impl Pooled {
    fn take() -> Self {
        let pooled = QUEUES.try_with(|q| q.borrow_mut().pop()).ok().flatten();
        Pooled(Some(pooled.unwrap_or_default()))
    }

    fn get(&self) -> &Arc<Shared> {
        self.0.as_ref().expect("a queue until dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(mut queue) = self.0.take() else {
            return;
        };
        // Only a queue no context holds any more, whose lock never saw a panic.
        let Some(Ok(q)) = Arc::get_mut(&mut queue).map(|shared| {
            shared.prompt = crate::session::PromptCount::default();
            shared.q.get_mut()
        }) else {
            return;
        };
        q.consumer = None;
        if q.events.capacity() > POOLED_ROOM {
            q.events = VecDeque::new();
        } else {
            q.events.clear();
        }
        let _ = QUEUES.try_with(|pool| {
            if let Ok(mut pool) = pool.try_borrow_mut() {
                if pool.len() < POOLED {
                    pool.push(queue);
                }
            }
        });
    }
}

/// What a code-defined agent's body uses to emit events; it also derefs to the
/// [`RunContext`] (session, run path, root input).
///
/// Emitting never waits: events queue up and the caller reads them in order as it polls.
#[derive(Clone)]
pub struct Context {
    run: RunContext,
    queue: Arc<Shared>,
}

impl Context {
    /// This agent run's prompt count (see [`crate::session::PromptCount`]): one agent run's,
    /// never the session's, read without a lock.
    pub(crate) fn prompt_count(&self) -> &crate::session::PromptCount {
        &self.queue.prompt
    }

    /// Emits an event.
    pub fn emit(&self, event: AgentEvent) {
        let mut q = self.queue.q.lock().expect("event queue lock");
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

    /// Like [`transfer`](Context::transfer), carrying `payload` to the target: the transfer
    /// call's arguments hold it (`{"agent_name": ..., "payload": ...}`), and a target that
    /// declares a payload type ([`FlowAgent::accepts`](crate::FlowAgent::accepts)) reads it
    /// with [`RunContext::transfer_payload`]. A payload that does not decode as that type makes
    /// this agent's run end with an error event; a target that declares none is not given
    /// it (`flow!` refuses such a transfer at compile time).
    pub fn transfer_with(&self, target: &str, payload: serde_json::Value) {
        let (mut call, result) = transfer_messages(target);
        if let Some(c) = call.tool_calls.first_mut() {
            c.arguments =
                serde_json::json!({ "agent_name": target, "payload": payload }).to_string();
        }
        self.emit(AgentEvent::message(call));
        self.emit(
            AgentEvent::message(result).with_action(Action::TransferToAgent(Arc::from(target))),
        );
    }

    /// Emits an interrupt: the run stops after this agent's stream ends and can be resumed
    /// from a checkpoint. `info` is shown to the caller; use
    /// [`interrupt_with_state`](Context::interrupt_with_state) to get state back on resume.
    pub fn interrupt(&self, info: serde_json::Value) {
        self.emit(AgentEvent::action(Action::interrupted(InterruptInfo::new(
            info,
        ))));
    }

    /// Emits an interrupt carrying state this agent gets back in its
    /// [`ResumeInfo::state`](crate::ResumeInfo::state).
    pub fn interrupt_with_state(&self, info: serde_json::Value, state: serde_json::Value) {
        let interrupt = InterruptInfo::new(info).with_state(state);
        self.emit(AgentEvent::action(Action::interrupted(interrupt)));
    }

    /// Finishes this agent's delegated task with `result`: emits an event whose only content
    /// is [`Action::Finish`] carrying it. The result is data for the parent, not a message
    /// for the user: the event stream shows the action (`{"finish": ...}` in its JSON form),
    /// no assistant message. When this agent's node is a task or single-turn node
    /// ([`Delegation`](crate::Delegation)), control returns to its parent once this agent's
    /// stream ends; the parent reads the result with [`RunContext::task_result`], and its
    /// history shows it as this agent's message (`For context: [refund] said: {...}`). A node
    /// in chat mode that finishes ends with an error event saying so.
    pub fn finish(&self, result: serde_json::Value) {
        self.emit(AgentEvent::action(Action::finish(result)));
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
/// use agentweave_runtime::{generate, RunContext, Session};
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
    let queue = Pooled::take();
    let cx = Context {
        run,
        queue: Arc::clone(queue.get()),
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
        // After `fut`: the body (and its context) is dropped first, so the queue can go back
        // to the pool.
        queue: Pooled,
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
            .get()
            .q
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
        let mut q = this.queue.get().q.lock().expect("event queue lock");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;
    use futures::{FutureExt, StreamExt};

    fn cx() -> RunContext {
        RunContext::new_run(Session::new(), [], false, "bot")
    }

    fn pooled() -> Vec<Arc<Shared>> {
        QUEUES.with(|q| q.borrow().clone())
    }

    fn said(event: &AgentEvent) -> String {
        event
            .message_output()
            .map(|m| m.content.clone())
            .unwrap_or_default()
    }

    #[test]
    fn a_queue_given_back_to_the_pool_holds_nothing_of_its_last_run() {
        QUEUES.with(|q| q.borrow_mut().clear());
        let mut first = generate(cx(), |cx| async move {
            for i in 0..3 {
                cx.say(format!("first {i}"));
            }
            Ok(())
        });
        let one = first.next().now_or_never().flatten().expect("an event");
        assert_eq!(said(&one), "first 0");
        // Dropped with two events still queued.
        drop(first);
        let back = pooled();
        assert_eq!(back.len(), 1, "the queue went back to the pool");
        let reused = Arc::as_ptr(&back[0]);
        drop(back);

        let second = generate(cx(), |cx| async move {
            cx.say("second");
            Ok(())
        });
        let events: Vec<String> = futures::executor::block_on(second.collect::<Vec<_>>())
            .iter()
            .map(said)
            .collect();
        assert_eq!(events, ["second"]);
        assert_eq!(
            Arc::as_ptr(&pooled()[0]),
            reused,
            "the same queue served again"
        );
    }

    #[test]
    fn the_pool_keeps_few_queues_with_little_room() {
        QUEUES.with(|q| q.borrow_mut().clear());
        // A run that queued many events gives its queue back without their room.
        let busy = generate(cx(), |cx| async move {
            for i in 0..100 {
                cx.say(format!("{i}"));
            }
            Ok(())
        });
        assert_eq!(futures::executor::block_on(busy.count()), 100);
        let back = pooled();
        assert_eq!(back.len(), 1);
        let room = back[0].q.lock().unwrap().events.capacity();
        assert!(room <= POOLED_ROOM, "kept room for {room} events");
        drop(back);

        // Many streams at once: only POOLED queues are kept when they end.
        let streams: Vec<EventStream> = (0..3 * POOLED)
            .map(|_| generate(cx(), |_| async { Ok(()) }))
            .collect();
        drop(streams);
        assert_eq!(pooled().len(), POOLED);
    }

    #[test]
    fn a_queue_a_context_still_holds_is_not_reused() {
        QUEUES.with(|q| q.borrow_mut().clear());
        let kept: Arc<Mutex<Option<Context>>> = Arc::default();
        let keep = Arc::clone(&kept);
        let stream = generate(cx(), move |cx| {
            *keep.lock().unwrap() = Some(cx.clone());
            async { Ok(()) }
        });
        assert_eq!(futures::executor::block_on(stream.count()), 0);
        assert!(
            pooled().is_empty(),
            "a queue still reachable went back to the pool"
        );

        // What the kept context emits later reaches no other run.
        let other = generate(cx(), |cx| async move {
            cx.say("mine");
            Ok(())
        });
        kept.lock().unwrap().as_ref().unwrap().say("stray");
        let events: Vec<String> = futures::executor::block_on(other.collect::<Vec<_>>())
            .iter()
            .map(said)
            .collect();
        assert_eq!(events, ["mine"]);
    }
}
