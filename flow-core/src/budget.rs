//! Budgets: what one run may spend ([`Budgets`]: tokens, money, model calls, tool calls, wall
//! time; for the whole run and per agent), what it has spent ([`BudgetLedger`]), and
//! [`BudgetExceeded`], the outcome a run ends with when its next call would cross a budget.
//!
//! A budget is checked **before** the call that would cross it, at the ReAct loop's safe
//! points: before each model call (its input tokens estimated the way a
//! [`ContextBudget`](crate::history::ContextBudget) estimates them, its output bounded by the
//! request's `max_tokens` when set), and before each reply's batch of tool calls. The run then
//! ends with one [`AgentError::BudgetExceeded`](crate::AgentError::BudgetExceeded) event
//! naming the budget and the agent; what it recorded before stays recorded.
//!
//! What a run spent is kept among its session values under [`BUDGET_SESSION_KEY`] (only when
//! the run has budgets), so it is saved in checkpoints, carried through an interrupt and
//! resume, and shared with the runs nested in it (an [`AgentTool`](crate::AgentTool)'s, a task
//! sub-agent's): their spending counts against the run's budgets. A call is charged to the
//! run's own totals and per-agent tally (atomics, no lock), which every read or save of the
//! ledger folds in first. Wall time is read from the run's [`Host`](crate::host::Host) clock,
//! from the run's first check (a resumed run starts its clock again: the time it waited for an
//! answer is not counted).
//!
//! A recovered turn answers its already-journaled model calls from the journal: their usage
//! still counts, once, so the recovered turn's report equals the sum of its model calls.
//! Per-agent limits hold over all of an agent's runs within the run. Budgets per thread and
//! per tenant per period, shared by every process on one store, are checked beside these
//! through a [`SpendingGate`] (see [`crate::spending`]; the in-process runtime's
//! `SpendingBudgets`); their refusals are the same [`BudgetExceeded`], with
//! [`BudgetScope::Thread`] or [`BudgetScope::Tenant`]. Parallel lanes
//! are checked independently, so calls in flight at the same moment can together pass a limit
//! by the calls of one round.
//!
//! ```
//! use std::time::Duration;
//! use agentweave_core::budget::{Budgets, BudgetLimits, ModelPrice};
//! let budgets = Budgets::new(
//!     BudgetLimits::default()
//!         .max_total_tokens(50_000)
//!         .max_cost_usd(0.25)
//!         .max_model_calls(20)
//!         .max_wall_time(Duration::from_secs(120)),
//! )
//! .agent("researcher", BudgetLimits::default().max_tool_calls(10))
//! .price("gpt-4o", ModelPrice::per_million_tokens(2.50, 10.00).cached_input(1.25));
//! assert_eq!(budgets.run_limits().max_model_calls, Some(20));
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::usage::Usage;

pub use crate::spending::{BudgetPeriod, SpendingCall, SpendingGate, SpendingHold};

/// The session value under which a run's [`BudgetLedger`] is kept.
pub const BUDGET_SESSION_KEY: &str = "agentflow.budget";

/// Limits of one scope (the run, or one agent of it); `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetLimits {
    /// Prompt tokens (cached ones included).
    pub max_input_tokens: Option<u64>,
    /// Reply tokens (reasoning ones included).
    pub max_output_tokens: Option<u64>,
    /// Input plus output tokens.
    pub max_total_tokens: Option<u64>,
    /// Money, in millionths of a US dollar (see [`ModelPrice`]).
    pub max_cost_micro_usd: Option<u64>,
    /// Model calls (each attempt that got an answer; a retried failure is not one).
    pub max_model_calls: Option<u64>,
    /// Tool calls (the builtin transfer and exit tools are not counted).
    pub max_tool_calls: Option<u64>,
    /// Time since the run's first check, on the host's clock.
    pub max_wall_time: Option<Duration>,
}

impl BudgetLimits {
    /// Sets [`max_input_tokens`](Self::max_input_tokens).
    pub fn max_input_tokens(mut self, tokens: u64) -> Self {
        self.max_input_tokens = Some(tokens);
        self
    }

    /// Sets [`max_output_tokens`](Self::max_output_tokens).
    pub fn max_output_tokens(mut self, tokens: u64) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// Sets [`max_total_tokens`](Self::max_total_tokens).
    pub fn max_total_tokens(mut self, tokens: u64) -> Self {
        self.max_total_tokens = Some(tokens);
        self
    }

