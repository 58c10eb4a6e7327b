//! Running the tool calls of one model reply, and saving a turn that a call interrupted.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::{Deserialize, Serialize};

use super::agent::*;
use super::builtin::EXIT_TOOL_NAME;
use super::builtin::{ExitArgs, TransferArgs};
use crate::agent::AgentInfo;
use crate::agent::Context;
use crate::event::panic_message;
use crate::event::{Action, AgentError, AgentEvent, ToolFrame};
use crate::llm::tool::{parse_arguments, Tool, ToolContext, ToolError, ToolInterrupt};
use crate::message::{Message, MessageRef, Role, ToolCall};
use crate::model::ToolDefinition;
use crate::resume::ResumeInfo;
use crate::transfer::TRANSFER_TOOL_NAME;

/// The tools of one run: the agent's own plus the built-ins this node gets.
pub(super) struct Toolset {
    pub(super) targets: Vec<AgentInfo>,
    /// Each target's transfer arguments as models write them (`{"agent_name":"X"}`, JSON's
    /// compact form), in `targets`' order: a call with exactly these is taken without a parse.
    pub(super) transfer_args: Vec<Box<str>>,
    /// The payloads the targets declare, by name.
    pub(super) payloads: Vec<(Arc<str>, crate::agent::Payload)>,
    pub(super) definitions: Arc<[ToolDefinition]>,
    /// The transfer instructions for these targets, if any.
    pub(super) transfer_text: Option<String>,
    /// The system message, when it does not depend on the run (the instruction has no
    /// session value in it).
    pub(super) fixed_system: Option<Option<MessageRef>>,
    /// The estimated tokens of `fixed_system`'s message (zero without one): a run's first
    /// budget check adds them to its input's count instead of estimating the message again.
    pub(super) fixed_system_tokens: u64,
    /// The built-in `read_tool_result`, when the agent's budget sets tool results aside.
    pub(super) read_back: Option<Arc<dyn Tool>>,
    /// The limit `read_back` was made for.
    pub(super) read_back_page: Option<usize>,
    /// The run's front-end tools this agent offers (their definitions are in `definitions`
    /// too, after the agent's own).
    pub(super) frontend: Vec<ToolDefinition>,
}

impl Toolset {
    /// This tool set with the run's front-end tools `extra` added, but those named like a tool
    /// it has.
    pub(super) fn with_frontend(&self, extra: &[ToolDefinition]) -> Toolset {
        let frontend: Vec<ToolDefinition> = extra
            .iter()
            .filter(|d| self.definitions.iter().all(|own| own.name != d.name))
            .cloned()
            .collect();
        Toolset {
            targets: self.targets.clone(),
            transfer_args: self.transfer_args.clone(),
            payloads: self.payloads.clone(),
            definitions: self.definitions.iter().chain(&frontend).cloned().collect(),
            transfer_text: self.transfer_text.clone(),
            fixed_system: self.fixed_system.clone(),
            fixed_system_tokens: self.fixed_system_tokens,
            read_back: self.read_back.clone(),
            read_back_page: self.read_back_page,
            frontend,
        }
    }

    /// The run's front-end tool `name`, if this agent offers it.
    fn frontend_call(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let definition = self.frontend.iter().find(|d| d.name == name)?;
        Some(super::frontend_call::FrontendCall::tool(definition.clone()))
    }
}

/// What one tool call produced: the result text (or error) and the action it carries.
pub(super) type CallOutcome = Result<(String, Option<Action>), ToolError>;

/// How a turn of tool calls ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Turn {
    /// Ask the model again.
    Continue,
    /// A transfer, an exit, a break-loop or a return-directly tool ended the agent's run;
    /// with the final output, if the turn made one (exit's result, a return-directly result).
    Ended(Option<String>),
    /// A call stopped for outside input; the turn was saved in the interrupts.
    Interrupted,
}

