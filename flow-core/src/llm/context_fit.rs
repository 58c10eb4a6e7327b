//! Keeping a [`ChatModelAgent`]'s requests within its [`ContextBudget`]: large tool results
//! sent as stubs the model reads back through the built-in `read_tool_result` tool
//! ([`ReadToolResult`]), and the compaction of the oldest messages into a recorded summary.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;

use super::agent::{ChatAgentError, ChatModelAgent};
use crate::agent::Context;
use crate::event::{AgentError, AgentEvent};
use crate::history::{
    plan_compaction, summary_message, CompactionRecord, ContextBudget, UsageCalibration,
};
use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};
use crate::message::{Message, MessageRef, Role};
use crate::model::{ChatRequest, ToolDefinition};

/// The name of the built-in tool that reads a set-aside tool result.
pub const READ_TOOL_RESULT_TOOL_NAME: &str = "read_tool_result";

/// What a summary message starts with (so a compaction finds the previous summary).
const SUMMARY_START: &str = "Summary of the earlier conversation";

/// The arguments of `read_tool_result`.
#[derive(Deserialize, schemars::JsonSchema)]
struct ReadArgs {
    /// The handle the stub gave (the id of the tool call whose result was set aside).
    handle: String,
    /// Where to start, in characters from the start of the result (default 0).
    #[serde(default)]
    offset: usize,
}

/// The built-in tool `read_tool_result`: reads a tool result that was set aside, a page at a
/// time (each page fits the agent's limit for tool results).
pub(super) struct ReadToolResult {
    /// Characters per page.
    page: usize,
}

impl ReadToolResult {
    pub(super) fn new(limit_tokens: usize) -> Self {
        // About 4 bytes a token; leave room for the page's header.
        ReadToolResult {
            page: (limit_tokens.saturating_sub(40)).max(16) * 3,
        }
    }
}

#[async_trait]
impl Tool for ReadToolResult {
    fn name(&self) -> &str {
        READ_TOOL_RESULT_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Reads a tool result that was too long to be shown whole and was set aside: give the \
         handle its stub names, and an offset (in characters) to read on from."
    }

    fn parameters(&self) -> serde_json::Value {
        schema_for::<ReadArgs>()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let args: ReadArgs = parse_arguments(READ_TOOL_RESULT_TOOL_NAME, arguments)?;
        let found = cx.history().iter().rev().find(|m| {
            m.role == Role::Tool && m.tool_call_id.as_deref() == Some(args.handle.as_str())
        });
        let Some(result) = found else {
            return Err(ToolError::failed(
                READ_TOOL_RESULT_TOOL_NAME,
                format!(
                    "no result has the handle '{}' in this conversation (a result summarised \
                     away by a compaction can no longer be read); use a handle a stub gave",
                    args.handle
                ),
            ));
        };
        let total = result.content.chars().count();
        if args.offset >= total {
            return Err(ToolError::failed(
                READ_TOOL_RESULT_TOOL_NAME,
                format!(
                    "offset {} is past the end of the result, which has {total} characters",
                    args.offset
                ),
            ));
        }
        let text: String = result
            .content
            .chars()
            .skip(args.offset)
            .take(self.page)
            .collect();
        let end = args.offset + text.chars().count();
        let mut out = format!("[characters {}..{end} of {total}]\n{text}", args.offset);
        if end < total {
            out.push_str(&format!(
                "\n[{} more characters: read on with offset {end}]",
                total - end
            ));
        }
        Ok(out)
    }
}

/// A budget as one request sees it: its limits in the counter's units, brought there from
/// the model's units by the agent's calibration (when the budget calibrates).
struct Fit<'a> {
    budget: &'a ContextBudget,
    calibration: Option<&'a UsageCalibration>,
}

impl Fit<'_> {
    /// Model tokens in the counter's units.
    fn counted(&self, model: usize) -> usize {
        self.calibration.map_or(model, |c| c.to_counted(model))
    }

    /// Counted tokens as the model counts them (for messages).
    fn model(&self, counted: usize) -> usize {
        self.calibration.map_or(counted, |c| c.to_model(counted))
    }

    fn max(&self) -> usize {
        self.counted(self.budget.max_tokens())
    }

    fn set_aside_over(&self) -> Option<usize> {
        self.budget
            .set_aside_over()
            .map(|limit| self.counted(limit))
    }
}