    /// Sets [`max_cost_micro_usd`](Self::max_cost_micro_usd) from US dollars (rounded down to a
    /// millionth; a negative or not-a-number amount is zero).
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        let micros = (usd * 1e6).floor();
        self.max_cost_micro_usd = Some(if micros.is_finite() && micros > 0.0 {
            micros as u64
        } else {
            0
        });
        self
    }

    /// Sets [`max_model_calls`](Self::max_model_calls).
    pub fn max_model_calls(mut self, calls: u64) -> Self {
        self.max_model_calls = Some(calls);
        self
    }

    /// Sets [`max_tool_calls`](Self::max_tool_calls).
    pub fn max_tool_calls(mut self, calls: u64) -> Self {
        self.max_tool_calls = Some(calls);
        self
    }

    /// Sets [`max_wall_time`](Self::max_wall_time).
    pub fn max_wall_time(mut self, limit: Duration) -> Self {
        self.max_wall_time = Some(limit);
        self
    }

    fn is_empty(&self) -> bool {
        *self == BudgetLimits::default()
    }
}

/// What a model's tokens cost, in US dollars per million tokens (the way providers list their
/// prices), which is the same number as millionths of a dollar per token. Cached input and
/// reasoning tokens are priced apart: they are parts of the input and output tokens, and are
/// charged at their own price instead of the plain one.
///
/// ```
/// use agentweave_core::budget::ModelPrice;
/// use agentweave_core::model::Usage;
/// let price = ModelPrice::per_million_tokens(2.0, 8.0).cached_input(0.5).reasoning(8.0);
/// // 1,000 input of which 800 cached, 100 output: 200 x 2 + 800 x 0.5 + 100 x 8.
/// assert_eq!(price.cost_micro_usd(&Usage::new(1_000, 100).with_cached_input(800)), 1_600);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// Per million prompt tokens not read from the cache.
    pub input: f64,
    /// Per million prompt tokens read from the cache (default: the input price).
    pub cached_input: f64,
    /// Per million reply tokens that are not reasoning.
    pub output: f64,
    /// Per million reasoning tokens (default: the output price).
    pub reasoning: f64,
}

impl ModelPrice {
    /// `input` and `output` dollars per million tokens; cached input and reasoning at the same
    /// prices until set.
    pub fn per_million_tokens(input: f64, output: f64) -> Self {
        ModelPrice {
            input,
            cached_input: input,
            output,
            reasoning: output,
        }
    }

    /// Sets the price of cached input tokens.
    pub fn cached_input(mut self, per_million: f64) -> Self {
        self.cached_input = per_million;
        self
    }

    /// Sets the price of reasoning tokens.
    pub fn reasoning(mut self, per_million: f64) -> Self {
        self.reasoning = per_million;
        self
    }

    /// What `usage` costs, in millionths of a dollar (rounded up).
    pub fn cost_micro_usd(&self, usage: &Usage) -> u64 {
        let cached = usage
            .cached_input_tokens
            .unwrap_or(0)
            .min(usage.input_tokens);
        let reasoning = usage.reasoning_tokens.unwrap_or(0).min(usage.output_tokens);
        let cost = (usage.input_tokens - cached) as f64 * self.input
            + cached as f64 * self.cached_input
            + (usage.output_tokens - reasoning) as f64 * self.output
            + reasoning as f64 * self.reasoning;
        if cost.is_finite() && cost > 0.0 {
            cost.ceil() as u64
        } else {
            0
        }
    }
}

/// A run's budgets: limits for the whole run, limits per agent (by name), and the price table
/// that money budgets read. Set with `RunnerBuilder::budgets`; see the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    run: BudgetLimits,
    agents: BTreeMap<Arc<str>, BudgetLimits>,
    prices: BTreeMap<Arc<str>, ModelPrice>,
    /// Whether a limit reads the prompt's estimated tokens (input, total or money).
    reads_prompt: bool,
    /// Whether a limit reads the wall time.
    reads_clock: bool,
    /// The agents that spent in earlier runs under these budgets.
    pub(crate) seen: SeenAgents,
}