/// A turn of tool calls saved in the interrupt state: everything needed to finish it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SavedTurn {
    /// The conversation as the model saw it, with the reply and the results emitted so far.
    pub(super) messages: Vec<MessageRef>,
    /// Where the reply that made the calls is in `messages`: the results emitted before the
    /// interrupt follow it, so it is not always the last message. Absent in turns saved
    /// before it was added: then it is the last assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reply: Option<usize>,
    /// Model calls made.
    pub(super) used: usize,
    /// The first call whose result was not emitted.
    pub(super) next_call: usize,
    /// The transfer or exit a call of the reply asked for.
    pub(super) ending: Option<Action>,
    /// Results of later calls that finished: call id, text, action.
    pub(super) results: Vec<(String, String, Option<Action>)>,
    /// The interrupted calls: call id and the tool's saved state.
    pub(super) pending: Vec<(String, Option<serde_json::Value>)>,
    /// The final output a call made (exit's result, a return-directly result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) output: Option<String>,
    /// The return-directly result held back to be the turn's last event: call id, text,
    /// action (it was not emitted before the interrupt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) direct: Option<(String, String, Option<Action>)>,
}

/// A turn being resumed.
#[derive(Default)]
pub(super) struct Resumed {
    pub(super) next_call: usize,
    pub(super) ending: Option<Action>,
    pub(super) output: Option<String>,
    pub(super) results: Vec<(String, String, Option<Action>)>,
    /// The return-directly result held back to be emitted last (see [`SavedTurn::direct`]).
    pub(super) direct: Option<(String, String, Option<Action>)>,
    /// Interrupted calls: call id, the resume info below the call, the tool's state.
    pub(super) calls: Vec<(String, ResumeInfo, Option<serde_json::Value>)>,
}

impl SavedTurn {
    /// The reply whose calls this turn runs.
    pub(super) fn reply_index(&self) -> Option<usize> {
        self.reply
            .or_else(|| {
                self.messages
                    .iter()
                    .rposition(|m| m.role == Role::Assistant)
            })
            .filter(|&at| at < self.messages.len())
    }
}

/// How many of a reply's `calls` from `start` start a tool (for the run's tool-call budgets):
/// not those past `max_per_reply` (refused), not the built-in transfer and exit, not those a
/// resume has `saved` results for.
fn starting_calls<A, B>(
    calls: &[ToolCall],
    start: usize,
    max_per_reply: usize,
    saved: &[(String, A, B)],
) -> u64 {
    let Some(calls) = calls.get(start..calls.len().min(max_per_reply)) else {
        return 0;
    };
    if !saved.is_empty() {
        return resumed_starting_calls(calls, saved);
    }
    calls.iter().filter(|call| !is_builtin(&call.name)).count() as u64
}

/// [`starting_calls`] of a resumed reply: those with no saved result.
#[cold]
fn resumed_starting_calls<A, B>(calls: &[ToolCall], saved: &[(String, A, B)]) -> u64 {
    calls
        .iter()
        .filter(|call| !is_builtin(&call.name) && !saved.iter().any(|(id, _, _)| *id == call.id))
        .count() as u64
}

/// Whether `name` is the built-in transfer or exit tool's.
#[inline]
fn is_builtin(name: &str) -> bool {
    name == TRANSFER_TOOL_NAME || name == EXIT_TOOL_NAME
}