/// The stub a tool result over the budget's limit is sent as, or `None` to send it whole.
fn stub(fit: &Fit<'_>, message: &Message) -> Option<MessageRef> {
    let (Some(limit), Some(shown_limit)) = (fit.set_aside_over(), fit.budget.set_aside_over())
    else {
        return None;
    };
    if message.role != Role::Tool
        || message.tool_name.as_deref() == Some(READ_TOOL_RESULT_TOOL_NAME)
    {
        return None;
    }
    let tokens = fit.budget.count(message);
    if tokens <= limit {
        return None;
    }
    let handle = message.tool_call_id.as_deref().unwrap_or("");
    // The start of the result: a quarter of the limit, in about 4 bytes a token.
    let preview: String = message.content.chars().take(shown_limit.max(8)).collect();
    let text = format!(
        "[tool result set aside: {} tokens, over this agent's limit of {shown_limit}. It \
         begins: {preview} ... Read it whole with the tool {READ_TOOL_RESULT_TOOL_NAME}, \
         handle \"{handle}\".]",
        fit.model(tokens)
    );
    let mut m = Message::tool(
        text,
        handle,
        message.tool_name.as_deref().unwrap_or_default(),
    );
    m.usage = None;
    Some(Arc::new(m))
}

/// Whether `m` is a summary a compaction wrote.
fn is_summary(m: &Message) -> bool {
    m.role == Role::System && m.content.starts_with(SUMMARY_START)
}

/// A request fitted to a budget: what the model is sent, and its tokens as the budget's
/// counter counts them (to set against the prompt tokens the model reports for it).
pub(super) struct Fitted {
    pub(super) request: ChatRequest,
    pub(super) counted: usize,
}

impl ChatModelAgent {
    /// The request the model is sent under `budget`: tool results over the limit as stubs;
    /// if it is still over the budget, the oldest messages of `request` are compacted first
    /// (their summary recorded as an event), and a request that cannot be brought under the
    /// budget is an error ([`ChatAgentError::Context`]). The budget's limits are in the
    /// model's tokens: the count is scaled by the agent's calibration when the budget
    /// calibrates.
    pub(super) async fn fit_budget(
        &self,
        cx: &Context,
        budget: &ContextBudget,
        request: &mut ChatRequest,
    ) -> Result<Fitted, AgentError> {
        let tools = self.definitions_tokens(&request.tools);
        let calibration = budget.calibrates().then_some(&self.calibration);
        if let Some(calibration) = calibration {
            if !calibration.is_calibrated() {
                self.seed_calibration(budget, calibration, &request.messages, tools);
            }
        }
        let fit = Fit {
            budget,
            calibration,
        };
        let (view, tokens) = self.budget_view(&fit, &request.messages, tools);
        if tokens <= fit.max() {
            return Ok(Fitted {
                request: ChatRequest {
                    messages: view,
                    ..request.clone()
                },
                counted: tokens,
            });
        }
        let shown = fit.model(tokens);
        // The instruction (a leading system message that is not a summary) is kept.
        let instruction = usize::from(
            request
                .messages
                .first()
                .is_some_and(|m| m.role == Role::System && !is_summary(m)),
        );
        let fixed = budget.count_all(&view[..instruction]) + tools;
        let room = fit.max().saturating_sub(fixed);
        let conversation = &view[instruction..];
        let over = |why: String| -> AgentError {
            ChatAgentError::Context {
                agent: Arc::clone(&self.name),
                message: why.into(),
            }
            .into()
        };
        // What is kept whole takes at most half of what the instruction and the tool
        // definitions leave, so that the summary has room too.
        let keep = fit.counted(budget.kept_tokens()).min(room / 2);
        let Some(cut) = plan_compaction(conversation, budget, keep) else {
            return Err(over(format!(
                "its request takes {shown} tokens, over its budget of {}, and there is \
                 nothing older to summarise; raise the budget or set large tool results aside",
                budget.max_tokens()
            )));
        };
        let summary = budget
            .summarizer()
            .summarize(&self.name, &conversation[..cut])
            .await
            .map_err(|e| {
                over(format!(
                    "its request takes {shown} tokens, over its budget of {}, and the \
                     summarizer failed: {e}; the conversation was left as it was",
                    budget.max_tokens()
                ))
            })?;
        let summary = Arc::new(summary_message(&summary));
        let kept = conversation.len() - cut;
        let mut messages: Vec<MessageRef> = Vec::with_capacity(instruction + 1 + kept);
        messages.extend(request.messages[..instruction].iter().cloned());
        messages.push(Arc::clone(&summary));
        messages.extend(request.messages[instruction + cut..].iter().cloned());
        let (view, after) = self.budget_view(&fit, &messages, tools);
        if after > fit.max() {
            return Err(over(format!(
                "its request takes {} tokens even after summarising its oldest messages \
                 (the summary takes {}), over its budget of {}; give the summarizer a shorter \
                 prompt or limit, lower keep_tokens, or set large tool results aside",
                fit.model(after),
                fit.model(budget.count(&summary)),
                budget.max_tokens()
            )));
        }
        // Recorded once: every later input of this agent starts from the summary.
        cx.emit(AgentEvent::message(summary).with_action(CompactionRecord { kept }.to_action()));
        request.messages = messages;
        Ok(Fitted {
            request: ChatRequest {
                messages: view,
                ..request.clone()
            },
            counted: after,
        })
    }