/// A run's limits as the common path of a model call's check compares them (see
/// [`Budgets::clear_caps`]): each limit a number (the largest when unset), with the flags a
/// check reads first, so a check is a few loads and comparisons in one place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClearCaps {
    /// Whether these caps alone decide a check: no price table, money limit, or agent with
    /// limits of its own (else [`Budgets::check_call`] does).
    decide: bool,
    /// [`Budgets::reads_prompt_tokens`].
    pub(crate) reads_prompt: bool,
    /// [`Budgets::reads_wall_time`].
    pub(crate) reads_clock: bool,
    /// [`Budgets::has_prices`].
    pub(crate) priced: bool,
    model_calls: u64,
    input: u64,
    output: u64,
    total: u64,
    wall: Duration,
}

impl ClearCaps {
    /// Whether a model call estimated at `input` and `output` tokens is within the run's
    /// limits, given what the run has spent (`run_input` and `run_output` tokens in
    /// `run_calls` model calls) and `elapsed`, when these caps alone decide it (`false`
    /// otherwise, and when a limit would be crossed: [`Budgets::check_call`] then says which).
    /// Straight comparisons, no error built.
    #[inline]
    pub(crate) fn clear(
        &self,
        (run_input, run_output, run_calls): (u64, u64, u64),
        (input, output): (u64, u64),
        elapsed: Duration,
    ) -> bool {
        let input = run_input.saturating_add(input);
        let output = run_output.saturating_add(output);
        self.decide
            && run_calls < self.model_calls
            && input <= self.input
            && output <= self.output
            && input.saturating_add(output) <= self.total
            // (No limit reads the clock: none on wall time, and `elapsed` was not read.)
            && (!self.reads_clock || elapsed < self.wall)
    }
}

/// How many agents a run's tally holds (its per-agent spending between reads of the ledger); a
/// run with more charges the others in the session's ledger, under its lock. Ten slots keep a
/// run's budgets within one small allocation (see the size test in `agent::run_budgets`).
pub(crate) const TALLY_SLOTS: usize = 10;

/// The agents that spent in the runs under one set of [`Budgets`] (a runner's), in the order
/// they first did, up to a run's tally's slots: a run starts with a slot for each, so the
/// agents of a runner's later runs charge without claiming one. Not part of the budgets' value:
/// compared, printed and cloned as if absent (a clone learns again).
#[derive(Default)]
pub(crate) struct SeenAgents(std::sync::Mutex<Arc<[Arc<str>]>>);

impl SeenAgents {
    /// The agents seen so far.
    pub(crate) fn agents(&self) -> Arc<[Arc<str>]> {
        Arc::clone(
            &self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Notes `agent` (by name), if there is room.
    pub(crate) fn learn(&self, agent: &Arc<str>) {
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.len() < TALLY_SLOTS && seen.iter().all(|a| a != agent) {
            *seen = seen.iter().chain([agent]).cloned().collect();
        }
    }
}

impl Clone for SeenAgents {
    fn clone(&self) -> Self {
        SeenAgents::default()
    }
}

impl PartialEq for SeenAgents {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for SeenAgents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeenAgents")
    }
}

impl Budgets {
    /// Budgets with `run` as the whole run's limits.
    pub fn new(run: BudgetLimits) -> Self {
        Budgets {
            run,
            ..Budgets::default()
        }
        .noting(&run)
    }

    /// Notes what `limits` read, so that a call skips what no limit reads.
    fn noting(mut self, limits: &BudgetLimits) -> Self {
        self.reads_prompt |= limits.max_input_tokens.is_some()
            || limits.max_total_tokens.is_some()
            || limits.max_cost_micro_usd.is_some();
        self.reads_clock |= limits.max_wall_time.is_some();
        self
    }

    /// Whether a limit reads a model call's prompt tokens (input, total tokens or money): if
    /// none does, a check need not estimate them.
    pub fn reads_prompt_tokens(&self) -> bool {
        self.reads_prompt
    }

    /// Whether a limit reads the run's wall time: if none does, a check need not read the
    /// clock.
    pub fn reads_wall_time(&self) -> bool {
        self.reads_clock
    }

    /// Adds the limits of the agent named `agent` (over all its runs within the run: each time
    /// it is reached by a transfer, each task it is given).
    pub fn agent(mut self, agent: impl Into<Arc<str>>, limits: BudgetLimits) -> Self {
        self.agents.insert(agent.into(), limits);
        self.noting(&limits)
    }

    /// Adds the price of the model named `model` (its
    /// [`ChatModel::model_name`](crate::ChatModel::model_name)).
    pub fn price(mut self, model: impl Into<Arc<str>>, price: ModelPrice) -> Self {
        self.prices.insert(model.into(), price);
        self
    }

    /// The whole run's limits.
    pub fn run_limits(&self) -> &BudgetLimits {
        &self.run
    }