impl ChatModelAgent {
    /// Runs the calls of the reply at `history[reply_at]` (the last message, unless results
    /// of a resumed turn follow it); emits their results in call order and appends them to
    /// `history`, except the result of a return-directly call that is the turn's final output:
    /// that one is held back and emitted after all the others (before a transfer or exit
    /// another call asked for), so the agent's run ends with it, as in Eino. With `resumed`, starts at the saved position: finished calls give their
    /// saved results and interrupted ones are resumed. If a call stops for outside input, the
    /// results from it on are held, the turn is saved (with where its reply is), and its
    /// interrupts are emitted.
    pub(super) async fn run_tools(
        &self,
        cx: &Context,
        toolset: &Toolset,
        history: &mut Vec<MessageRef>,
        reply_at: usize,
        used: usize,
        resumed: Option<Resumed>,
    ) -> Result<Turn, AgentError> {
        let reply = Arc::clone(&history[reply_at]);
        let calls = &reply.tool_calls;
        let Resumed {
            next_call: start,
            mut ending,
            mut output,
            results: saved_results,
            mut direct,
            calls: mut resumes,
        } = resumed.unwrap_or_default();
        let mut jobs = JobList::default();
        let chain = self.middleware_chain(cx);
        // One copy of the conversation for all the calls of the reply: up to the reply that
        // made them (made when the first call of a tool of the agent's needs it).
        let mut shared_history: Option<Arc<[MessageRef]>> = None;
        let limits = self.tool_limits;
        // Whether the calls this reply starts were counted for the run's tool-call budgets:
        // at the first call that is not a built-in's or a saved result's (a reply of transfers
        // alone counts nothing), before any tool's job is made.
        let mut budgeted = false;
        for (k, call) in calls.iter().enumerate().skip(start) {
            if k >= limits.max_per_reply {
                jobs.push(Job::Ready(Some(Err(limits.refuse(call, calls.len())))));
                continue;
            }
            if let Some((_, text, action)) = saved_results.iter().find(|(id, _, _)| *id == call.id)
            {
                let done: CallOutcome = Ok((text.clone(), action.clone()));
                jobs.push(Job::Ready(Some(done)));
                continue;
            }
            let resume = resumes
                .iter()
                .position(|(id, _, _)| *id == call.id)
                .map(|k| resumes.swap_remove(k));
            let job: Job = match call.name.as_str() {
                TRANSFER_TOOL_NAME if !toolset.targets.is_empty() => {
                    Job::Ready(Some(self.transfer(toolset, call, &mut ending)))
                }
                EXIT_TOOL_NAME if self.exit_tool => Job::Ready(Some(exit(call, &mut ending))),
                name => {
                    if !budgeted {
                        budgeted = true;
                        if cx.run_context().budgets().is_some() {
                            // The calls this reply starts from here on (those before it start
                            // no tool): within the run's budgets, or none of them.
                            let starting =
                                starting_calls(calls, k, limits.max_per_reply, &saved_results);
                            if starting != 0 {
                                self.take_tool_budget(cx, starting)?;
                            }
                        }
                    }
                    match self
                        .tools
                        .iter()
                        .chain(&toolset.read_back)
                        .find(|t| t.name() == name)
                        .cloned()
                        .or_else(|| toolset.frontend_call(name))
                    {
                        Some(tool) => {
                            let idempotent = tool.idempotent();
                            let session_only = tool.session_only();
                            let mut tcx =
                                ToolContext::new(cx.run_context().clone(), call.id.as_str())
                                    .with_tool_name(call.name.as_str())
                                    .with_shared_history(Arc::clone(
                                        shared_history.get_or_insert_with(|| {
                                            history[..=reply_at].iter().cloned().collect()
                                        }),
                                    ))
                                    .with_events(cx.clone());
                            if let Some((_, info, state)) = resume {
                                tcx = tcx.with_resume(info, state);
                            }
                            let limit = self.tool_timeout;
                            let host = cx.run_context().shared_host();
                            let run = move |arguments: String| async move {
                                let run =
                                    AssertUnwindSafe(async { tool.call(&tcx, &arguments).await })
                                        .catch_unwind();
                                let finished = match limit {
                                    None => run.await,
                                    Some(limit) => {
                                        let on = host.as_deref().unwrap_or(&crate::host::StdHost);
                                        match crate::host::within(on, limit, run).await {
                                            Some(finished) => finished,
                                            None => {
                                                return Err(ToolError::TimedOut {
                                                    tool: tool.name().into(),
                                                    limit,
                                                })
                                            }
                                        }
                                    }
                                };
                                match finished {
                                    Ok(result) => result.map(|text| {
                                        // The action the call attached to its own result.
                                        let action = tcx
                                            .attached_action()
                                            .filter(|a| !matches!(a, Action::Interrupted(_)));
                                        (text, action)
                                    }),
                                    Err(payload) => Err(ToolError::Panicked {
                                        tool: tool.name().into(),
                                        message: panic_message(&*payload).into(),
                                    }),
                                }
                            };
                            Job::Running(self.hooked_tool_call(
                                cx,
                                &chain,
                                call,
                                (idempotent, session_only),
                                run,
                            ))
                        }
                        None => Job::Ready(Some(Err(ToolError::UnknownTool {
                            tool: name.into(),
                            available: toolset
                                .definitions
                                .iter()
                                .map(|d| Arc::from(d.name.as_str()))
                                .collect(),
                        }))),
                    }
                }
            };
            jobs.push(job);
        }
        let mut jobs = jobs.start(limits.max_concurrent);
        let mut last_action: Option<Action> = None;
        let mut stopped_at: Option<usize> = None;
        let mut held: Vec<(String, String, Option<Action>)> = Vec::new();
        let mut pending: Vec<(ToolCall, ToolInterrupt)> = Vec::new();
        let mut k = start;
        while let Some(outcome) = jobs.next().await {
            let call = &calls[k];
            k += 1;
            let (text, mut action) = match outcome {
                Err(ToolError::Interrupted { interrupt, .. }) => {
                    stopped_at.get_or_insert(k - 1);
                    pending.push((call.clone(), *interrupt));
                    continue;
                }
                Err(ToolError::Middleware(error)) => return Err(error.into()),
                Ok(done) => {
                    if output.is_none() {
                        let exited =
                            call.name == EXIT_TOOL_NAME && action_is(&done.1, &Action::Exit);
                        if exited || self.returns_directly(&call.name) {
                            output = Some(done.0.clone());
                            if !exited {
                                // The final output: emitted after every other result.
                                let (text, mut action) = done;
                                if let Some(a) = action.as_ref().filter(|a| ends_turn(a)) {
                                    match &ending {
                                        None => ending = Some(a.clone()),
                                        Some(first) if first != a => action = None,
                                        Some(_) => {}
                                    }
                                }
                                direct = Some((call.id.clone(), text, action));
                                continue;
                            }
                        }
                    }
                    done
                }
                Err(error) => (error.to_model_text(), None),
            };
            // A tool's own ending action: the first of the reply wins, later ones are dropped.
            if let Some(a) = &action {
                if ends_turn(a) {
                    match &ending {
                        None => ending = Some(a.clone()),
                        Some(first) if first != a => action = None,
                        Some(_) => {}
                    }
                }
            }
            if stopped_at.is_some() {
                held.push((call.id.clone(), text, action));
                continue;
            }
            let message = Arc::new(Message::tool(text, call.id.as_str(), call.name.as_str()));
            history.push(Arc::clone(&message));
            let mut event = AgentEvent::message(message);
            if let Some(Action::TransferToAgent(target)) = &action {
                // The context form the tree made for this transfer's result (used only if
                // it reads the same).
                event.context = cx
                    .node()
                    .and_then(|n| n.transfer_forms_to(target))
                    .map(|(_, result)| result);
            }
            last_action.clone_from(&action);
            if let Some(action) = action {
                event = event.with_action(action);
            }
            cx.emit(event);
        }
        if let Some(next_call) = stopped_at {
            let saved = SavedTurn {
                messages: history.clone(),
                reply: Some(reply_at),
                used,
                next_call,
                ending,
                output,
                direct,
                results: held,
                pending: pending
                    .iter()
                    .map(|(call, i)| (call.id.clone(), i.state.clone()))
                    .collect(),
            };
            let state = serde_json::to_value(&saved).map_err(|e| ChatAgentError::Resume {
                agent: Arc::clone(&self.name),
                message: format!("its conversation could not be saved ({e})").into(),
            })?;
            self.emit_interrupts(cx, pending, &state)?;
            return Ok(Turn::Interrupted);
        }
        if let Some((id, text, action)) = direct {
            let name = calls
                .iter()
                .find(|c| c.id == id)
                .map_or("", |c| c.name.as_str());
            let message = Arc::new(Message::tool(text, id.as_str(), name));
            history.push(Arc::clone(&message));
            let mut event = AgentEvent::message(message);
            if let Some(Action::TransferToAgent(target)) = &action {
                event.context = cx
                    .node()
                    .and_then(|n| n.transfer_forms_to(target))
                    .map(|(_, result)| result);
            }
            last_action.clone_from(&action);
            if let Some(action) = action {
                event = event.with_action(action);
            }
            cx.emit(event);
        }
        match ending {
            Some(action) => {
                // The last event of the agent decides; repeat the action if later results of
                // the same reply came after it.
                if last_action.as_ref() != Some(&action) {
                    cx.emit(AgentEvent::action(action));
                }
                Ok(Turn::Ended(output))
            }
            None if output.is_some() => Ok(Turn::Ended(output)),
            None => Ok(Turn::Continue),
        }
    }

