//! The journal's replay: the middleware that answers a recovered run's model calls and tool
//! calls from what its journal holds (see `runner::recover`), placed before every other
//! middleware. Replies are matched per run path, in order; results by run path and call id (a
//! tool whose only effect is on the session's values, [`Tool::session_only`](crate::Tool::session_only),
//! runs again in its place instead, to write them again); a
//! call that the journal shows asked for but without a result was in flight (it runs again,
//! unless its tool is not idempotent: then the model gets an error result it can act on).
//! Steering messages the run took in are given back where it took them (see
//! [`ReplayedSteers`]): after as many of the agent's replies as preceded them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::agent::middleware::{HookContext, HookError, Middleware};
use crate::agent::ReplayedSteers;
use crate::event::{Action, RecordedEvent};
use crate::message::{Message, Role, ToolCall};
use crate::model::ChatRequest;
use crate::run_path::RunPath;

/// An answer and its position in the run's record (`None`: a nested run's).
type Placed<T> = (Option<usize>, T);

/// The steering messages an agent took in at one safe point, with the number of its replies
/// before them.
type SteerBatch = (usize, Vec<Message>);

/// The journal's answers for a recovered run: model replies per run path in order, tool
/// results by run path and call id, and the calls that were asked for but have no result.
///
/// Each answer of the run's own journal keeps its position in the run's record (the
/// journal's step number): it is given only once the record holds every step before it, so
/// branches that run concurrently (a [`Map`](crate::workflow::Map)'s items, a
/// [`Parallel`](crate::Parallel)'s lanes, parallel tool calls) record their replayed events
/// in the order the journal holds, whatever order their answers would otherwise come in.
pub(super) struct Replay {
    replies: Mutex<HashMap<RunPath, VecDeque<Placed<Message>>>>,
    /// The steering messages taken in, per run path: each batch (taken at one safe point)
    /// with the number of that path's replies before it.
    steers: Mutex<HashMap<RunPath, VecDeque<SteerBatch>>>,
    /// How many replies were given per run path so far.
    given: Mutex<HashMap<RunPath, usize>>,
    results: HashMap<(RunPath, String), (Option<usize>, String)>,
    asked: HashSet<(RunPath, String)>,
    /// The run paths of the journaled nested steps (see `journal_nested`).
    nested: HashSet<RunPath>,
}

impl Replay {
    /// The answers of `steps`, the run's journal from the step at position `offset` of its
    /// record on (a resumed run's record starts with its checkpoint's events).
    pub(super) fn new(steps: &[RecordedEvent], offset: usize) -> Replay {
        Self::placed(steps, Some(offset))
    }

    /// The answers of `steps`; at their positions from `offset` on if they are the run's own
    /// (`None`: a nested run's, in no order of the run's record).
    fn placed(steps: &[RecordedEvent], offset: Option<usize>) -> Replay {
        let mut replies: HashMap<RunPath, VecDeque<Placed<Message>>> = HashMap::new();
        let mut steers: HashMap<RunPath, VecDeque<SteerBatch>> = HashMap::new();
        let mut results = HashMap::new();
        let mut asked = HashSet::new();
        for (k, step) in steps.iter().enumerate() {
            let at = offset.map(|o| o + k);
            let Some(message) = &step.message else {
                continue;
            };
            // A user message an agent recorded after a reply of its own is a steering message
            // it took in (an item's message of a `Map` comes before its agent's first reply).
            // Each safe point follows a reply of its own, so the steers taken at one are those
            // after the same number of replies.
            let replied = replies.get(&step.run_path).map_or(0, VecDeque::len);
            if step.action.is_none() && message.role == Role::User && replied > 0 {
                let batches = steers.entry(step.run_path.clone()).or_default();
                match batches.back_mut() {
                    Some((before, batch)) if *before == replied => batch.push(message.clone()),
                    _ => batches.push_back((replied, vec![message.clone()])),
                }
                continue;
            }
            // A step that ends, transfers or interrupts is not a reply or a result (the
            // journal's step kinds).
            let ends = matches!(
                step.action,
                Some(
                    Action::Interrupted(_)
                        | Action::TransferToAgent(_)
                        | Action::Exit
                        | Action::BreakLoop(_)
                )
            );
            match (ends, message.role) {
                (false, Role::Assistant) => {
                    for call in &message.tool_calls {
                        asked.insert((step.run_path.clone(), call.id.clone()));
                    }
                    replies
                        .entry(step.run_path.clone())
                        .or_default()
                        .push_back((at, message.clone()));
                }
                (false, Role::Tool) => {
                    if let Some(call) = &message.tool_call_id {
                        results.insert(
                            (step.run_path.clone(), call.clone()),
                            (at, message.content.clone()),
                        );
                    }
                }
                _ => {}
            }
        }
        Replay {
            replies: Mutex::new(replies),
            steers: Mutex::new(steers),
            given: Mutex::new(HashMap::new()),
            results,
            asked,
            nested: HashSet::new(),
        }
    }

