//! The run's budgets at the ReAct loop's safe points: checked before each model call and
//! before each reply's tool calls, and charged with what each call spent (see
//! [`crate::budget`]). A run without budgets pays one branch per call here.

use std::sync::Arc;

use super::agent::ChatModelAgent;
use crate::agent::Context;
use crate::budget::BudgetError;
use crate::event::AgentError;
use crate::history::estimate_tokens;
use crate::message::Message;
use crate::model::{ChatRequest, Usage};

impl ChatModelAgent {
    /// Whether the model call `request` stays within the run's budgets: its input tokens
    /// estimated as a context budget estimates them, its output at most the request's
    /// `max_tokens` (at least one token when unset).
    pub(super) fn check_model_budget(
        &self,
        cx: &Context,
        request: &ChatRequest,
    ) -> Result<(), AgentError> {
        let Some(run) = cx.run_context().run_budgets() else {
            return Ok(());
        };
        // The prompt is estimated, and the clock read, only when a limit reads them.
        let input: usize = if run.budgets.reads_prompt_tokens() {
            request.messages.iter().map(|m| estimate_tokens(m)).sum()
        } else {
            0
        };
        let output = request.params.max_tokens.map_or(1, u64::from).max(1);
        let estimate = Usage::new(input as u64, output);
        let elapsed = run.elapsed_if_read(cx.run_context());
        cx.session()
            .with_budget_ledger(|ledger| {
                run.budgets.check_model_call(
                    ledger,
                    cx.agent_name(),
                    self.model.model_name(),
                    estimate,
                    elapsed,
                )
            })
            .map_err(|e| self.budget_error(e))
    }

    /// Charges the run's budgets with the model call that answered `reply` (its reported
    /// usage, or none).
    pub(super) fn charge_model_call(&self, cx: &Context, reply: &Message) {
        let Some(budgets) = cx.run_context().budgets() else {
            return;
        };
        let usage = reply.usage.as_deref().copied().unwrap_or_default();
        let model = reply.model.as_deref().unwrap_or(self.model.model_name());
        let cost = budgets.cost_micro_usd(model, &usage);
        cx.session()
            .with_budget_ledger(|ledger| ledger.add_model_call(&self.name, usage, cost));
    }

    /// Whether `calls` tool calls stay within the run's budgets; charges them if so.
    pub(super) fn take_tool_budget(&self, cx: &Context, calls: u64) -> Result<(), AgentError> {
        let Some(run) = cx.run_context().run_budgets() else {
            return Ok(());
        };
        if calls == 0 {
            return Ok(());
        }
        let elapsed = run.elapsed_if_read(cx.run_context());
        cx.session()
            .with_budget_ledger(|ledger| {
                run.budgets
                    .check_tool_calls(ledger, cx.agent_name(), calls, elapsed)?;
                ledger.add_tool_calls(&self.name, calls);
                Ok(())
            })
            .map_err(|e| self.budget_error(e))
    }

    fn budget_error(&self, error: BudgetError) -> AgentError {
        match error {
            BudgetError::Exceeded(exceeded) => AgentError::BudgetExceeded(exceeded),
            other => AgentError::failed(Arc::clone(&self.name), other),
        }
    }
}