    /// Emits the interrupts of the stopped calls, each carrying the saved turn and its call
    /// (the flow names them: a tool's own interrupt gets this agent's run path as its id).
    pub(super) fn emit_interrupts(
        &self,
        cx: &Context,
        pending: Vec<(ToolCall, ToolInterrupt)>,
        state: &serde_json::Value,
    ) -> Result<(), AgentError> {
        for (call, interrupt) in pending {
            if interrupt.interrupts.is_empty() {
                return Err(ChatAgentError::Resume {
                    agent: Arc::clone(&self.name),
                    message: format!(
                        "tool '{}' stopped for outside input without saying why: its \
                         ToolInterrupt holds no interrupt (build it with ToolInterrupt::new or \
                         ToolContext::interrupt)",
                        call.name
                    )
                    .into(),
                }
                .into());
            }
            for mut info in interrupt.interrupts {
                if info.address.is_empty() && info.state.is_none() {
                    // The tool's own: it is resumed with the call, and gets its state back.
                    info.state.clone_from(&interrupt.state);
                }
                let mut event = AgentEvent::action(Action::interrupted(info));
                event.attach_interrupt_state(state.clone());
                event.attach_interrupt_tool(ToolFrame {
                    name: call.name.clone(),
                    call_id: call.id.clone(),
                });
                cx.emit(event);
            }
        }
        Ok(())
    }