    /// The limits of agent `agent`, if it has its own.
    pub fn agent_limits(&self, agent: &str) -> Option<&BudgetLimits> {
        self.agents.get(agent)
    }

    /// Whether the price table has any model.
    pub fn has_prices(&self) -> bool {
        !self.prices.is_empty()
    }

    /// The price of model `model`, if the table has it.
    pub fn model_price(&self, model: &str) -> Option<&ModelPrice> {
        self.prices.get(model)
    }

    /// Whether no limit is set anywhere.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.run.is_empty() && self.agents.values().all(BudgetLimits::is_empty)
    }

    fn needs_price(&self, agent: &str) -> bool {
        self.run.max_cost_micro_usd.is_some()
            || self
                .agents
                .get(agent)
                .is_some_and(|l| l.max_cost_micro_usd.is_some())
    }

    /// Whether a model call of `agent` to `model`, estimated at `input` prompt tokens and at
    /// most `output` reply tokens, stays within every budget, given what `ledger` says was spent
    /// and `elapsed` since the run's first check.
    pub fn check_model_call(
        &self,
        ledger: &BudgetLedger,
        agent: &str,
        model: &str,
        estimate: Usage,
        elapsed: Duration,
    ) -> Result<(), BudgetError> {
        let own = self
            .own_limits(agent)
            .map(|limits| (limits, ledger.agent_total(agent)));
        self.check_call(&ledger.total, own, agent, model, estimate, elapsed)
    }

    /// [`check_model_call`](Self::check_model_call) given what the run has spent (`run`) and,
    /// when `agent` has its own limits, those limits and what it has spent (`own`).
    pub(crate) fn check_call(
        &self,
        run: &Spent,
        own: Option<(&BudgetLimits, Spent)>,
        agent: &str,
        model: &str,
        estimate: Usage,
        elapsed: Duration,
    ) -> Result<(), BudgetError> {
        // Most runs have no price table and no agent of their own limits: no lookup then.
        let price = if self.prices.is_empty() {
            None
        } else {
            self.model_price(model)
        };
        if price.is_none() && self.needs_price(agent) {
            return Err(BudgetError::Unpriced {
                agent: agent.into(),
                model: model.into(),
            });
        }
        let cost = price.map_or(0, |p| p.cost_micro_usd(&estimate));
        let call = Call {
            agent,
            estimate: &estimate,
            cost,
            elapsed,
        };
        call.within(BudgetScope::Run, &self.run, run)?;
        if let Some((limits, spent)) = own {
            call.within(BudgetScope::Agent, limits, &spent)?;
        }
        Ok(())
    }

    /// The run's limits as a check's common path compares them ([`ClearCaps`]), made once
    /// when a run starts.
    pub(crate) fn clear_caps(&self) -> ClearCaps {
        let l = &self.run;
        let cap = |limit: Option<u64>| limit.unwrap_or(u64::MAX);
        ClearCaps {
            decide: self.prices.is_empty()
                && l.max_cost_micro_usd.is_none()
                && self.agents.is_empty(),
            reads_prompt: self.reads_prompt,
            reads_clock: self.reads_clock,
            priced: !self.prices.is_empty(),
            model_calls: cap(l.max_model_calls),
            input: cap(l.max_input_tokens),
            output: cap(l.max_output_tokens),
            total: cap(l.max_total_tokens),
            wall: l.max_wall_time.unwrap_or(Duration::MAX),
        }
    }

    /// The limits of `agent`, if it has its own (no lookup when no agent has).
    pub(crate) fn own_limits(&self, agent: &str) -> Option<&BudgetLimits> {
        if self.agents.is_empty() {
            None
        } else {
            self.agents.get(agent)
        }
    }

    /// Whether `calls` more tool calls of `agent` stay within every budget.
    pub fn check_tool_calls(
        &self,
        ledger: &BudgetLedger,
        agent: &str,
        calls: u64,
        elapsed: Duration,
    ) -> Result<(), BudgetError> {
        let own = self
            .own_limits(agent)
            .map(|limits| (limits, ledger.agent_total(agent)));
        self.check_tools(&ledger.total, own, agent, calls, elapsed)
    }