    /// Adds the journaled steps of runs nested in tool calls (see `journal_nested`): their
    /// replies and results are replayed too, and a tool call whose nested run has journaled
    /// steps runs again (replaying them, so its events are delivered again) instead of being
    /// answered with its journaled result.
    pub(super) fn with_nested(mut self, nested: &[RecordedEvent]) -> Replay {
        let more = Replay::placed(nested, None);
        let replies = self.replies.get_mut().expect("replay lock");
        for (path, queue) in more.replies.into_inner().expect("replay lock") {
            replies.entry(path).or_default().extend(queue);
        }
        let steers = self.steers.get_mut().expect("replay lock");
        for (path, batches) in more.steers.into_inner().expect("replay lock") {
            steers.entry(path).or_default().extend(batches);
        }
        self.results.extend(more.results);
        self.asked.extend(more.asked);
        self.nested
            .extend(nested.iter().map(|s| s.run_path.clone()));
        self
    }

    /// Whether the call `call` at `at` runs a nested run with journaled steps.
    fn runs_nested(&self, at: &RunPath, call: &ToolCall) -> bool {
        if self.nested.is_empty() {
            return false;
        }
        let root = at.child(call.name.as_str());
        self.nested.iter().any(|p| p.starts_with(&root))
    }
}

/// How many times an answer waits for the steps before it (yielding to the branches that
/// record them) before it is given anyway: a run that cannot reach them has diverged, which
/// the journal's check then reports.
const WAITS: usize = 100_000;

/// Waits until the run's record holds `at` events (the steps the journal holds before the
/// answer at position `at`), letting the run's other branches go first.
async fn in_place(cx: &HookContext, at: Option<usize>) {
    let Some(at) = at else { return };
    let session = cx.session();
    for _ in 0..WAITS {
        if session.len() >= at {
            return;
        }
        tokio::task::yield_now().await;
    }
}

/// The text a non-idempotent tool's in-flight call is answered with on recovery.
fn in_flight_text(tool: &str, key: &str) -> String {
    format!(
        "error: the call to tool '{tool}' was in flight when its worker stopped (idempotency \
         key {key}); it may or may not have happened, and it was not run again because the \
         tool is not idempotent. Check whether it took effect before calling it again"
    )
}

#[async_trait]
impl Middleware for Replay {
    fn name(&self) -> std::borrow::Cow<'_, str> {
        "journal replay".into()
    }

    async fn before_model(
        &self,
        cx: &HookContext,
        _request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        let reply = {
            let mut replies = self.replies.lock().expect("replay lock");
            replies.get_mut(cx.run_path()).and_then(VecDeque::pop_front)
        };
        let Some((at, reply)) = reply else {
            return Ok(None);
        };
        *self
            .given
            .lock()
            .expect("replay lock")
            .entry(cx.run_path().clone())
            .or_default() += 1;
        in_place(cx, at).await;
        Ok(Some(reply))
    }

    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        let key = (cx.run_path().clone(), call.id.clone());
        if self.runs_nested(cx.run_path(), call) {
            // An agent tool: it runs again, its nested steps replayed.
            return Ok(None);
        }
        if let Some((at, result)) = self.results.get(&key) {
            in_place(cx, *at).await;
            if cx.tool_session_only() {
                // It runs again, in its place, to write its session values again (the
                // journal's check compares its result with the journaled one).
                return Ok(None);
            }
            return Ok(Some(result.clone()));
        }
        if self.asked.contains(&key) && !cx.tool_idempotent() {
            let idempotency_key = format!(
                "{}:{}:{}",
                cx.run_context().idempotency_scope(),
                cx.run_path(),
                call.id
            );
            return Ok(Some(in_flight_text(&call.name, &idempotency_key)));
        }
        // In flight (or never started): it runs again, with the same idempotency key.
        Ok(None)
    }
}

impl ReplayedSteers for Replay {
    fn take(&self, at: &RunPath) -> Vec<Message> {
        let given = self
            .given
            .lock()
            .expect("replay lock")
            .get(at)
            .copied()
            .unwrap_or(0);
        let mut steers = self.steers.lock().expect("replay lock");
        let Some(batches) = steers.get_mut(at) else {
            return Vec::new();
        };
        match batches.front() {
            // Taken after as many replies as this agent has been given again.
            Some((before, _)) if *before == given => {
                batches.pop_front().map(|(_, b)| b).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }
}