    pub(super) fn transfer(
        &self,
        toolset: &Toolset,
        call: &ToolCall,
        ending: &mut Option<Action>,
    ) -> CallOutcome {
        // Most calls carry a target's arguments exactly as `transfer_args` has them: no parse.
        let known = toolset
            .transfer_args
            .iter()
            .position(|args| **args == *call.arguments)
            .map(|i| &toolset.targets[i].name);
        let parsed: TransferArgs;
        let agent_name: &str = match known {
            Some(name) => name,
            None => {
                parsed = parse_arguments(TRANSFER_TOOL_NAME, &call.arguments)?;
                &parsed.agent_name
            }
        };
        if let Some(earlier) = ending {
            return Err(not_run(TRANSFER_TOOL_NAME, earlier));
        }
        // The target's own name when it is one (shared, not copied into the action).
        let target = match known {
            Some(name) => Some(Arc::clone(name)),
            None => toolset
                .targets
                .iter()
                .find(|t| *t.name == *agent_name)
                .map(|t| Arc::clone(&t.name)),
        };
        let legal = target.is_some();
        if !legal && self.illegal_transfer == IllegalTransfer::ReturnToModel {
            return Err(ToolError::IllegalTransfer {
                target: agent_name.into(),
                available: toolset
                    .targets
                    .iter()
                    .map(|t| Arc::clone(&t.name))
                    .collect(),
            });
        }
        if let Some((_, expected)) = toolset
            .payloads
            .iter()
            .find(|(name, _)| **name == *agent_name)
        {
            let given = serde_json::from_str::<serde_json::Value>(&call.arguments)
                .ok()
                .and_then(|a| a.get("payload").cloned())
                .filter(|p| !p.is_null());
            let why = match &given {
                None => Some(format!(
                    "agent '{}' needs a payload (a {}): give it as the `payload` argument",
                    agent_name, expected.type_name
                )),
                Some(p) => expected.check(p).err().map(|e| {
                    format!(
                        "the payload for agent '{}' is not a {}: {e}",
                        agent_name, expected.type_name
                    )
                }),
            };
            if let Some(why) = why {
                return Err(ToolError::invalid_arguments(TRANSFER_TOOL_NAME, why));
            }
        }
        let action = match target {
            Some(name) => Action::TransferToAgent(name),
            None => Action::transfer_to(agent_name),
        };
        *ending = Some(action.clone());
        Ok((
            crate::transfer::transfer_result_text(agent_name),
            Some(action),
        ))
    }
}

pub(super) fn exit(call: &ToolCall, ending: &mut Option<Action>) -> CallOutcome {
    let args: ExitArgs = parse_arguments(EXIT_TOOL_NAME, &call.arguments)?;
    if let Some(earlier) = ending {
        return Err(not_run(EXIT_TOOL_NAME, earlier));
    }
    *ending = Some(Action::Exit);
    Ok((args.final_result, Some(Action::Exit)))
}