    /// [`check_tool_calls`](Self::check_tool_calls) given what the run has spent and, when
    /// `agent` has its own limits, those limits and what it has spent.
    pub(crate) fn check_tools(
        &self,
        run: &Spent,
        own: Option<(&BudgetLimits, Spent)>,
        agent: &str,
        calls: u64,
        elapsed: Duration,
    ) -> Result<(), BudgetError> {
        let scopes = std::iter::once((BudgetScope::Run, &self.run, *run))
            .chain(own.map(|(limits, spent)| (BudgetScope::Agent, limits, spent)));
        for (scope, limits, spent) in scopes {
            let checks = [(
                BudgetKind::ToolCalls,
                limits.max_tool_calls,
                spent.tool_calls + calls,
            )];
            check_all(scope, agent, limits, &checks, elapsed)?;
        }
        Ok(())
    }

    /// The cost of `usage` on `model`, per the price table (0 for a model it does not have).
    pub fn cost_micro_usd(&self, model: &str, usage: &Usage) -> u64 {
        if self.prices.is_empty() {
            return 0;
        }
        self.model_price(model)
            .map_or(0, |price| price.cost_micro_usd(usage))
    }
}

/// One model call being checked: who makes it, its estimate and cost, and the run's time.
struct Call<'a> {
    agent: &'a str,
    estimate: &'a Usage,
    cost: u64,
    elapsed: Duration,
}

impl Call<'_> {
    /// Whether the call stays within `limits` of `scope`, which has `spent`: each limit that
    /// is set is compared, the wall time first.
    fn within(
        &self,
        scope: BudgetScope,
        limits: &BudgetLimits,
        spent: &Spent,
    ) -> Result<(), BudgetError> {
        let exceeded = |budget, limit, would_reach| {
            Err(BudgetError::Exceeded(BudgetExceeded {
                budget,
                scope,
                agent: self.agent.into(),
                limit,
                would_reach,
            }))
        };
        if let Some(max) = limits.max_wall_time {
            if self.elapsed >= max {
                return exceeded(
                    BudgetKind::WallTime,
                    max.as_millis() as u64,
                    self.elapsed.as_millis() as u64,
                );
            }
        }
        let e = self.estimate;
        let over = |limit: Option<u64>, would_reach: u64| limit.filter(|l| would_reach > *l);
        if let Some(l) = over(limits.max_model_calls, spent.model_calls + 1) {
            return exceeded(BudgetKind::ModelCalls, l, spent.model_calls + 1);
        }
        let input = spent.usage.input_tokens + e.input_tokens;
        if let Some(l) = over(limits.max_input_tokens, input) {
            return exceeded(BudgetKind::InputTokens, l, input);
        }
        let output = spent.usage.output_tokens + e.output_tokens;
        if let Some(l) = over(limits.max_output_tokens, output) {
            return exceeded(BudgetKind::OutputTokens, l, output);
        }
        if let Some(l) = over(limits.max_total_tokens, input + output) {
            return exceeded(BudgetKind::TotalTokens, l, input + output);
        }
        let cost = spent.cost_micro_usd + self.cost;
        if let Some(l) = over(limits.max_cost_micro_usd, cost) {
            return exceeded(BudgetKind::Cost, l, cost);
        }
        Ok(())
    }
}

fn check_all(
    scope: BudgetScope,
    agent: &str,
    limits: &BudgetLimits,
    checks: &[(BudgetKind, Option<u64>, u64)],
    elapsed: Duration,
) -> Result<(), BudgetError> {
    if let Some(max) = limits.max_wall_time {
        if elapsed >= max {
            return Err(BudgetError::Exceeded(BudgetExceeded {
                budget: BudgetKind::WallTime,
                scope,
                agent: agent.into(),
                limit: max.as_millis() as u64,
                would_reach: elapsed.as_millis() as u64,
            }));
        }
    }
    for &(budget, limit, would_reach) in checks {
        if let Some(limit) = limit {
            if would_reach > limit {
                return Err(BudgetError::Exceeded(BudgetExceeded {
                    budget,
                    scope,
                    agent: agent.into(),
                    limit,
                    would_reach,
                }));
            }
        }
    }
    Ok(())
}

/// What a scope (the run, or one agent) has spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spent {
    /// Tokens, summed over the model calls.
    pub usage: Usage,
    /// Model calls answered.
    pub model_calls: u64,
    /// Tool calls started.
    pub tool_calls: u64,
    /// Money, in millionths of a dollar (per the run's price table).
    pub cost_micro_usd: u64,
}