    /// Starts `calibration` from the history when this agent has made no call yet in this
    /// process (a new runner, a resumed or recovered run): the last reply of the agent that
    /// carries usage answered the messages before it, so their count and its prompt tokens
    /// are one observation.
    fn seed_calibration(
        &self,
        budget: &ContextBudget,
        calibration: &UsageCalibration,
        messages: &[MessageRef],
        tools: usize,
    ) {
        let found = messages.iter().enumerate().rev().find_map(|(at, m)| {
            let usage = m.usage.as_deref().filter(|_| m.role == Role::Assistant)?;
            (usage.input_tokens > 0).then_some((at, usage.input_tokens))
        });
        let Some((at, reported)) = found else {
            return;
        };
        let uncalibrated = Fit {
            budget,
            calibration: None,
        };
        let (_, counted) = self.budget_view(&uncalibrated, &messages[..at], tools);
        calibration.observe(counted, reported);
    }

    /// `messages` as the model is sent them (large tool results as stubs), and their tokens
    /// (in the counter's units) with `tools` more for the tool definitions.
    fn budget_view(
        &self,
        fit: &Fit<'_>,
        messages: &[MessageRef],
        tools: usize,
    ) -> (Vec<MessageRef>, usize) {
        let mut tokens = tools;
        let view = messages
            .iter()
            .map(|m| {
                let sent = stub(fit, m).unwrap_or_else(|| Arc::clone(m));
                tokens += fit.budget.count(&sent);
                sent
            })
            .collect();
        (view, tokens)
    }

    /// Sets the prompt tokens the model reported for a request fitted to `budget` against
    /// the count of that request.
    pub(super) fn calibrate(&self, budget: &ContextBudget, counted: usize, reply: &Message) {
        if let Some(usage) = reply.usage.as_deref().filter(|_| budget.calibrates()) {
            self.calibration.observe(counted, usage.input_tokens);
        }
    }
}

impl ChatModelAgent {
    /// The tokens of the tool definitions, estimated from their JSON (4 bytes a token);
    /// counted once per set of definitions.
    fn definitions_tokens(&self, tools: &Arc<[ToolDefinition]>) -> usize {
        let key = tools.as_ptr() as usize;
        let mut cached = self
            .definition_tokens
            .lock()
            .expect("definition tokens lock");
        if let Some((at, tokens)) = *cached {
            if at == key {
                return tokens;
            }
        }
        let tokens = tools
            .iter()
            .map(|d| {
                (d.name.len() + d.description.len() + d.parameters.to_string().len()).div_ceil(4)
                    + 8
            })
            .sum();
        *cached = Some((key, tokens));
        tokens
    }
}
