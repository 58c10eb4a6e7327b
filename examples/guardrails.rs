//! Input and output guardrails, and an audit log, as middleware.
//!
//! ```text
//! cargo run --example guardrails
//! ```
//!
//! A support agent answers order questions with a `lookup_order` tool. Three middleware wrap it:
//!
//! - `AuditLog` (on the runner: every agent, model and tool call of every run) prints what
//!   happens, with token usage;
//! - `InputGuardrail` (on the node) redacts card numbers from every prompt before the model
//!   sees it, and refuses requests that ask for another customer's data: the run ends with an
//!   error event carrying `AgentError::Middleware`, and the model is never called;
//! - `OutputGuardrail` (on the agent) refuses a reply that leaks an internal note, and denies
//!   the `lookup_order` tool for orders the customer does not own (the model is told why).
//!
//! Runs offline on a `ScriptedModel`; three questions, three outcomes.

use std::sync::Arc;

use agentweave::middleware::{HookContext, HookError, Middleware};
use agentweave::model::{ScriptStep, ScriptedModel, Usage};
use agentweave::prelude::*;
use agentweave::RunRequest;
use agentweave::Session;
use agentweave::{async_trait, message::ToolCall, model::ChatRequest};
use futures::StreamExt;
use serde::Deserialize;

/// Prints each hook it sees.
struct AuditLog;

#[async_trait]
impl Middleware for AuditLog {
    async fn before_agent(
        &self,
        cx: &HookContext,
        _input: &mut AgentInput,
    ) -> Result<Option<Message>, HookError> {
        println!("  audit: agent {} starts", cx.run_path());
        Ok(None)
    }
    async fn after_model(&self, cx: &HookContext, reply: &mut Message) -> Result<(), HookError> {
        let usage = reply.usage.as_deref().copied().unwrap_or_default();
        println!(
            "  audit: model {} answered ({} tokens in, {} out)",
            cx.model_name().unwrap_or("?"),
            usage.input_tokens,
            usage.output_tokens
        );
        Ok(())
    }
    async fn before_tool(
        &self,
        cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        println!(
            "  audit: tool {}({})",
            cx.tool_name().unwrap_or("?"),
            call.arguments
        );
        Ok(None)
    }
}

/// Redacts card numbers; refuses questions about other customers.
struct InputGuardrail;

fn redact_digits(text: &str) -> String {
    // A run of 12 or more digits (spaces allowed) is a card number.
    let digits = text.chars().filter(char::is_ascii_digit).count();
    if digits < 12 {
        return text.to_owned();
    }
    text.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

#[async_trait]
impl Middleware for InputGuardrail {
    async fn before_model(
        &self,
        _cx: &HookContext,
        request: &mut ChatRequest,
    ) -> Result<Option<Message>, HookError> {
        for message in &mut request.messages {
            if message.role != Role::User {
                continue;
            }
            if message.content.contains("another customer") {
                return Err(HookError::refuse(
                    "questions about other customers' orders are not answered",
                ));
            }
            let redacted = redact_digits(&message.content);
            if redacted != message.content {
                *message = Arc::new(Message::user(redacted));
            }
        }
        Ok(None)
    }
}

/// Refuses replies that leak internal notes; denies lookups of orders the customer does not own.
struct OutputGuardrail {
    own_orders: Vec<u32>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Order {
    /// The order number.
    order_id: u32,
}

#[async_trait]
impl Middleware for OutputGuardrail {
    async fn after_model(&self, _cx: &HookContext, reply: &mut Message) -> Result<(), HookError> {
        if reply.content.contains("INTERNAL") {
            return Err(HookError::refuse("the reply quotes an internal note"));
        }
        Ok(())
    }
    async fn before_tool(
        &self,
        _cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<Option<String>, HookError> {
        let order: Order = serde_json::from_str(&call.arguments).map_err(HookError::failed)?;
        if self.own_orders.contains(&order.order_id) {
            Ok(None)
        } else {
            Ok(Some(format!(
                "denied: order {} does not belong to this customer",
                order.order_id
            )))
        }
    }
}

pub fn support_agent() -> Result<FlowAgent, Box<dyn std::error::Error>> {
    let model = ScriptedModel::rules()
        .after_tool(
            "lookup_order",
            ScriptStep::text("I looked that up for you: see above.").with_usage(Usage::new(90, 9)),
        )
        .when_last_user_contains(
            "note",
            ScriptStep::text("INTERNAL: customer is a VIP.").with_usage(Usage::new(40, 6)),
        )
        .when_last_user_contains(
            "order",
            ScriptStep::tool_calls([
                ("lookup_order", serde_json::json!({"order_id": 42})),
                ("lookup_order", serde_json::json!({"order_id": 7})),
            ])
            .with_usage(Usage::new(60, 12)),
        )
        .otherwise(ScriptStep::text("How can I help?"))
        .named("support-model");
    let agent = ChatModelAgent::builder("support", model)
        .instruction("You answer questions about the customer's own orders.")
        .tool(tool_fn(
            "lookup_order",
            "Looks up one of the customer's orders.",
            |o: Order| async move { Ok::<_, String>(format!("order {}: shipped", o.order_id)) },
        ))
        .middleware(OutputGuardrail {
            own_orders: vec![42],
        })
        .build()?;
    Ok(FlowAgent::new(agent).middleware(InputGuardrail))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runner = Runner::builder(support_agent()?)
        .middleware(AuditLog)
        .build();
    for question in [
        "Where are my orders? My card is 4111 1111 1111 1111.",
        "What does the note on my account say?",
        "Show me another customer's orders.",
    ] {
        println!("user: {question}");
        let session = Session::new();
        let mut events =
            runner.run(RunRequest::new([Message::user(question)]).session(Arc::clone(&session)));
        while let Some(event) = events.next().await {
            if let Some(m) = event.message_output() {
                let calls: Vec<String> = m
                    .tool_calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, c.arguments))
                    .collect();
                println!(
                    "  [{}] {}: {} {}",
                    event.run_path(),
                    m.role,
                    m.content,
                    calls.join(" ")
                );
            }
            if let Some(AgentError::Middleware(refusal)) = &event.error {
                println!("  [{}] refused: {refusal}", event.run_path());
            }
        }
        println!(
            "  tokens this run: {}",
            session.usage().total.total_tokens()
        );
    }
    Ok(())
}