/// What a run with budgets has spent: in all, and per agent. Kept among the session values
/// under [`BUDGET_SESSION_KEY`]; read it with
/// [`Session::budget_ledger`](crate::Session::budget_ledger).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetLedger {
    /// The whole run (with the runs nested in it).
    pub total: Spent,
    /// Per agent, in the order they first spent (read one with [`agent`](Self::agent)). A
    /// list, not a map: [`add_model_call`](Self::add_model_call) adds to the last entry when it
    /// is its agent's, else starts an entry, with no search; a ledger read out of a run
    /// ([`Session::budget_ledger`](crate::Session::budget_ledger), the saved values) has
    /// each agent once ([`merge`](Self::merge)).
    #[serde(default)]
    pub by_agent: Vec<AgentSpent>,
}

/// What one agent of a run has spent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSpent {
    /// The agent's name.
    pub agent: Arc<str>,
    /// What it spent.
    #[serde(flatten)]
    pub spent: Spent,
}

impl BudgetLedger {
    /// What `scope` has spent: the run's total, or `agent`'s.
    pub fn spent(&self, scope: BudgetScope, agent: &str) -> Spent {
        match scope {
            BudgetScope::Run => self.total,
            BudgetScope::Agent => self.agent_total(agent),
            // Kept by the shared spending store, not the run's ledger.
            BudgetScope::Thread | BudgetScope::Tenant { .. } => Spent::default(),
        }
    }

    /// Adds one model call of `agent`.
    pub fn add_model_call(&mut self, agent: &Arc<str>, usage: Usage, cost_micro_usd: u64) {
        self.total.add_model_call(usage, cost_micro_usd);
        self.agent_mut(agent).add_model_call(usage, cost_micro_usd);
    }

    /// Adds `calls` tool calls of `agent`.
    pub fn add_tool_calls(&mut self, agent: &Arc<str>, calls: u64) {
        self.total.tool_calls += calls;
        self.agent_mut(agent).tool_calls += calls;
    }

    /// Adds `spent` of `agent` (folded from a run's tally): to the total, and to the agent's
    /// entry (its first, found by name), or a new one.
    pub(crate) fn add_spent(&mut self, agent: &Arc<str>, spent: &Spent) {
        self.total.add(spent);
        match self.by_agent.iter_mut().find(|a| a.agent == *agent) {
            Some(entry) => entry.spent.add(spent),
            None => {
                if self.by_agent.capacity() == 0 {
                    self.by_agent.reserve_exact(FIRST_AGENTS);
                }
                self.by_agent.push(AgentSpent {
                    agent: Arc::clone(agent),
                    spent: *spent,
                });
            }
        }
    }

    /// What agent `agent` has spent, if it has (in a [merged](Self::merge) ledger, as one
    /// read out of a run is).
    pub fn agent(&self, agent: &str) -> Option<&Spent> {
        self.by_agent
            .iter()
            .find(|a| &*a.agent == agent)
            .map(|a| &a.spent)
    }

    /// What agent `agent` has spent, over all its entries.
    pub(crate) fn agent_total(&self, agent: &str) -> Spent {
        let mut total = Spent::default();
        for a in self.by_agent.iter().filter(|a| &*a.agent == agent) {
            total.add(&a.spent);
        }
        total
    }

    /// Merges the entries of each agent into its first one, keeping the order in which the
    /// agents first spent.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agentweave_core::budget::BudgetLedger;
    /// use agentweave_core::model::Usage;
    /// let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
    /// let mut ledger = BudgetLedger::default();
    /// ledger.add_model_call(&a, Usage::new(10, 1), 0);
    /// ledger.add_model_call(&b, Usage::new(20, 2), 0);
    /// ledger.add_model_call(&a, Usage::new(30, 3), 0);
    /// ledger.merge();
    /// assert_eq!(ledger.by_agent.len(), 2);
    /// assert_eq!(ledger.agent("a").unwrap().usage.input_tokens, 40);
    /// assert_eq!(ledger.agent("a").unwrap().model_calls, 2);
    /// ```
    pub fn merge(&mut self) {
        let mut merged: Vec<AgentSpent> = Vec::with_capacity(self.by_agent.len());
        for entry in self.by_agent.drain(..) {
            match merged.iter_mut().find(|m| m.agent == entry.agent) {
                Some(m) => m.spent.add(&entry.spent),
                None => merged.push(entry),
            }
        }
        self.by_agent = merged;
    }

