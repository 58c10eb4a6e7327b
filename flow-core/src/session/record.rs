//! The run's shared record: recorded events and session values.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::InputCache;
use crate::agent::RunBudgets;
use crate::budget::{BudgetLedger, Spent, BUDGET_SESSION_KEY};
use crate::context_form::rewrite_for_context;
use crate::event::{Action, AgentEvent, EventOutput};
use crate::message::MessageRef;
use crate::run_path::RunPath;
use crate::stream::{StreamError, StreamRecord};

/// An event as the session recorded it.
pub struct SessionEvent {
    agent_name: Arc<str>,
    run_path: RunPath,
    output: RecordedOutput,
    action: Option<Action>,
    /// The message as other agents see it under the default policy
    /// ([`rewrite_for_context`]), written once however many agents read it...
    context: OnceLock<MessageRef>,
    /// ... or made ahead (for a transfer's messages, by the tree).
    made: Option<MessageRef>,
}

enum RecordedOutput {
    None,
    Message(MessageRef),
    /// A streamed message, concatenated as its chunks pass (the session holds no reader, so
    /// it keeps no chunk); read to its end on first use if nobody else has.
    Stream(StreamRecord),
}

impl SessionEvent {
    /// A recorded event with a whole message (or none); used when restoring a session.
    pub fn new(
        agent_name: impl Into<Arc<str>>,
        run_path: RunPath,
        message: Option<MessageRef>,
        action: Option<Action>,
    ) -> Self {
        SessionEvent {
            agent_name: agent_name.into(),
            run_path,
            output: match message {
                Some(m) => RecordedOutput::Message(m),
                None => RecordedOutput::None,
            },
            action,
            context: OnceLock::new(),
            made: None,
        }
    }

    pub(crate) fn from_event(event: &AgentEvent) -> Self {
        let output = match &event.output {
            Some(EventOutput::Message(m)) => RecordedOutput::Message(Arc::clone(m)),
            Some(EventOutput::Stream(s)) => RecordedOutput::Stream(s.record()),
            Some(EventOutput::Custom(_)) | None => RecordedOutput::None,
        };
        // A context form the tree made ahead for this message (a transfer's) is taken as is.
        let made = match (&event.context, &output) {
            (Some(made), RecordedOutput::Message(m)) => {
                made.form_of(event.agent_name_arc(), m).map(Arc::clone)
            }
            _ => None,
        };
        SessionEvent {
            agent_name: Arc::clone(event.agent_name_arc()),
            run_path: event.run_path().clone(),
            output,
            action: event.action.clone(),
            context: OnceLock::new(),
            made,
        }
    }

    /// The agent that emitted the event.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    pub(crate) fn agent_name_arc(&self) -> &Arc<str> {
        &self.agent_name
    }

    /// Where it was emitted.
    pub fn run_path(&self) -> &RunPath {
        &self.run_path
    }

    /// Its action, if any.
    pub fn action(&self) -> Option<&Action> {
        self.action.as_ref()
    }

    /// Whether the event carried a message (whole or streamed).
    pub fn has_message(&self) -> bool {
        !matches!(self.output, RecordedOutput::None)
    }

    /// The event's message. A streamed one is whole once its stream has ended: this waits for
    /// that, reading the rest of the stream from its source if no reader does (so it is
    /// complete even if the caller dropped its reader early).
    pub async fn message(&self) -> Result<Option<MessageRef>, StreamError> {
        match &self.output {
            RecordedOutput::None => Ok(None),
            RecordedOutput::Message(m) => Ok(Some(Arc::clone(m))),
            RecordedOutput::Stream(record) => record.message().await.map(Some),
        }
    }

    /// The event's message, whole or streamed (a streamed one once its stream has ended): the
    /// same as [`message`](SessionEvent::message), under the name
    /// [`AgentEvent::read_message`](crate::AgentEvent::read_message) has too.
    pub async fn read_message(&self) -> Result<Option<MessageRef>, StreamError> {
        self.message().await
    }

    /// Whether its message is a stream that may not have ended (what
    /// [`message`](SessionEvent::message) may wait for).
    #[doc(hidden)]
    pub fn is_streamed(&self) -> bool {
        matches!(self.output, RecordedOutput::Stream(_))
    }

    /// What [`message`](SessionEvent::message) gives, if it needs no waiting (`None` for a
    /// stream).
    #[doc(hidden)]
    pub fn message_without_stream(&self) -> Option<Option<MessageRef>> {
        match &self.output {
            RecordedOutput::None => Some(None),
            RecordedOutput::Message(m) => Some(Some(Arc::clone(m))),
            RecordedOutput::Stream(_) => None,
        }
    }

    /// `message` (this event's, once whole) as another agent sees it under the default
    /// context policy: rewritten on first use, then shared.
    pub(crate) fn context_form(&self, message: &MessageRef) -> MessageRef {
        if let Some(made) = &self.made {
            return Arc::clone(made);
        }
        Arc::clone(
            self.context
                .get_or_init(|| Arc::new(rewrite_for_context(&self.agent_name, message))),
        )
    }

    /// The message if it is already whole, without waiting for a stream: a whole message, or a
    /// streamed one whose stream has ended. Waiting for either kind is
    /// [`read_message`](SessionEvent::read_message), the name
    /// [`AgentEvent`](crate::AgentEvent) shares; a live event's synchronous read is
    /// [`AgentEvent::message_output`](crate::AgentEvent::message_output) (whole messages only:
    /// a live event holds a reader of its stream, not a record of it).
    pub fn message_now(&self) -> Option<MessageRef> {
        match &self.output {
            RecordedOutput::Message(m) => Some(Arc::clone(m)),
            RecordedOutput::Stream(record) => record.message_now().and_then(Result::ok),
            RecordedOutput::None => None,
        }
    }
}

