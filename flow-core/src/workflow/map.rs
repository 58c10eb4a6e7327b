//! [`Map`]: one sub-agent run once per item of a list, a bounded number at a time.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{check_under, workflow_agent_common, workflow_builders, Header, WorkflowError};
use crate::agent::{generate, Context, LaneIndex, MapLane};
use crate::agent::{set_sub_agents, FlowAgent};
use crate::agent::{Agent, AgentInput, EventStream, RunContext};
use crate::error::FlowError;
use crate::event::{Action, AgentError, AgentEvent};
use crate::message::{Message, Role};
use crate::resume::ResumeInfo;
use crate::run_path::RunPath;
use crate::spec::Returns;

/// Where a [`Map`] finds the list it runs over. The list is a JSON array; each element is
/// one item.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum MapItems {
    /// The array in the session value of this key
    /// ([`Session::set_value`](crate::Session::set_value)).
    Value(Arc<str>),
    /// The array that is the content of the last message recorded before the map runs (what
    /// the agent before it answered, a structured output say).
    LastOutput,
    /// The array the transfer that reached the map carried as its payload (the map's node
    /// declares it with [`FlowAgent::accepts`](crate::FlowAgent::accepts); `flow!`'s
    /// `map(payload)` declares a `Vec` of its agent's item type, see
    /// [`map_payload`](crate::spec::map_payload)).
    Payload,
    /// A fixed list.
    List(Arc<[Value]>),
}

impl MapItems {
    /// The items in the session value `key`.
    pub fn value(key: impl Into<Arc<str>>) -> Self {
        MapItems::Value(key.into())
    }

    /// A fixed list of items.
    pub fn list(items: impl IntoIterator<Item = impl Into<Value>>) -> Self {
        MapItems::List(items.into_iter().map(Into::into).collect())
    }
}

/// What a [`Map`] does when items fail (an error event in an item's run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MapPolicy {
    /// The first failure stops the map: items still running are dropped (cancelled), no
    /// further item starts, interrupts held are dropped; the map records its output with
    /// the results so far, then ends with [`WorkflowError::MapFailed`].
    #[default]
    FailFast,
    /// Every item runs; the output lists the failures beside the results, and the map
    /// succeeds.
    CollectErrors,
    /// Every item runs; the map succeeds if at least this many items did, else it records its
    /// output and ends with [`WorkflowError::MapFailed`].
    AtLeast(usize),
}

/// One failed item of a [`Map`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapItemError {
    /// The item's index in the list (from 0).
    pub item: usize,
    /// The error its run ended with, as text.
    pub error: String,
}

/// What a [`Map`] answers: the content of the assistant message it records at its own run
/// path once its items have ended (JSON), so the agent after it reads it.
///
/// ```
/// use agentweave_runtime::workflow::MapOutput;
/// let out: MapOutput = serde_json::from_str(r#"{"results":["a",null],"errors":[{"item":1,"error":"boom"}]}"#).unwrap();
/// assert_eq!(out.results.len(), 2);
/// assert_eq!(out.errors[0].item, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MapOutput {
    /// One entry per item, in the items' order: the item's result (the content of the last
    /// assistant message without tool calls its run recorded, as JSON if it parses as JSON,
    /// else as a string), or `null` for an item that failed, recorded nothing, or never ran.
    pub results: Vec<Option<Value>>,
    /// The items that failed, in the items' order.
    pub errors: Vec<MapItemError>,
}

impl MapOutput {
    /// The results decoded as `R`, in the items' order (`None` where an item has none): the
    /// results of a map whose agent declares `#[agent(returns = R)]` and finishes each item
    /// with `Finish(result)`, or answers with JSON of that shape.
    ///
    /// ```
    /// use agentweave_runtime::workflow::MapOutput;
    /// let out: MapOutput = serde_json::from_str(r#"{"results":[3,null,5],"errors":[]}"#).unwrap();
    /// assert_eq!(out.results_as::<u32>().unwrap(), [Some(3), None, Some(5)]);
    /// assert!(out.results_as::<String>().unwrap_err().to_string().contains("item 0"));
    /// ```
    ///
    /// # Errors
    ///
    /// [`MapResultError`] naming the first item whose result does not decode as `R`.
    pub fn results_as<R: DeserializeOwned>(&self) -> Result<Vec<Option<R>>, MapResultError> {
        self.results
            .iter()
            .enumerate()
            .map(|(item, result)| {
                result
                    .as_ref()
                    .map(|value| {
                        R::deserialize(value).map_err(|e| MapResultError {
                            item,
                            expected: std::any::type_name::<R>(),
                            message: e.to_string(),
                        })
                    })
                    .transpose()
            })
            .collect()
    }

