//! The budgets shared beyond the run (per thread, per tenant per period) around each model
//! call: a reservation of the call's estimate before it, settled with the reported usage after
//! it (see [`crate::spending`]); and the call's cost on its chat span when a price is known.

use std::sync::Arc;

use tracing::Span;

use super::agent::ChatModelAgent;
use super::telemetry;
use crate::agent::Context;
use crate::budget::BudgetError;
use crate::event::AgentError;
use crate::history::estimate_tokens;
use crate::message::{Message, MessageRef};
use crate::model::{ChatRequest, Usage};
use crate::spending::{SpendingCall, SpendingGate};

impl ChatModelAgent {
    /// [`model_attempts`](Self::model_attempts) inside a reservation of `gate`: refused
    /// before the call when it would cross a shared budget; settled with the reply's usage,
    /// or given back when the call failed.
    pub(super) async fn spending_call(
        &self,
        cx: &Context,
        gate: &Arc<dyn SpendingGate>,
        request: &ChatRequest,
        streaming: bool,
    ) -> Result<(MessageRef, bool), AgentError> {
        let input: usize = request.messages.iter().map(|m| estimate_tokens(m)).sum();
        let output = request.params.max_tokens.map_or(1, u64::from).max(1);
        let at_ms = cx
            .run_context()
            .host()
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let call = SpendingCall {
            thread: cx.run_context().conversation_id(),
            agent: cx.agent_name(),
            model: self.model.model_name(),
            estimate: Usage::new(input as u64, output),
            at_ms,
            charge: None,
        };
        let hold = gate.reserve(call).await.map_err(|e| match e {
            BudgetError::Exceeded(exceeded) => AgentError::BudgetExceeded(exceeded),
            other => AgentError::failed(Arc::clone(&self.name), other),
        })?;
        let result = self.model_attempts(cx, request, streaming).await;
        let spent = result.as_ref().ok().map(|(reply, _)| {
            let model = reply.model.as_deref().unwrap_or(self.model.model_name());
            (model, reply.usage.as_deref().copied().unwrap_or_default())
        });
        gate.settle(hold, spent).await;
        result
    }

    /// Records `reply`'s cost on its chat `span` when a price of its model is known (the run's
    /// budgets' table, else the shared spending gate's).
    pub(super) fn record_cost(&self, cx: &Context, span: &Span, reply: &Message) {
        let Some(usage) = reply.usage.as_deref() else {
            return;
        };
        let model = reply.model.as_deref().unwrap_or(self.model.model_name());
        let run = cx.run_context();
        let price = run
            .budgets()
            .and_then(|b| b.model_price(model).copied())
            .or_else(|| run.spending().and_then(|gate| gate.price(model)));
        if let Some(price) = price {
            telemetry::record_cost(span, price.cost_micro_usd(usage));
        }
    }
}