impl fmt::Debug for SessionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionEvent")
            .field("agent_name", &self.agent_name)
            .field("run_path", &self.run_path)
            .field("message", &self.message_now())
            .field("action", &self.action)
            .finish()
    }
}

/// How many events a session makes room for at its first.
const FIRST_EVENTS: usize = 16;

/// Which input cache: a node's (`Some(name)`) or the shared one (`None`), and whether transfer
/// messages are skipped.
pub(crate) type InputKey = (Option<Arc<str>>, bool);

/// Session values, shared by a session and its [scoped](Session::scoped) ones.
type SharedValues = Arc<Mutex<Values>>;

/// A session's values: JSON, and the run's budget ledger kept typed while the run changes it
/// (on every model call); it is JSON under [`BUDGET_SESSION_KEY`] in every view of the values.
#[derive(Default)]
struct Values {
    map: HashMap<String, serde_json::Value>,
    /// `None` until the run first uses it (then read from `map`, where a resumed run's saved
    /// values put it).
    budget: Option<BudgetLedger>,
    /// The budgets of the runs charging this ledger: what their agents spent is kept in them,
    /// without this lock, and folded into `budget` whenever it is read (see [`Values::fold`]).
    runs: Tallies,
}

/// The runs whose spending a session's ledger folds in: most sessions have one run with
/// budgets (kept inline, no allocation), a session run again has more.
#[derive(Default)]
struct Tallies {
    first: Option<Arc<RunBudgets>>,
    more: Vec<Arc<RunBudgets>>,
}

impl Tallies {
    fn iter(&self) -> impl Iterator<Item = &Arc<RunBudgets>> {
        self.first.iter().chain(&self.more)
    }
}

impl Values {
    fn insert(&mut self, key: String, value: serde_json::Value) {
        if key == BUDGET_SESSION_KEY {
            self.drop_ledger();
        }
        self.map.insert(key, value);
    }

    /// Forgets the typed ledger and what the runs spent that is not yet in it (the ledger's
    /// value was replaced or removed).
    fn drop_ledger(&mut self) {
        self.budget = None;
        for run in self.runs.iter() {
            run.discard();
        }
    }

    /// The ledger, with what the runs spent since the last read folded in (`None`: no run
    /// has budgets, and no ledger was read).
    fn fold(&mut self) -> Option<&mut BudgetLedger> {
        if self.runs.first.is_some() {
            let Values { map, budget, runs } = self;
            let ledger = ledger_in(budget, map);
            for run in runs.iter() {
                run.fold_into(ledger);
            }
        }
        self.budget.as_mut()
    }

    /// The ledger's JSON, each agent once.
    fn budget_json(&mut self) -> Option<serde_json::Value> {
        self.fold().and_then(|ledger| {
            let mut ledger = ledger.clone();
            ledger.merge();
            serde_json::to_value(ledger).ok()
        })
    }
}

