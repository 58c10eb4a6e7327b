//! The run's budgets at the ReAct loop's safe points: checked before each model call and
//! before each reply's tool calls, and charged with what each call spent (see
//! [`crate::budget`]). A run without budgets pays one branch per call here.

use std::sync::Arc;

use super::agent::ChatModelAgent;
use crate::agent::Context;
use crate::budget::BudgetError;
use crate::event::AgentError;
use crate::message::{Message, MessageRef};
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
        let output = request.params.max_tokens.map_or(1, u64::from).max(1);
        // The clock is read only when a limit reads it; the prompt is counted only when a
        // limit reads it, and then only its messages added since this run's last count (kept
        // with the agent run, not in the session).
        let elapsed = run.elapsed_if_read(cx.run_context());
        let input = if run.caps.reads_prompt {
            cx.prompt_count().of(&request.messages)
        } else {
            0
        };
        // The run's totals are read without the session's lock; most checks end at the first
        // comparison of them. An agent with limits of its own reads its entries in the ledger.
        if run.call_clear(input, output, elapsed) {
            return Ok(());
        }
        let estimate = Usage::new(input, output);
        let agent = cx.agent_name();
        let spent = run.spent();
        let own = run.budgets.own_limits(agent).map(|limits| {
            let mine = cx.session().with_budget_ledger(|l| l.agent_total(agent));
            (limits, mine)
        });
        run.budgets
            .check_call(
                &spent,
                own,
                agent,
                self.model.model_name(),
                estimate,
                elapsed,
            )
            .map_err(|e| self.budget_error(e))
    }

    /// Notes the prompt tokens of a run's first request `messages` (its system message, then
    /// `input`) when the run's budgets read them and the input came counted (see
    /// `Messages::estimated_tokens`): the system message's estimate is `toolset`'s when it is
    /// the tool set's fixed one, so the first check estimates nothing again.
    pub(super) fn seed_prompt_tokens(
        &self,
        cx: &Context,
        messages: &[MessageRef],
        input: &crate::input::Messages,
        toolset: &super::tool_calls::Toolset,
    ) {
        let reads = cx
            .run_context()
            .run_budgets()
            .is_some_and(|run| run.caps.reads_prompt);
        if let (true, Some(tokens)) = (reads, input.estimated_tokens()) {
            let fixed = match (&toolset.fixed_system, messages.first()) {
                (Some(Some(fixed)), Some(first)) if Arc::ptr_eq(fixed, first) => {
                    Some(toolset.fixed_system_tokens)
                }
                _ => None,
            };
            cx.prompt_count()
                .seed(messages, input.count(), tokens, fixed);
        }
    }

    /// Charges the run's budgets with the model call that answered `reply` (its reported
    /// usage, or none).
    pub(super) fn charge_model_call(&self, cx: &Context, reply: &Message) {
        let Some(run) = cx.run_context().run_budgets() else {
            return;
        };
        /// A reply's usage when it reported none.
        static UNREPORTED: Usage = Usage::new(0, 0);
        let usage = reply.usage.as_deref().unwrap_or(&UNREPORTED);
        // Priced only when the run has a price table (the model's name read only then).
        let cost = if run.caps.priced {
            let model = reply.model.as_deref().unwrap_or(self.model.model_name());
            run.budgets.cost_micro_usd(model, usage)
        } else {
            0
        };
        run.charge_model_call(cx.session(), (&self.name, &self.tally_slot), usage, cost);
    }

    /// Whether `calls` tool calls stay within the run's budgets; charges them if so.
    pub(super) fn take_tool_budget(&self, cx: &Context, calls: u64) -> Result<(), AgentError> {
        let Some(run) = cx.run_context().run_budgets() else {
            return Ok(());
        };
        let elapsed = run.elapsed_if_read(cx.run_context());
        let agent = cx.agent_name();
        let spent = run.spent();
        let own = run.budgets.own_limits(agent).map(|limits| {
            let mine = cx.session().with_budget_ledger(|l| l.agent_total(agent));
            (limits, mine)
        });
        run.budgets
            .check_tools(&spent, own, agent, calls, elapsed)
            .map_err(|e| self.budget_error(e))?;
        run.charge_tool_calls(cx.session(), (&self.name, &self.tally_slot), calls);
        Ok(())
    }

    fn budget_error(&self, error: BudgetError) -> AgentError {
        match error {
            BudgetError::Exceeded(exceeded) => AgentError::BudgetExceeded(exceeded),
            other => AgentError::failed(Arc::clone(&self.name), other),
        }
    }
}