    /// The entry `agent` spends in: the last one if it is `agent`'s (found by its shared
    /// name's pointer: no search, no text compared), else a new one. Entries are merged
    /// when a run alternates between agents often enough to make many.
    fn agent_mut(&mut self, agent: &Arc<str>) -> &mut Spent {
        let last = self.by_agent.len().wrapping_sub(1);
        if !self
            .by_agent
            .get(last)
            .is_some_and(|a| Arc::ptr_eq(&a.agent, agent))
        {
            if self.by_agent.len() >= 64 {
                self.merge();
            }
            if self.by_agent.capacity() == 0 {
                // One allocation for as many agents as fit in the allocator's small requests,
                // not one per doubling (see `FIRST_AGENTS`).
                self.by_agent.reserve_exact(FIRST_AGENTS);
            }
            self.by_agent.push(AgentSpent {
                agent: Arc::clone(agent),
                spent: Spent::default(),
            });
        }
        let last = self.by_agent.len() - 1;
        &mut self.by_agent[last].spent
    }
}

/// The room a ledger's first allocation makes for agents: as many entries as fit in 1,008
/// bytes, glibc's largest small request (11 of 88 bytes). A larger request (or a regrowth past
/// it) makes the allocator consolidate its fast bins, which costs every allocation of the run
/// after it; a tree of more agents regrows once.
const FIRST_AGENTS: usize = 1_008 / std::mem::size_of::<AgentSpent>();

impl Spent {
    fn add(&mut self, other: &Spent) {
        self.usage += other.usage;
        self.model_calls += other.model_calls;
        self.tool_calls += other.tool_calls;
        self.cost_micro_usd += other.cost_micro_usd;
    }

    fn add_model_call(&mut self, usage: Usage, cost_micro_usd: u64) {
        self.usage += usage;
        self.model_calls += 1;
        self.cost_micro_usd += cost_micro_usd;
    }
}

/// Which budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BudgetKind {
    /// [`BudgetLimits::max_input_tokens`].
    InputTokens,
    /// [`BudgetLimits::max_output_tokens`].
    OutputTokens,
    /// [`BudgetLimits::max_total_tokens`].
    TotalTokens,
    /// [`BudgetLimits::max_cost_micro_usd`].
    Cost,
    /// [`BudgetLimits::max_model_calls`].
    ModelCalls,
    /// [`BudgetLimits::max_tool_calls`].
    ToolCalls,
    /// [`BudgetLimits::max_wall_time`].
    WallTime,
}

impl BudgetKind {
    /// The [`BudgetLimits`] field that sets it.
    pub fn field(self) -> &'static str {
        match self {
            BudgetKind::InputTokens => "max_input_tokens",
            BudgetKind::OutputTokens => "max_output_tokens",
            BudgetKind::TotalTokens => "max_total_tokens",
            BudgetKind::Cost => "max_cost_micro_usd",
            BudgetKind::ModelCalls => "max_model_calls",
            BudgetKind::ToolCalls => "max_tool_calls",
            BudgetKind::WallTime => "max_wall_time",
        }
    }

    /// The unit its amounts are in.
    pub fn unit(self) -> &'static str {
        match self {
            BudgetKind::InputTokens | BudgetKind::OutputTokens | BudgetKind::TotalTokens => {
                "tokens"
            }
            BudgetKind::Cost => "millionths of a dollar",
            BudgetKind::ModelCalls => "model calls",
            BudgetKind::ToolCalls => "tool calls",
            BudgetKind::WallTime => "ms",
        }
    }
}

/// Whose budget: the whole run's, one agent's, or, shared beyond the run (see
/// [`crate::spending`]), the thread's or the tenant's for a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BudgetScope {
    /// [`Budgets::new`]'s limits.
    Run,
    /// [`Budgets::agent`]'s limits.
    Agent,
    /// The limits of the thread the run is a turn of, over all its turns.
    Thread,
    /// The limits of the tenant the thread belongs to, over one period of all its threads.
    Tenant {
        /// The UTC day or month counted.
        period: crate::spending::BudgetPeriod,
    },
}

impl fmt::Display for BudgetScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BudgetScope::Run => "the run's",
            BudgetScope::Agent => "the agent's own",
            BudgetScope::Thread => "the thread's",
            BudgetScope::Tenant {
                period: crate::spending::BudgetPeriod::Day,
            } => "the tenant's daily",
            BudgetScope::Tenant {
                period: crate::spending::BudgetPeriod::Month,
            } => "the tenant's monthly",
        })
    }
}