/// The shared record of one run: the events its agents recorded, in order, and key/value
/// session values every agent of the run can read and write. Each run has its own.
///
/// ```
/// use agentweave_runtime::Session;
/// let session = Session::new();
/// session.set_value("customer", "ada").unwrap();
/// assert_eq!(session.value::<String>("customer").unwrap().as_deref(), Some("ada"));
/// ```
#[derive(Default)]
pub struct Session {
    events: Mutex<Vec<Arc<SessionEvent>>>,
    /// Shared with the [scoped](Session::scoped) sessions made from this one; made when first
    /// written or shared (most runs set none).
    values: OnceLock<SharedValues>,
    /// Per node (name, skip-transfer flag): what its input was built from last time; under
    /// the name `None`, the input shared by every node that has not spoken yet.
    inputs: Mutex<rustc_hash::FxHashMap<InputKey, Box<InputCache>>>,
    /// The shared input cache of nodes that see transfer messages (key `(None, false)`, the
    /// default): read on every hop, so kept out of the map (the one of nodes that skip them
    /// is in the map).
    shared_input: Mutex<Option<Box<InputCache>>>,
    /// Whether a streamed message was recorded (one may not have ended yet: reading it may
    /// wait).
    streams: AtomicBool,
    /// How many events are recorded (set under the events' lock; read without it, once per
    /// hop).
    count: AtomicUsize,
}

impl Session {
    /// An empty session.
    pub fn new() -> Arc<Session> {
        Arc::new(Session::default())
    }

    /// A new, empty record that shares this session's values: what one writes, the other
    /// reads. An [`AgentTool`](crate::AgentTool) runs its agent in one, so the agent's events
    /// stay out of the caller's record while session values stay common to the whole run.
    ///
    /// ```
    /// use agentweave_runtime::Session;
    /// let run = Session::new();
    /// let inner = run.scoped();
    /// inner.set_value("seen", true).unwrap();
    /// assert_eq!(run.value::<bool>("seen").unwrap(), Some(true));
    /// ```
    pub fn scoped(&self) -> Arc<Session> {
        Arc::new(Session {
            events: Mutex::default(),
            values: OnceLock::from(Arc::clone(self.shared_values())),
            inputs: Mutex::default(),
            shared_input: Mutex::default(),
            streams: AtomicBool::new(false),
            count: AtomicUsize::new(0),
        })
    }

    /// Appends a recorded event.
    pub fn push(&self, event: SessionEvent) {
        self.append(Arc::new(event), usize::MAX);
    }

    /// Records `event` as a tree records its agents' events (a streamed message as its stream
    /// goes): for an agent that runs agents elsewhere and passes their events on (agentweave-server's
    /// Temporal root), which marks each passed event
    /// [`recorded`](AgentEvent::recorded) so the tree around it does not record it again.
    pub fn record(&self, event: &AgentEvent) {
        self.append(Arc::new(SessionEvent::from_event(event)), usize::MAX);
    }

    /// Records `event` unless `max` events are recorded already; the record if it did.
    pub(crate) fn record_within(
        &self,
        event: &AgentEvent,
        max: usize,
    ) -> Option<Arc<SessionEvent>> {
        let recorded = Arc::new(SessionEvent::from_event(event));
        self.append(Arc::clone(&recorded), max).then_some(recorded)
    }

    /// Appends `event` unless `max` events are recorded already; whether it did.
    fn append(&self, event: Arc<SessionEvent>, max: usize) -> bool {
        let mut events = self.events.lock().expect("session lock");
        if events.len() >= max {
            return false;
        }
        if events.capacity() == 0 {
            events.reserve(FIRST_EVENTS);
        }
        if matches!(event.output, RecordedOutput::Stream(_)) {
            self.streams.store(true, Ordering::Release);
        }
        events.push(event);
        self.count.store(events.len(), Ordering::Release);
        true
    }

    /// Whether a streamed message was ever recorded here (reading one may wait for its end).
    pub(crate) fn holds_streams(&self) -> bool {
        self.streams.load(Ordering::Acquire)
    }

    /// The recorded events, in order (a snapshot; the events themselves are shared).
    pub fn events(&self) -> Vec<Arc<SessionEvent>> {
        self.events.lock().expect("session lock").clone()
    }

