//! Where a [`ChatModelAgent`] stops for a cancel, and how it goes on when resumed.
//!
//! At a [`SafePoint`] the run's [`CancelSignal`](crate::CancelSignal) asks for, the agent emits
//! one interrupt whose info is [`cancel_info`] and whose state is a [`CancelStop`]: the
//! conversation as the model saw it, the model calls made, and (after a model call) where the
//! reply it stopped after is. Resuming it runs that reply's tool calls (or, for a final answer,
//! ends the agent with it), then the ReAct loop goes on, as if the run had never stopped.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::agent::*;
use crate::agent::cancel::{cancel_info, SafePoint};
use crate::agent::{AgentInput, Context};
use crate::event::{Action, AgentError, AgentEvent, InterruptInfo};
use crate::message::{Message, MessageRef};
use crate::model::ChatRequest;

/// The key of a cancel stop in the interrupt's state.
const KEY: &str = "agentflow_cancel";

/// What a ChatModelAgent saves when it stops for a cancel.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct CancelStop {
    /// The conversation as the model saw it, with its last reply (and tool results).
    messages: Vec<MessageRef>,
    /// Model calls made.
    used: usize,
    /// After a model call: where the reply it stopped after is in `messages` (its tool calls,
    /// if any, have not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<usize>,
}

impl CancelStop {
    /// The cancel stop saved in an interrupt's `state`, if it is one.
    pub(super) fn of(state: &serde_json::Value) -> Option<CancelStop> {
        serde_json::from_value(state.get(KEY)?.clone()).ok()
    }
}

impl ChatModelAgent {
    /// Stops the agent at `point` for a cancel: emits the interrupt that saves where it is.
    pub(super) fn stop_for_cancel(
        &self,
        cx: &Context,
        point: SafePoint,
        messages: &[MessageRef],
        used: usize,
        reply: Option<usize>,
    ) -> Result<(), AgentError> {
        let stop = CancelStop {
            messages: messages.to_vec(),
            used,
            reply,
        };
        let state = serde_json::to_value(&stop).map_err(|e| ChatAgentError::Resume {
            agent: Arc::clone(&self.name),
            message: format!("its conversation could not be saved at a cancel ({e})").into(),
        })?;
        let info =
            InterruptInfo::new(cancel_info(point)).with_state(serde_json::json!({ KEY: state }));
        tracing::debug!(agent = %self.name, ?point, "stopping for a cancel");
        cx.emit(AgentEvent::action(Action::interrupted(info)));
        Ok(())
    }

    /// Goes on from a cancel stop: the reply's tool calls if they had not run, then the loop.
    pub(super) async fn resume_cancelled(
        &self,
        cx: &Context,
        input: AgentInput,
        stop: CancelStop,
    ) -> Result<(), AgentError> {
        let toolset = self.node_toolset(cx);
        let mut request = ChatRequest {
            messages: stop.messages,
            tools: toolset.definitions.clone(),
            output_schema: self.output.as_ref().map(|o| Arc::clone(&o.schema)),
            params: self.run_params(cx),
        };
        if let Some(at) = stop.reply.filter(|&at| at < request.messages.len()) {
            if request.messages[at].tool_calls.is_empty() {
                // It stopped after its final answer: the answer ends the agent as it would have.
                let reply = Arc::clone(&request.messages[at]);
                let Some(output) = &self.output else {
                    self.store_output(cx, &reply.content);
                    return Ok(());
                };
                match self.take_output(cx, output, &reply, &mut 0)? {
                    None => {
                        self.store_output(cx, &reply.content);
                        return Ok(());
                    }
                    Some(correction) => {
                        request.messages.push(Arc::new(Message::user(correction)));
                        return self
                            .react_loop(cx, &toolset, request, stop.used, input.streaming)
                            .await;
                    }
                }
            }
            let turn = self
                .run_tools(cx, &toolset, &mut request.messages, at, stop.used, None)
                .await?;
            if self.turn_ended(cx, turn) {
                return Ok(());
            }
            if cx.stops_at(SafePoint::AfterTools).is_some() {
                return self.stop_for_cancel(
                    cx,
                    SafePoint::AfterTools,
                    &request.messages,
                    stop.used,
                    None,
                );
            }
        }
        self.react_loop(cx, &toolset, request, stop.used, input.streaming)
            .await
    }
}