    /// The results of a map whose agent is `A`, typed by its declared result
    /// (`#[agent(returns = T)]`): [`results_as::<A::Output>`](MapOutput::results_as).
    ///
    /// # Errors
    ///
    /// As [`results_as`](MapOutput::results_as).
    pub fn results_of<A: Returns>(&self) -> Result<Vec<Option<A::Output>>, MapResultError> {
        self.results_as::<A::Output>()
    }
}

/// A result of a [`MapOutput`] that does not decode as the type asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the result of map item {item} does not decode as `{expected}`: {message}; read the results \
     as the type the map's agent returns (`#[agent(returns = ...)]`)"
)]
pub struct MapResultError {
    /// The item's index (from 0).
    pub item: usize,
    /// The type asked for.
    pub expected: &'static str,
    /// Why it does not decode.
    pub message: String,
}

/// A workflow agent that runs its one sub-agent once per item of a list (a *fan-out*), at most
/// [`concurrency`](Map::concurrency) items at a time, and gathers the results in the items'
/// order.
///
/// - **Items** come from [`MapItems`]: a session value, the previous agent's output or the
///   transfer's payload, each a JSON array.
/// - **Each item** runs as its own flow at `PARENT/NAME[i]/AGENT` (the map `desk/map` runs
///   item 3 of its sub-agent `refund` at `desk/map[3]/refund`). The item reaches it as a user
///   message recorded at `PARENT/NAME[i]` (a string as it is, anything else as JSON text),
///   the last message of its input; items do not see each other (as [`Parallel`](super::Parallel)'s
///   lanes), every event is recorded in the run's one record.
/// - **Concurrency**: items run in the caller's task, at most `concurrency` at once (8 by
///   default); the next item starts when one ends.
/// - **Results**: once every item has ended, the map records an assistant message at its own
///   path whose content is a [`MapOutput`]. Usage, budgets and limits are the run's: every
///   item's model calls count in the run's usage and against its budgets.
/// - **Typed items and results**: when the sub-agent's node declares a payload (an agent
///   declared `#[agent(accepts = Ticket)]`), each item must decode as it (one that does not
///   fails as that item, without running) and reaches the agent as its payload
///   ([`RunContext::transfer_payload`], `cx.payload::<Self>()`). An item whose agent finishes
///   (`Finish(result)`, `#[agent(returns = T)]`) has that result; [`MapOutput::results_of`]
///   reads the results typed.
/// - **Failures** follow [`MapPolicy`] (fail fast by default).
/// - **Interrupts** are held until every item has ended, then emitted with the state
///   `{"items": n, "interrupted": [i, ...], "failed": [...]}`. On resume only the interrupted
///   items run again (each resumed at its run path); items that finished are not run again,
///   their results read from the record.
///
/// ```
/// use agentweave_runtime::workflow::{Map, MapItems, MapOutput};
/// use agentweave_runtime::{FlowAgent, FnAgent, Runner};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let shout = FlowAgent::new(FnAgent::new("shout", |cx, input| async move {
///     let item = input.messages.last().unwrap().content.to_uppercase();
///     cx.say(item);
///     Ok(())
/// }));
/// let map = Map::new("map", MapItems::list(["a", "b", "c"]))
///     .concurrency(2)
///     .with_sub_agents([shout])
///     .unwrap();
/// let events: Vec<_> = Runner::new(map).run("go").collect().await;
/// let last = events.last().unwrap().message_output().unwrap();
/// let out: MapOutput = serde_json::from_str(&last.content).unwrap();
/// assert_eq!(out.results, [Some("A".into()), Some("B".into()), Some("C".into())]);
/// assert!(events.iter().any(|e| e.run_path().to_string() == "map[1]/shout"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Map {
    head: Header,
    items: MapItems,
    concurrency: usize,
    policy: MapPolicy,
}