    /// The recorded events from the `start`-th on (a snapshot of that part only).
    pub fn events_since(&self, start: usize) -> Vec<Arc<SessionEvent>> {
        let events = self.events.lock().expect("session lock");
        events.get(start..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// Appends the events from position `start` on to `out` (no new vector); returns how
    /// many.
    #[doc(hidden)]
    pub fn events_since_into(&self, start: usize, out: &mut Vec<Arc<SessionEvent>>) -> usize {
        let events = self.events.lock().expect("session lock");
        let new = events.get(start..).unwrap_or_default();
        out.extend_from_slice(new);
        new.len()
    }

    /// The `i`-th recorded event, if there is one.
    pub(crate) fn event_at(&self, i: usize) -> Option<Arc<SessionEvent>> {
        self.events.lock().expect("session lock").get(i).cloned()
    }

    /// Takes the input cache of a node out (it is put back when its input is built).
    pub(crate) fn take_input_cache(&self, key: &InputKey) -> Option<Box<InputCache>> {
        match key {
            (None, false) => self.shared_input.lock().expect("session lock").take(),
            _ => self.inputs.lock().expect("session lock").remove(key),
        }
    }

    /// Puts a node's input cache back.
    pub(crate) fn put_input_cache(&self, key: InputKey, cache: Box<InputCache>) {
        match key {
            (None, false) => {
                *self.shared_input.lock().expect("session lock") = Some(cache);
            }
            _ => {
                self.inputs.lock().expect("session lock").insert(key, cache);
            }
        }
    }

    /// Number of recorded events.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets a session value.
    pub fn set_value(
        &self,
        key: impl Into<String>,
        value: impl Serialize,
    ) -> serde_json::Result<()> {
        let value = serde_json::to_value(value)?;
        self.shared_values()
            .lock()
            .expect("session lock")
            .insert(key.into(), value);
        Ok(())
    }

    /// Sets several session values at once.
    pub fn add_values(&self, values: impl IntoIterator<Item = (String, serde_json::Value)>) {
        let mut own = self.shared_values().lock().expect("session lock");
        for (key, value) in values {
            own.insert(key, value);
        }
    }

    /// A session value, decoded; `Ok(None)` if it is not set.
    pub fn value<T: DeserializeOwned>(&self, key: &str) -> serde_json::Result<Option<T>> {
        let raw = self.raw_value(key);
        raw.map(serde_json::from_value).transpose()
    }

    /// A session value as JSON.
    pub fn raw_value(&self, key: &str) -> Option<serde_json::Value> {
        let mut values = self.values.get()?.lock().expect("session lock");
        if key == BUDGET_SESSION_KEY {
            if let Some(ledger) = values.budget_json() {
                return Some(ledger);
            }
        }
        values.map.get(key).cloned()
    }

    /// Replaces a session value with what `update` makes of the current one, under the
    /// session's lock (so concurrent updates are not lost).
    pub(crate) fn update_value(
        &self,
        key: &str,
        update: impl FnOnce(Option<serde_json::Value>) -> serde_json::Value,
    ) {
        let mut values = self.shared_values().lock().expect("session lock");
        let old = values.map.remove(key);
        values.insert(key.to_owned(), update(old));
    }

    /// Removes a session value.
    pub(crate) fn remove_value(&self, key: &str) {
        if let Some(values) = self.values.get() {
            let mut values = values.lock().expect("session lock");
            if key == BUDGET_SESSION_KEY {
                values.drop_ledger();
            }
            values.map.remove(key);
        }
    }

    /// All session values.
    pub fn values(&self) -> HashMap<String, serde_json::Value> {
        let Some(values) = self.values.get() else {
            return HashMap::new();
        };
        let mut values = values.lock().expect("session lock");
        let ledger = values.budget_json();
        let mut all = values.map.clone();
        if let Some(ledger) = ledger {
            all.insert(BUDGET_SESSION_KEY.to_owned(), ledger);
        }
        all
    }

    /// Runs `use_it` on the run's budget ledger, under the session's lock (read from the saved
    /// values the first time), with what the runs' agents spent since the last read folded in.
    pub(crate) fn with_budget_ledger<R>(&self, use_it: impl FnOnce(&mut BudgetLedger) -> R) -> R {
        let mut values = self.shared_values().lock().expect("session lock");
        values.fold();
        let Values { map, budget, .. } = &mut *values;
        use_it(ledger_in(budget, map))
    }

    /// Gives the session `run`'s budgets, whose agents' spending its ledger folds in whenever
    /// it is read. Returns what the ledger holds in all (a resumed run's saved spending, an
    /// earlier run's). Runs that ended are folded in and let go.
    pub(crate) fn join_budget_ledger(&self, run: &Arc<RunBudgets>) -> Spent {
        let shared = self.shared_values();
        let mut values = shared.lock().expect("session lock");
        let Values { map, budget, runs } = &mut *values;
        // A new session's first run: nothing spent, nothing to fold, no ledger to make yet
        // (the first read makes it).
        if runs.first.is_none() && budget.is_none() && map.is_empty() {
            runs.first = Some(Arc::clone(run));
            return Spent::default();
        }
        values.fold();
        let Values { map, budget, runs } = &mut *values;
        // No ledger and none saved (values set, no run's tally yet): nothing spent.
        let total = if budget.is_none() && map.is_empty() {
            Spent::default()
        } else {
            ledger_in(budget, map).total
        };
        // Folded just now, and held by nothing else: nothing can charge them any more.
        runs.more.retain(|r| Arc::strong_count(r) > 1);
        if runs
            .first
            .as_ref()
            .is_some_and(|r| Arc::strong_count(r) == 1)
        {
            runs.first = runs.more.pop();
        }
        if runs.iter().all(|r| !Arc::ptr_eq(r, run)) {
            match runs.first {
                None => runs.first = Some(Arc::clone(run)),
                Some(_) => runs.more.push(Arc::clone(run)),
            }
        }
        total
    }

    /// The address of the values this session shares, made now if they were not yet (see
    /// [`values_address`](Self::values_address)).
    pub(crate) fn values_home(&self) -> usize {
        Arc::as_ptr(self.shared_values()) as usize
    }

    /// The address of the values this session shares (with its [scoped](Session::scoped)
    /// sessions), zero before they are made: two sessions share a ledger when these are equal.
    #[inline]
    pub(crate) fn values_address(&self) -> usize {
        self.values.get().map_or(0, |v| Arc::as_ptr(v) as usize)
    }

    /// The values, made on first use.
    fn shared_values(&self) -> &SharedValues {
        self.values.get_or_init(SharedValues::default)
    }
}

/// The run's budget ledger in `budget`, read from the saved values `map` the first time (a
/// resumed run's; a new run's map is often empty).
fn ledger_in<'a>(
    budget: &'a mut Option<BudgetLedger>,
    map: &mut HashMap<String, serde_json::Value>,
) -> &'a mut BudgetLedger {
    budget.get_or_insert_with(|| {
        if map.is_empty() {
            BudgetLedger::default()
        } else {
            map.remove(BUDGET_SESSION_KEY)
                .and_then(|saved| serde_json::from_value(saved).ok())
                .unwrap_or_default()
        }
    })
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("events", &*self.events.lock().expect("session lock"))
            .field("values", &self.values())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Weak;