/// Whether an action a call carries ends the agent's turn.
fn ends_turn(action: &Action) -> bool {
    matches!(
        action,
        Action::Exit | Action::TransferToAgent(_) | Action::BreakLoop(_) | Action::Finish(_)
    )
}

fn action_is(action: &Option<Action>, expected: &Action) -> bool {
    action.as_ref() == Some(expected)
}

pub(super) fn not_run(tool: &str, earlier: &Action) -> ToolError {
    let what = match earlier {
        Action::TransferToAgent(target) => format!("transfers to agent '{target}'"),
        Action::Finish(_) => "finishes the task".to_owned(),
        _ => "exits".to_owned(),
    };
    ToolError::NotRun {
        tool: tool.into(),
        reason: format!("an earlier call of the same reply already {what}").into(),
    }
}

/// Bounds on the tool calls of one model reply (set on the
/// [`ChatModelAgentBuilder`](crate::ChatModelAgentBuilder)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCallLimits {
    /// Calls of one reply that are run; later ones are answered as tool errors.
    pub max_per_reply: usize,
    /// Calls of one reply running at once.
    pub max_concurrent: usize,
}

impl ToolCallLimits {
    /// The default number of calls of one reply that are run.
    pub const DEFAULT_MAX_PER_REPLY: usize = 128;
    /// The default number of calls running at once.
    pub const DEFAULT_MAX_CONCURRENT: usize = 16;

    /// The tool error a call past [`max_per_reply`](Self::max_per_reply) is answered with.
    fn refuse(&self, call: &ToolCall, made: usize) -> ToolError {
        ToolError::NotRun {
            tool: call.name.as_str().into(),
            reason: format!(
                "the reply made {made} tool calls and only the first {} are run \
                 (ChatModelAgentBuilder::max_tool_calls_per_reply); make fewer calls per reply",
                self.max_per_reply
            )
            .into(),
        }
    }
}

impl Default for ToolCallLimits {
    fn default() -> Self {
        ToolCallLimits {
            max_per_reply: Self::DEFAULT_MAX_PER_REPLY,
            max_concurrent: Self::DEFAULT_MAX_CONCURRENT,
        }
    }
}

/// The calls of one reply, as they finish, in order: at most `max_concurrent` at once; a
/// reply's only call (a transfer, most often) is awaited as it is.
enum Jobs {
    One(Option<Job>),
    Many(futures::stream::Buffered<futures::stream::Iter<JobsInOrder>>),
}

/// The jobs of a reply in call order.
type JobsInOrder = std::iter::Chain<std::option::IntoIter<Job>, std::vec::IntoIter<Job>>;

/// The calls of one reply as they are prepared: the first apart, so a reply of one call (a
/// transfer, most often) needs no list.
#[derive(Default)]
struct JobList {
    first: Option<Job>,
    rest: Vec<Job>,
}

impl JobList {
    fn push(&mut self, job: Job) {
        if self.first.is_none() {
            self.first = Some(job);
        } else {
            self.rest.push(job);
        }
    }

    /// The calls, run at most `max_concurrent` at once.
    fn start(self, max_concurrent: usize) -> Jobs {
        if self.rest.is_empty() {
            return Jobs::One(self.first);
        }
        let in_order = self.first.into_iter().chain(self.rest);
        Jobs::Many(futures::stream::iter(in_order).buffered(max_concurrent))
    }
}

/// One call of a reply: its outcome already known (a built-in transfer or exit, a saved
/// result, a refusal: no allocation), or a tool call running through its hooks.
enum Job {
    Ready(Option<CallOutcome>),
    Running(BoxFuture<'static, CallOutcome>),
}

impl Future for Job {
    type Output = CallOutcome;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<CallOutcome> {
        match self.get_mut() {
            Job::Ready(outcome) => {
                std::task::Poll::Ready(outcome.take().expect("a call's outcome is taken once"))
            }
            Job::Running(job) => job.as_mut().poll(cx),
        }
    }
}

impl Jobs {
    async fn next(&mut self) -> Option<CallOutcome> {
        match self {
            Jobs::One(job) => match job.take() {
                Some(job) => Some(job.await),
                None => None,
            },
            Jobs::Many(jobs) => jobs.next().await,
        }
    }
}