impl Map {
    /// A map workflow named `name` over `items`; give it its one sub-agent with
    /// [`with_sub_agents`](Map::with_sub_agents) or [`set_sub_agents`].
    pub fn new(name: impl Into<Arc<str>>, items: MapItems) -> Self {
        Map {
            head: Header::new("Map", name.into()),
            items,
            concurrency: 8,
            policy: MapPolicy::FailFast,
        }
    }

    /// At most `n` items run at once (8 by default); 0 is refused when the map runs
    /// ([`WorkflowError::ZeroConcurrency`]).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// What failures of items do (see [`MapPolicy`]).
    pub fn on_failure(mut self, policy: MapPolicy) -> Self {
        self.policy = policy;
        self
    }

    workflow_builders!("The tree node of this workflow with this one sub-agent run per item.");

    fn error(&self, message: impl Into<Arc<str>>) -> WorkflowError {
        WorkflowError::MapItems {
            workflow: Arc::clone(&self.head.name),
            message: message.into(),
        }
    }

    /// The node's one sub-agent, after checking the map's settings.
    fn sub_agent(&self, cx: &RunContext) -> Result<FlowAgent, WorkflowError> {
        if self.concurrency == 0 {
            return Err(WorkflowError::ZeroConcurrency {
                workflow: Arc::clone(&self.head.name),
            });
        }
        let mut subs = self.head.sub_agents(cx)?;
        if subs.len() != 1 {
            return Err(WorkflowError::MapSubAgents {
                workflow: Arc::clone(&self.head.name),
                found: subs.len(),
            });
        }
        Ok(subs.remove(0))
    }

    /// The list of items, read from where [`MapItems`] says.
    async fn items(&self, cx: &RunContext) -> Result<Vec<Value>, WorkflowError> {
        let found = match &self.items {
            MapItems::List(items) => return Ok(items.to_vec()),
            MapItems::Value(key) => cx
                .session()
                .raw_value(key)
                .ok_or_else(|| self.error(format!("the session has no value '{key}'")))?,
            MapItems::Payload => cx.transfer_payload().ok_or_else(|| {
                self.error(
                    "the transfer that reached it carried no payload (does its node declare one \
                     with FlowAgent::accepts?)",
                )
            })?,
            MapItems::LastOutput => {
                let last = cx
                    .session()
                    .events()
                    .into_iter()
                    .rev()
                    .find(|e| e.has_message())
                    .ok_or_else(|| self.error("nothing was recorded before it"))?;
                let message = last
                    .message()
                    .await
                    .map_err(|e| self.error(format!("the last message's stream broke: {e}")))?
                    .ok_or_else(|| self.error("the last event has no message"))?;
                serde_json::from_str(&message.content).map_err(|e| {
                    self.error(format!(
                        "the last message (of '{}') is not JSON: {e}",
                        last.agent_name()
                    ))
                })?
            }
        };
        match found {
            Value::Array(items) => Ok(items),
            other => Err(self.error(format!(
                "expected a JSON array of items, found {}",
                kind_of(&other)
            ))),
        }
    }

    /// The item paths' common start, `NAME[`.
    fn stem(&self) -> Arc<str> {
        format!("{}[", self.head.name).into()
    }
}