    use futures::executor::block_on;
    use futures::StreamExt;

    use super::*;
    use crate::message::Message;
    use crate::stream::MessageStream;

    /// A recorded stream event and the caller's reader of it.
    fn recorded(stream: MessageStream) -> (SessionEvent, MessageStream) {
        let event = AgentEvent::stream(stream);
        let recorded = SessionEvent::from_event(&event);
        let Some(EventOutput::Stream(caller)) = event.output else {
            unreachable!("a stream event")
        };
        (recorded, caller)
    }

    fn chunks(texts: &[&str]) -> MessageStream {
        let items: Vec<_> = texts.iter().map(|t| Ok(Message::assistant(*t))).collect();
        MessageStream::from_stream(futures::stream::iter(items))
    }

    /// A context form made ahead is taken only for a message of the agent it was made for
    /// that reads the same as the one it was made for (call ids aside): an event of another
    /// agent, or a message that reads otherwise, is rewritten as usual.
    #[test]
    fn a_context_form_made_ahead_is_used_only_for_a_message_that_reads_the_same() {
        let refund: Arc<str> = Arc::from("refund");
        let message: MessageRef = Arc::new(Message::assistant("done"));
        let made = Arc::new(crate::context_form::ContextForm::new(&refund, &message));
        let made_form = made.form_of(&refund, &message).unwrap();
        // `message` recorded as `agent`'s, carrying the form `made` ahead.
        let recorded = |agent: &Arc<str>,
                        message: &MessageRef,
                        made: &Arc<crate::context_form::ContextForm>| {
            let mut event = AgentEvent::message(Arc::clone(message));
            event.context = Some(Arc::clone(made));
            event.stamp(agent, &crate::RunPath::root(Arc::clone(agent)));
            SessionEvent::from_event(&event).context_form(message)
        };
        // The very message of the very agent: the form made ahead itself, not a copy.
        let form = recorded(&refund, &message, &made);
        assert_eq!(form.content, "For context: [refund] said: done.");
        assert!(Arc::ptr_eq(&form, made_form));
        // Another agent's event carrying the form (e.g. an agent nested in the node).
        let form = recorded(&Arc::from("scanner"), &message, &made);
        assert_eq!(form.content, "For context: [scanner] said: done.");
        // An equal message: the same form, shared.
        let equal: MessageRef = Arc::new(Message::assistant("done"));
        assert!(Arc::ptr_eq(&recorded(&refund, &equal, &made), made_form));
        // A message that reads otherwise: rewritten.
        let other: MessageRef = Arc::new(Message::assistant("done!"));
        let form = recorded(&refund, &other, &made);
        assert_eq!(form.content, "For context: [refund] said: done!.");

        // A transfer call the tree made, and a model's: the same but for the call id.
        let call = |id: &str, arguments: &str| -> MessageRef {
            Arc::new(Message::assistant_tool_calls(
                "",
                vec![crate::ToolCall::new(id, "transfer_to_agent", arguments)],
            ))
        };
        let tree_made = call("transfer-billing", r#"{"agent_name":"billing"}"#);
        let made = Arc::new(crate::context_form::ContextForm::new(&refund, &tree_made));
        let model_made = call("call_1_1", r#"{"agent_name":"billing"}"#);
        let form = recorded(&refund, &model_made, &made);
        assert!(Arc::ptr_eq(
            &form,
            made.form_of(&refund, &tree_made).unwrap()
        ));
        // Other arguments (even the same ones spaced out): rewritten from the message itself.
        let spaced = call("call_1_1", r#"{"agent_name": "billing"}"#);
        let form = recorded(&refund, &spaced, &made);
        assert!(
            form.content.contains(r#"{"agent_name": "billing"}"#),
            "{}",
            form.content
        );
    }

    #[test]
    fn the_session_keeps_no_chunk_of_a_stream_the_caller_reads() {
        let (event, mut caller) = recorded(chunks(&["Your ", "refund ", "is approved."]));
        let mut passed: Vec<Weak<Message>> = Vec::new();
        while let Some(chunk) = block_on(caller.next()) {
            passed.push(Arc::downgrade(&chunk.unwrap()));
            assert!(
                passed.iter().all(|w| w.upgrade().is_none()),
                "a chunk the caller has read is kept by nobody"
            );
        }
        assert_eq!(passed.len(), 3);
        let whole = event.message_now().expect("the stream has ended");
        assert_eq!(whole.content, "Your refund is approved.");
        let awaited = block_on(event.message()).unwrap().unwrap();
        assert!(Arc::ptr_eq(&whole, &awaited));
    }

    #[test]
    fn the_session_message_is_whole_when_the_caller_drops_its_reader_early() {
        let (event, mut caller) = recorded(chunks(&["a", "b", "c"]));
        assert_eq!(block_on(caller.next()).unwrap().unwrap().content, "a");
        drop(caller);
        assert!(event.message_now().is_none());
        let whole = block_on(event.message()).unwrap().unwrap();
        assert_eq!(whole.content, "abc");
    }

    #[test]
    fn the_session_message_awaited_first_leaves_every_chunk_to_the_caller() {
        let (event, caller) = recorded(chunks(&["a", "b", "c"]));
        assert_eq!(block_on(event.message()).unwrap().unwrap().content, "abc");
        let seen: Vec<String> = block_on(
            caller
                .map(|c| c.unwrap().content.clone())
                .collect::<Vec<_>>(),
        );
        assert_eq!(seen, ["a", "b", "c"]);
    }

    #[test]
    fn a_stream_error_after_chunks_is_the_session_messages_error() {
        let (tx, stream) = MessageStream::channel();
        let (event, caller) = recorded(stream);
        tx.send(Message::assistant("partial"));
        tx.fail(StreamError::new("connection reset"));
        let seen: Vec<_> = block_on(caller.collect::<Vec<_>>());
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].as_ref().unwrap().content, "partial");
        assert!(seen[1].is_err());
        assert_eq!(
            block_on(event.message()).unwrap_err(),
            StreamError::new("connection reset")
        );
        assert!(event.message_now().is_none());
        assert!(event.has_message());
    }

    #[test]
    fn a_recorded_stream_nobody_read_is_read_to_its_end_when_the_session_is_saved() {
        // What a checkpoint's capture does with each event of the session.
        let session = Session::new();
        let (event, caller) = recorded(chunks(&["Your ", "refund ", "is approved."]));
        drop(caller);
        session.push(event);
        let message = block_on(session.events()[0].message()).unwrap().unwrap();
        assert_eq!(message.content, "Your refund is approved.");
    }
}