/// The next call of a run would have crossed one of its [`Budgets`]; the run stopped before
/// making it, keeping what it had recorded. Serializable: a refusal made where the call runs (a
/// Temporal worker's model activity) reaches the run that asked as this same value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error(
    "budget exceeded: {scope} {} budget is {limit} {}, and the next call of agent '{agent}' would \
     reach {would_reach}; the run stopped before making it and kept what it recorded. Raise \
     BudgetLimits::{} if the run needs more",
    budget.field(),
    budget.unit(),
    budget.field()
)]
pub struct BudgetExceeded {
    /// Which budget.
    pub budget: BudgetKind,
    /// The run's or the agent's.
    pub scope: BudgetScope,
    /// The agent whose call was refused.
    pub agent: Arc<str>,
    /// The budget, in [`BudgetKind::unit`]s.
    pub limit: u64,
    /// What the call would have brought the spending to (for wall time: the time elapsed).
    pub would_reach: u64,
}

/// Why a budget check refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// A budget would be crossed.
    #[error(transparent)]
    Exceeded(BudgetExceeded),
    /// The run has a money budget but no price for the model an agent calls.
    #[error(
        "agent '{agent}' calls model '{model}', which has no price in the run's budgets, and \
         the run has a money budget; add it with Budgets::price(\"{model}\", ModelPrice::...)"
    )]
    Unpriced {
        /// The agent.
        agent: Arc<str>,
        /// The model without a price.
        model: Arc<str>,
    },
    /// The store that keeps the spending shared beyond the run (per thread, per tenant)
    /// could not be read or written; the call was not made.
    #[error(
        "agent '{agent}' could not check its thread's and tenant's budgets: {message}; the call \
         was not made. Check the spending store's database"
    )]
    Unavailable {
        /// The agent.
        agent: Arc<str>,
        /// What failed.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledgers_first_allocation_stays_a_small_request() {
        const { assert!(FIRST_AGENTS >= 8) };
        const { assert!(FIRST_AGENTS * std::mem::size_of::<AgentSpent>() <= 1_008) };
        let mut ledger = BudgetLedger::default();
        ledger.add_model_call(&"a".into(), Usage::new(1, 1), 0);
        assert_eq!(ledger.by_agent.capacity(), FIRST_AGENTS);
    }

    #[test]
    fn the_checks_common_path_passes_a_call_only_when_the_full_check_does() {
        let limits = [
            BudgetLimits::default().max_model_calls(3),
            BudgetLimits::default().max_input_tokens(100),
            BudgetLimits::default().max_output_tokens(10),
            BudgetLimits::default().max_total_tokens(105),
            BudgetLimits::default().max_wall_time(Duration::from_secs(5)),
            BudgetLimits::default()
                .max_model_calls(2)
                .max_total_tokens(60),
            BudgetLimits::default().max_tool_calls(1),
        ];
        for limits in limits {
            let budgets = Budgets::new(limits);
            for calls in 0..5 {
                for tokens in [0, 40, 60, 95, 100, 120] {
                    for secs in [0, 4, 5, 6] {
                        let mut ledger = BudgetLedger::default();
                        for _ in 0..calls {
                            ledger.add_model_call(&"a".into(), Usage::new(tokens / 4, 1), 0);
                        }
                        let estimate = Usage::new(tokens / 2, 5);
                        let elapsed = Duration::from_secs(secs);
                        let full = budgets
                            .check_model_call(&ledger, "a", "m", estimate, elapsed)
                            .is_ok();
                        let t = &ledger.total;
                        let clear = budgets.clear_caps().clear(
                            (t.usage.input_tokens, t.usage.output_tokens, t.model_calls),
                            (estimate.input_tokens, estimate.output_tokens),
                            elapsed,
                        );
                        assert_eq!(clear, full, "{limits:?}, {calls} calls, {tokens}, {secs}s");
                    }
                }
            }
        }
        // With a price table, a money limit or an agent's own limits it does not decide.
        let priced = Budgets::new(BudgetLimits::default().max_model_calls(9))
            .price("m", ModelPrice::per_million_tokens(1.0, 1.0));
        let money = Budgets::new(BudgetLimits::default().max_cost_usd(1.0));
        let own = Budgets::new(BudgetLimits::default().max_model_calls(9))
            .agent("a", BudgetLimits::default().max_model_calls(1));
        for budgets in [priced, money, own] {
            let caps = budgets.clear_caps();
            assert!(!caps.clear((0, 0, 0), (1, 1), Duration::ZERO));
        }
    }
}