/// The item recorded (as a user message) at the item step `at` when the item started: what a
/// resumed item gets as its payload.
async fn recorded_item(cx: &RunContext, at: &RunPath) -> Option<Value> {
    let event = cx
        .session()
        .events()
        .into_iter()
        .find(|e| e.run_path() == at && e.has_message())?;
    let message = event.message().await.ok()??;
    Some(serde_json::from_str(&message.content).unwrap_or(Value::String(message.content.clone())))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The run path of item `i` of the map running at `base`: `base` with its last step `NAME`
/// replaced by `NAME[i]`.
fn item_path(base: &RunPath, name: &str, i: usize) -> RunPath {
    base.prefix(base.len().saturating_sub(1))
        .child(format!("{name}[{i}]"))
}

/// One item to run: new (with its item) or resumed.
struct Todo {
    index: usize,
    item: Option<Value>,
    resume: Option<ResumeInfo>,
}

/// How the items that ran this time ended.
struct Ended {
    failed: Vec<MapItemError>,
    interrupted: Vec<usize>,
    held: Vec<AgentEvent>,
    /// Fail fast stopped the map.
    stopped: bool,
}

impl Map {
    /// Runs `todo` (at most `concurrency` at once), forwarding their events.
    async fn run_items(
        &self,
        out: &Context,
        sub: &FlowAgent,
        mut todo: VecDeque<Todo>,
    ) -> Result<Ended, AgentError> {
        let base = out.run_path().clone();
        let name = &self.head.name;
        let sub_name: Arc<str> = Arc::from(sub.name());
        let parent = base.prefix(base.len().saturating_sub(1));
        let stem = self.stem();
        let mut running = futures::stream::SelectAll::new();
        let mut ended = Ended {
            failed: Vec::new(),
            interrupted: Vec::new(),
            held: Vec::new(),
            stopped: false,
        };
        let mut errors: Vec<(usize, String)> = Vec::new();
        // The item type the sub-agent's node declares (`#[agent(accepts = T)]`): each item
        // must decode as it, and reaches the agent as its payload.
        let typed = sub.options().payload.clone();
        // The session's events sorted by item, for building the items' inputs.
        let index = Arc::new(std::sync::Mutex::new(LaneIndex::starting_at(
            out.session().len(),
        )));
        // Items running (`running` keeps an ended item's stream until it is polled again).
        let mut active = 0;
        loop {
            while active < self.concurrency && !ended.stopped {
                let Some(next) = todo.pop_front() else { break };
                let at = item_path(&base, name, next.index);
                let item = match (&next.item, &typed) {
                    (Some(item), _) => Some(item.clone()),
                    // Resumed: its item is the one recorded when it started.
                    (None, Some(_)) => recorded_item(out, &at).await,
                    (None, None) => None,
                };
                if let (Some(item), Some(payload)) = (&item, &typed) {
                    if let Err(why) = payload.check(item) {
                        errors.push((
                            next.index,
                            format!(
                                "item {} is not a `{}`, the item type agent '{sub_name}' takes \
                                 (`#[agent(accepts = ...)]`): {why}; give the map a list of \
                                 `{}`",
                                next.index, payload.type_name, payload.type_name
                            ),
                        ));
                        if self.policy == MapPolicy::FailFast {
                            ended.stopped = true;
                        }
                        continue;
                    }
                }
                if let Some(item) = next.item.as_ref().filter(|_| next.resume.is_none()) {
                    let text = match item {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let mut event =
                        AgentEvent::message(Message::user(text)).stamped(&sub_name, &at);
                    out.record(&event, &sub_name)?;
                    event.recorded = true;
                    out.yield_event(event).await;
                }
                let own: Arc<str> = format!("{name}[{}]", next.index).into();
                let cx = out
                    .at(Arc::clone(&sub_name), at.child(Arc::clone(&sub_name)))
                    .in_lane(MapLane {
                        parent: parent.clone(),
                        stem: Arc::clone(&stem),
                        own,
                        index: Arc::clone(&index),
                        item: typed
                            .as_ref()
                            .and(item)
                            .map(|item| (Arc::clone(&sub_name), item)),
                    });
                let input = AgentInput {
                    messages: Default::default(),
                    streaming: out.streaming(),
                };
                let agent = Arc::new(sub.clone());
                let events = match next.resume {
                    None => agent.run(cx, input),
                    Some(info) => agent.resume(cx, input, info),
                };
                let index = next.index;
                // Each item's stream ends with `None`, so its place is given to the next item
                // as soon as it ends.
                let ended = futures::stream::iter([None]);
                running.push(events.map(Some).chain(ended).map(move |e| (index, e)));
                active += 1;
            }
            if ended.stopped {
                // An item that was not its agent's type stopped the map before it ran.
                break;
            }
            let Some((i, event)) = running.next().await else {
                break;
            };
            let Some(event) = event else {
                active -= 1;
                continue;
            };
            if let Some(error) = &event.error {
                if !errors.iter().any(|(j, _)| *j == i) {
                    errors.push((i, error.to_string()));
                }
                if self.policy == MapPolicy::FailFast {
                    ended.stopped = true;
                }
            }
            if event.is_interrupt() {
                if !ended.interrupted.contains(&i) {
                    ended.interrupted.push(i);
                }
                ended.held.push(event);
            } else {
                out.yield_event(event).await;
            }
            if ended.stopped {
                // Dropping the other items' streams cancels them.
                break;
            }
        }
        drop(running);
        errors.sort_by_key(|(i, _)| *i);
        ended.failed = errors
            .into_iter()
            .map(|(item, error)| MapItemError { item, error })
            .collect();
        if ended.stopped {
            ended.held.clear();
            ended.interrupted.clear();
        }
        Ok(ended)
    }

    /// Runs `todo` out of `count` items, `failed` already (from before an interrupt), then
    /// gathers the results, or forwards the interrupts.
    async fn run_map(
        &self,
        out: Context,
        sub: FlowAgent,
        count: usize,
        todo: VecDeque<Todo>,
        mut failed: Vec<MapItemError>,
    ) -> Result<(), AgentError> {
        let mut ended = self.run_items(&out, &sub, todo).await?;
        failed.append(&mut ended.failed);
        failed.sort_by_key(|f| f.item);
        if !ended.held.is_empty() {
            let mut interrupted = ended.interrupted;
            interrupted.sort_unstable();
            let state = json!({ "items": count, "interrupted": interrupted, "failed": failed });
            for mut event in ended.held {
                event.attach_interrupt_state(state.clone());
                out.yield_event(event).await;
            }
            return Ok(());
        }
        let results = self.results(&out, count, &failed).await?;
        let output = MapOutput {
            results,
            errors: failed,
        };
        let succeeded = output.results.iter().filter(|r| r.is_some()).count();
        let content = serde_json::to_string(&output).expect("a map output serialises");
        out.yield_event(AgentEvent::message(Message::assistant(content)))
            .await;
        let needed = match self.policy {
            MapPolicy::FailFast if ended.stopped || !output.errors.is_empty() => count,
            MapPolicy::AtLeast(n) => n,
            _ => 0,
        };
        if succeeded < needed || (self.policy == MapPolicy::FailFast && ended.stopped) {
            return Err(WorkflowError::MapFailed {
                workflow: Arc::clone(&self.head.name),
                items: count,
                succeeded,
                needed,
                first: output
                    .errors
                    .first()
                    .map(|e| format!("item {}: {}", e.item, e.error))
                    .unwrap_or_else(|| "no item failed".to_owned())
                    .into(),
            }
            .into());
        }
        Ok(())
    }

    /// Each item's result, read from the run's record: the last assistant message without
    /// tool calls under the item's path (failed items: `None`).
    async fn results(
        &self,
        cx: &RunContext,
        count: usize,
        failed: &[MapItemError],
    ) -> Result<Vec<Option<Value>>, AgentError> {
        let base = cx.run_path();
        let parent = base.prefix(base.len().saturating_sub(1));
        let at = parent.len();
        let stem = self.stem();
        let mut last: Vec<Option<Arc<crate::session::SessionEvent>>> = vec![None; count];
        for event in cx.session().events() {
            let path = event.run_path();
            // Deeper than the item's own step: its agents (the item message is at the step).
            if path.len() <= at + 1 || path.prefix(at) != parent {
                continue;
            }
            let Some(index) = path
                .iter()
                .nth(at)
                .and_then(|s| s.strip_prefix(&*stem))
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|s| s.parse::<usize>().ok())
            else {
                continue;
            };
            let finished = matches!(event.action(), Some(Action::Finish(_)));
            if index < count && (finished || (event.has_message() && event.action().is_none())) {
                last[index] = Some(event);
            }
        }
        let mut results = Vec::with_capacity(count);
        for (i, event) in last.into_iter().enumerate() {
            if failed.iter().any(|f| f.item == i) {
                results.push(None);
                continue;
            }
            // An item whose agent finished a task (`Finish(result)`): that result.
            if let Some(Action::Finish(result)) = event.as_ref().and_then(|e| e.action()) {
                results.push(Some(Value::clone(result)));
                continue;
            }
            let message = match event {
                Some(e) => e.message().await.map_err(AgentError::from)?,
                None => None,
            };
            let value = message
                .filter(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
                .map(|m| {
                    serde_json::from_str(&m.content)
                        .unwrap_or_else(|_| Value::String(m.content.clone()))
                });
            results.push(value);
        }
        Ok(results)
    }
}

impl Agent for Map {
    workflow_agent_common!();

    /// Runs the sub-agent once per item, at most `concurrency` at once. `input` is not
    /// consulted: the items come from [`MapItems`].
    fn run(self: Arc<Self>, cx: RunContext, _input: AgentInput) -> EventStream {
        generate(cx, move |out| async move {
            let sub = self.sub_agent(&out)?;
            let items = self.items(&out).await?;
            if let MapPolicy::AtLeast(n) = self.policy {
                if n > items.len() {
                    return Err(WorkflowError::MapFailed {
                        workflow: Arc::clone(&self.head.name),
                        items: items.len(),
                        succeeded: 0,
                        needed: n,
                        first: "there are fewer items than the successes asked for".into(),
                    }
                    .into());
                }
            }
            let count = items.len();
            let todo = items
                .into_iter()
                .enumerate()
                .map(|(index, item)| Todo {
                    index,
                    item: Some(item),
                    resume: None,
                })
                .collect();
            self.run_map(out, sub, count, todo, Vec::new()).await
        })
    }

    /// Resumes the items that were interrupted (at most `concurrency` at once), each at its
    /// run path; the items that had finished are not run again.
    fn resume(
        self: Arc<Self>,
        cx: RunContext,
        _input: AgentInput,
        info: ResumeInfo,
    ) -> EventStream {
        generate(cx, move |out| async move {
            let sub = self.sub_agent(&out)?;
            let who = &self.head;
            if info.was_interrupted() {
                return Err(who
                    .resume_error(
                        "the interrupt points name the workflow itself, which never interrupts",
                    )
                    .into());
            }
            let state = info.state().cloned().unwrap_or(Value::Null);
            let count = state.get("items").and_then(Value::as_u64).ok_or_else(|| {
                who.resume_error(
                    "its interrupt state has no 'items' count; the interrupt was not forwarded \
                     by this workflow",
                )
            })? as usize;
            let saved: Vec<usize> = state
                .get("interrupted")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .ok_or_else(|| who.resume_error("its interrupt state has no 'interrupted' list"))?;
            let failed: Vec<MapItemError> = state
                .get("failed")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            let base = out.run_path().clone();
            let mut todo: Vec<Todo> = Vec::new();
            for (at, below) in info.children_by_path() {
                let index = (0..count)
                    .find(|&i| at.starts_with(&item_path(&base, &who.name, i).child(sub.name())));
                let Some(index) = index else {
                    return Err(who
                        .resume_error(format!(
                            "an interrupted agent ran at '{at}', in none of its {count} items"
                        ))
                        .into());
                };
                let expected = item_path(&base, &who.name, index).child(sub.name());
                let name = below.node().map(|(n, _)| Arc::clone(n));
                let name = name.unwrap_or_else(|| Arc::from(sub.name()));
                check_under(who, &sub, &name, &below, &expected)?;
                if todo.iter().any(|t| t.index == index) {
                    return Err(who
                        .resume_error(format!(
                            "item {index} has interrupt points at two different agents"
                        ))
                        .into());
                }
                todo.push(Todo {
                    index,
                    item: None,
                    resume: Some(below),
                });
            }
            for i in &saved {
                if !todo.iter().any(|t| t.index == *i) {
                    return Err(who
                        .resume_error(format!(
                            "item {i} was interrupted but the resume info has no interrupt \
                             point in it; resume with every interrupt of the run"
                        ))
                        .into());
                }
            }
            todo.sort_by_key(|t| t.index);
            self.run_map(out, sub, count, todo.into(), failed).await
        })
    }
}
