//! Keeping a [`ChatModelAgent`]'s requests within its [`ContextBudget`]: large tool results
//! sent as stubs the model reads back through the built-in `read_tool_result` tool
//! ([`ReadToolResult`]), and the compaction of the oldest messages into a recorded summary.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;

use super::agent::{ChatAgentError, ChatModelAgent};
use crate::agent::Context;
use crate::event::{AgentError, AgentEvent};
use crate::history::{plan_compaction, summary_message, CompactionRecord, ContextBudget};
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

/// The stub a tool result over `limit` tokens is sent as, or `None` to send it whole.
fn stub(budget: &ContextBudget, limit: usize, message: &Message) -> Option<MessageRef> {
    if message.role != Role::Tool
        || message.tool_name.as_deref() == Some(READ_TOOL_RESULT_TOOL_NAME)
    {
        return None;
    }
    let tokens = budget.count(message);
    if tokens <= limit {
        return None;
    }
    let handle = message.tool_call_id.as_deref().unwrap_or("");
    // The start of the result: a quarter of the limit, in about 4 bytes a token.
    let preview: String = message.content.chars().take(limit.max(8)).collect();
    let text = format!(
        "[tool result set aside: {tokens} tokens, over this agent's limit of {limit}. It \
         begins: {preview} ... Read it whole with the tool {READ_TOOL_RESULT_TOOL_NAME}, \
         handle \"{handle}\".]"
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

impl ChatModelAgent {
    /// The request the model is sent under `budget`: tool results over the limit as stubs;
    /// if it is still over the budget, the oldest messages of `request` are compacted first
    /// (their summary recorded as an event), and a request that cannot be brought under the
    /// budget is an error ([`ChatAgentError::Context`]).
    pub(super) async fn fit_budget(
        &self,
        cx: &Context,
        budget: &ContextBudget,
        request: &mut ChatRequest,
    ) -> Result<ChatRequest, AgentError> {
        let tools = self.definitions_tokens(&request.tools);
        let (view, tokens) = self.budget_view(budget, &request.messages, tools);
        if tokens <= budget.max_tokens() {
            return Ok(ChatRequest {
                messages: view,
                ..request.clone()
            });
        }
        // The instruction (a leading system message that is not a summary) is kept.
        let instruction = usize::from(
            request
                .messages
                .first()
                .is_some_and(|m| m.role == Role::System && !is_summary(m)),
        );
        let fixed = budget.count_all(&view[..instruction]) + tools;
        let room = budget.max_tokens().saturating_sub(fixed);
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
        let Some(cut) = plan_compaction(conversation, budget, budget.kept_tokens().min(room / 2))
        else {
            return Err(over(format!(
                "its request takes {tokens} tokens, over its budget of {}, and there is \
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
                    "its request takes {tokens} tokens, over its budget of {}, and the \
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
        let (view, after) = self.budget_view(budget, &messages, tools);
        if after > budget.max_tokens() {
            return Err(over(format!(
                "its request takes {after} tokens even after summarising its oldest messages \
                 (the summary takes {}), over its budget of {}; give the summarizer a shorter \
                 prompt or limit, lower keep_tokens, or set large tool results aside",
                budget.count(&summary),
                budget.max_tokens()
            )));
        }
        // Recorded once: every later input of this agent starts from the summary.
        cx.emit(AgentEvent::message(summary).with_action(CompactionRecord { kept }.to_action()));
        request.messages = messages;
        Ok(ChatRequest {
            messages: view,
            ..request.clone()
        })
    }

    /// `messages` as the model is sent them (large tool results as stubs), and their tokens
    /// with `tools` more for the tool definitions.
    fn budget_view(
        &self,
        budget: &ContextBudget,
        messages: &[MessageRef],
        tools: usize,
    ) -> (Vec<MessageRef>, usize) {
        let mut tokens = tools;
        let view = messages
            .iter()
            .map(|m| {
                let sent = budget
                    .set_aside_over()
                    .and_then(|limit| stub(budget, limit, m))
                    .unwrap_or_else(|| Arc::clone(m));
                tokens += budget.count(&sent);
                sent
            })
            .collect();
        (view, tokens)
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
