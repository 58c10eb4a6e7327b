//! [`SpendingBudgets`]: budgets per thread and per tenant per period (a UTC day, a UTC month),
//! kept in a [`SpendingStore`] every runner and server process on it shares, and the usage
//! report written as model calls are charged. Set with
//! [`RunnerBuilder::spending`](crate::RunnerBuilder::spending); the engine asks the runner's
//! gate (`SpendingGuard`, the [`SpendingGate`] this file implements) around each model call of
//! a turn (see [`crate::spending`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::budget::{BudgetError, BudgetExceeded, BudgetLimits, BudgetScope, ModelPrice};
use crate::model::Usage;
use crate::spending::{BudgetPeriod, SpendingCall, SpendingGate, SpendingHold};
use crate::store::{QueueError, Spending, SpendingScope, SpendingStore, UsageRow};

/// The tenant recorded in the usage report for a call with no tenant (a run outside a
/// thread, or a thread the runner's [`tenant_of`](SpendingBudgets::tenant_of) does not map).
pub const NO_TENANT: &str = "_";

/// Maps a thread id to its tenant.
type TenantOf = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The limits of a thread or a tenant's period in [`SpendingBudgets`]: tokens, money and
/// model calls, counted over every run that spends in the scope. (Tool calls and wall time are
/// limits of one run, set with [`Budgets`](crate::budget::Budgets); they have no setter here.)
///
/// ```
/// use agentweave_runtime::SpendingLimits;
/// let limits = SpendingLimits::default()
///     .max_total_tokens(1_000_000)
///     .max_cost_usd(20.0)
///     .max_model_calls(500);
/// assert_eq!(limits.limits().max_model_calls, Some(500));
/// ```
///
/// A limit of one run does not compile here:
///
/// ```compile_fail
/// use agentweave_runtime::SpendingLimits;
/// let limits = SpendingLimits::default().max_tool_calls(5);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendingLimits(BudgetLimits);

impl SpendingLimits {
    /// Sets the most prompt tokens (cached ones included).
    pub fn max_input_tokens(self, tokens: u64) -> Self {
        SpendingLimits(self.0.max_input_tokens(tokens))
    }

    /// Sets the most reply tokens (reasoning ones included).
    pub fn max_output_tokens(self, tokens: u64) -> Self {
        SpendingLimits(self.0.max_output_tokens(tokens))
    }

    /// Sets the most input plus output tokens.
    pub fn max_total_tokens(self, tokens: u64) -> Self {
        SpendingLimits(self.0.max_total_tokens(tokens))
    }

    /// Sets the most money, in US dollars, per the price table (rounded down to a millionth).
    pub fn max_cost_usd(self, usd: f64) -> Self {
        SpendingLimits(self.0.max_cost_usd(usd))
    }

    /// Sets the most model calls.
    pub fn max_model_calls(self, calls: u64) -> Self {
        SpendingLimits(self.0.max_model_calls(calls))
    }

    /// These limits as a run's [`BudgetLimits`] (no tool-call or wall-time limit).
    pub fn limits(&self) -> &BudgetLimits {
        &self.0
    }
}

/// Budgets shared by every runner on one [`SpendingStore`]: per thread (over all its turns),
/// per tenant per UTC day and month (over all its threads), with the price table money
/// budgets read. Their limits are [`SpendingLimits`]: tokens, money and model calls (tool
/// calls and wall time are a run's, set with [`Budgets`](crate::budget::Budgets)). Every model call of a turn is
/// reserved before it is made and settled after (see [`crate::spending`]); a call that would
/// cross one ends the run with [`AgentError::BudgetExceeded`](crate::AgentError::BudgetExceeded),
/// its scope [`BudgetScope::Thread`] or [`BudgetScope::Tenant`]. Each call is also added to the
/// store's usage report (per tenant, day, flow, agent and model), with or without limits.
///
/// ```
/// use std::sync::Arc;
/// use agentweave_runtime::budget::ModelPrice;
/// use agentweave_runtime::spending::BudgetPeriod;
/// use agentweave_runtime::store::InMemoryRunQueue;
/// use agentweave_runtime::{SpendingBudgets, SpendingLimits};
/// let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
///     .thread(SpendingLimits::default().max_total_tokens(200_000))
///     .tenant(BudgetPeriod::Day, SpendingLimits::default().max_cost_usd(5.0))
///     .price("gpt-4o", ModelPrice::per_million_tokens(2.50, 10.00))
///     // Threads named `TENANT/...` belong to TENANT.
///     .tenant_of(|thread| thread.split_once('/').map(|(t, _)| t.to_owned()));
/// assert!(budgets.thread_limits().is_some());
/// ```
#[derive(Clone)]
pub struct SpendingBudgets {
    store: Arc<dyn SpendingStore>,
    thread: Option<BudgetLimits>,
    tenant: BTreeMap<BudgetPeriod, BudgetLimits>,
    prices: BTreeMap<Arc<str>, ModelPrice>,
    tenant_of: Option<TenantOf>,
    flow: Option<Arc<str>>,
}

impl fmt::Debug for SpendingBudgets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpendingBudgets")
            .field("thread", &self.thread)
            .field("tenant", &self.tenant)
            .field("prices", &self.prices)
            .field("tenant_of", &self.tenant_of.is_some())
            .field("flow", &self.flow)
            .finish()
    }
}

impl SpendingBudgets {
    /// No limits yet, kept in `store` (a run queue that keeps spending: the in-memory, SQLite
    /// or PostgreSQL queue). With no limit set, calls are only added to the usage report.
    pub fn new(store: Arc<dyn SpendingStore>) -> Self {
        SpendingBudgets {
            store,
            thread: None,
            tenant: BTreeMap::new(),
            prices: BTreeMap::new(),
            tenant_of: None,
            flow: None,
        }
    }

    /// Sets the limits of each thread, over all its turns.
    pub fn thread(mut self, limits: SpendingLimits) -> Self {
        self.thread = Some(limits.0);
        self
    }

    /// Sets the limits of each tenant over each `period` (UTC), over all its threads.
    pub fn tenant(mut self, period: BudgetPeriod, limits: SpendingLimits) -> Self {
        self.tenant.insert(period, limits.0);
        self
    }

    /// Adds the price of model `model`, for money budgets and the usage report's cost.
    pub fn price(mut self, model: impl Into<Arc<str>>, price: ModelPrice) -> Self {
        self.prices.insert(model.into(), price);
        self
    }

    /// Sets how a thread id names its tenant (without it, no call has a tenant: tenant limits
    /// do not apply and the report names [`NO_TENANT`]). A server sets its own.
    pub fn tenant_of(mut self, f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.tenant_of = Some(Arc::new(f));
        self
    }

    /// Sets the flow name the usage report gives this runner's calls (default: the name of the
    /// runner's root agent).
    pub fn flow(mut self, name: impl Into<Arc<str>>) -> Self {
        self.flow = Some(name.into());
        self
    }

    /// The limits of each thread, if set.
    pub fn thread_limits(&self) -> Option<&BudgetLimits> {
        self.thread.as_ref()
    }

    /// The store the spending is kept in.
    pub fn store(&self) -> &Arc<dyn SpendingStore> {
        &self.store
    }

    /// What thread `thread` has spent over all its turns.
    pub async fn thread_spent(&self, thread: &str) -> Result<Spending, QueueError> {
        self.store.spent(&thread_key(thread)).await
    }

    /// What tenant `tenant` has spent in the `period` holding `at_ms` (ms since the Unix epoch).
    pub async fn tenant_spent(
        &self,
        tenant: &str,
        period: BudgetPeriod,
        at_ms: u64,
    ) -> Result<Spending, QueueError> {
        self.store.spent(&tenant_key(tenant, period, at_ms)).await
    }

    /// The [`SpendingGate`] over these budgets for the calls of flow `flow` (reported under
    /// this name unless [`flow`](Self::flow) set another): what a host that makes model calls
    /// outside a runner asks around each one, e.g. a Temporal worker's model activity, which
    /// reserves with a charge key ([`SpendingCall::charge`]) so a retried attempt charges once.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agentweave_runtime::model::Usage;
    /// use agentweave_runtime::spending::SpendingCall;
    /// use agentweave_runtime::store::InMemoryRunQueue;
    /// use agentweave_runtime::{SpendingBudgets, SpendingLimits};
    /// # futures::executor::block_on(async {
    /// let budgets = SpendingBudgets::new(Arc::new(InMemoryRunQueue::new()))
    ///     .thread(SpendingLimits::default().max_model_calls(1));
    /// let gate = budgets.gate("desk");
    /// let call = SpendingCall {
    ///     thread: Some("t1"),
    ///     agent: "clerk",
    ///     model: "m",
    ///     estimate: Usage::new(10, 1),
    ///     at_ms: 0,
    ///     charge: Some("wf-1/run-1/t0.0 clerk.model"),
    /// };
    /// let hold = gate.reserve(call).await.expect("the thread's one call");
    /// // The same call again (a retried attempt): nothing more is charged.
    /// let again = gate.reserve(call).await.expect("already reserved");
    /// gate.settle(hold, Some(("m", Usage::new(8, 1)))).await;
    /// gate.settle(again, Some(("m", Usage::new(8, 1)))).await;
    /// assert_eq!(budgets.thread_spent("t1").await.unwrap().model_calls, 1);
    /// assert_eq!(budgets.thread_spent("t1").await.unwrap().input_tokens, 8);
    /// # });
    /// ```
    pub fn gate(&self, flow: &str) -> Arc<dyn SpendingGate> {
        self.guard(flow)
    }

    /// The gate a runner of the flow `flow` gives its runs.
    pub(crate) fn guard(&self, flow: &str) -> Arc<SpendingGuard> {
        let flow = self.flow.clone().unwrap_or_else(|| flow.into());
        Arc::new(SpendingGuard {
            budgets: self.clone(),
            flow,
        })
    }

    /// The scopes a call on `thread` of `tenant` at `at_ms` counts in.
    fn scopes(&self, thread: Option<&str>, tenant: Option<&str>, at_ms: u64) -> Vec<SpendingScope> {
        let mut scopes = Vec::new();
        if let (Some(thread), Some(limits)) = (thread, self.thread) {
            scopes.push(SpendingScope {
                key: thread_key(thread),
                thread: Some(thread.to_owned()),
                scope: BudgetScope::Thread,
                limits,
            });
        }
        if let Some(tenant) = tenant {
            for (&period, &limits) in &self.tenant {
                scopes.push(SpendingScope {
                    key: tenant_key(tenant, period, at_ms),
                    thread: None,
                    scope: BudgetScope::Tenant { period },
                    limits,
                });
            }
        }
        scopes
    }

    fn cost(&self, model: &str, usage: &Usage) -> i64 {
        self.prices
            .get(model)
            .map_or(0, |p| p.cost_micro_usd(usage).min(i64::MAX as u64) as i64)
    }
}

/// The key of thread `thread`'s row.
fn thread_key(thread: &str) -> String {
    format!("thread:{thread}")
}

/// The key of tenant `tenant`'s row for the `period` holding `at_ms`.
fn tenant_key(tenant: &str, period: BudgetPeriod, at_ms: u64) -> String {
    format!(
        "tenant:{tenant}:{}:{}",
        period.as_str(),
        period.label(at_ms)
    )
}

fn signed(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

/// A runner's [`SpendingGate`]: its [`SpendingBudgets`] and the flow name its calls are
/// reported under.
#[derive(Debug)]
pub(crate) struct SpendingGuard {
    budgets: SpendingBudgets,
    flow: Arc<str>,
}

impl SpendingGuard {
    /// The store the spending is kept in.
    pub(crate) fn store(&self) -> &Arc<dyn SpendingStore> {
        &self.budgets.store
    }

    fn tenant(&self, thread: Option<&str>) -> Option<String> {
        let f = self.budgets.tenant_of.as_ref()?;
        f(thread?)
    }
}

#[async_trait::async_trait]
impl SpendingGate for SpendingGuard {
    async fn reserve(&self, call: SpendingCall<'_>) -> Result<SpendingHold, BudgetError> {
        let tenant = self.tenant(call.thread);
        let scopes = self
            .budgets
            .scopes(call.thread, tenant.as_deref(), call.at_ms);
        let priced = self.budgets.prices.contains_key(call.model);
        if !priced && scopes.iter().any(|s| s.limits.max_cost_micro_usd.is_some()) {
            return Err(BudgetError::Unpriced {
                agent: call.agent.into(),
                model: call.model.into(),
            });
        }
        let cost = self.budgets.cost(call.model, &call.estimate);
        let charge = Spending {
            input_tokens: signed(call.estimate.input_tokens),
            output_tokens: signed(call.estimate.output_tokens),
            cost_micro_usd: cost,
            model_calls: 1,
        };
        let unavailable = |e: QueueError| BudgetError::Unavailable {
            agent: call.agent.into(),
            message: e.to_string(),
        };
        let reserved = match call.charge {
            // Recorded even with no limit: the key makes the settlement (and the usage
            // report's row) happen once.
            Some(key) => {
                let day = BudgetPeriod::Day.label(call.at_ms);
                Some(
                    self.store()
                        .reserve_once(key, &day, &scopes, &charge)
                        .await
                        .map_err(unavailable)?
                        .map(|_| ()),
                )
            }
            None if scopes.is_empty() => None,
            None => Some(
                self.store()
                    .reserve(&scopes, &charge)
                    .await
                    .map_err(unavailable)?,
            ),
        };
        if let Some(Err(crossed)) = reserved {
            return Err(BudgetError::Exceeded(BudgetExceeded {
                budget: crossed.budget,
                scope: scopes[crossed.scope].scope,
                agent: call.agent.into(),
                limit: crossed.limit,
                would_reach: crossed.would_reach,
            }));
        }
        Ok(SpendingHold {
            thread: call.thread.map(Arc::from),
            tenant: tenant.map(Arc::from),
            agent: call.agent.into(),
            model: call.model.into(),
            reserved: call.estimate,
            reserved_cost_micro_usd: cost.max(0) as u64,
            at_ms: call.at_ms,
            charge: call.charge.map(Arc::from),
        })
    }

    async fn settle(&self, hold: SpendingHold, spent: Option<(&str, Usage)>) {
        let scopes =
            self.budgets
                .scopes(hold.thread.as_deref(), hold.tenant.as_deref(), hold.at_ms);
        let (actual, usage_row) = match spent {
            Some((model, usage)) => {
                let actual = Spending {
                    input_tokens: signed(usage.input_tokens),
                    output_tokens: signed(usage.output_tokens),
                    cost_micro_usd: self.budgets.cost(model, &usage),
                    model_calls: 1,
                };
                let row = UsageRow {
                    tenant: hold.tenant.as_deref().unwrap_or(NO_TENANT).to_owned(),
                    day: BudgetPeriod::Day.label(hold.at_ms),
                    flow: self.flow.to_string(),
                    agent: hold.agent.to_string(),
                    model: model.to_owned(),
                    spent: actual,
                };
                (actual, Some(row))
            }
            None => (Spending::default(), None),
        };
        let correction = Spending {
            input_tokens: actual.input_tokens - signed(hold.reserved.input_tokens),
            output_tokens: actual.output_tokens - signed(hold.reserved.output_tokens),
            cost_micro_usd: actual.cost_micro_usd - signed(hold.reserved_cost_micro_usd),
            model_calls: actual.model_calls - 1,
        };
        let keys: Vec<(String, Option<String>)> =
            scopes.into_iter().map(|s| (s.key, s.thread)).collect();
        let settled = match &hold.charge {
            Some(key) => self
                .store()
                .settle_once(key, &keys, &correction, usage_row.as_ref())
                .await
                .map(|_| ()),
            None => {
                self.store()
                    .settle(&keys, &correction, usage_row.as_ref())
                    .await
            }
        };
        if let Err(error) = settled {
            tracing::warn!(
                agent = %hold.agent,
                %error,
                "could not settle a model call's spending; the thread's and tenant's counts \
                 keep its estimate"
            );
        }
    }

    fn price(&self, model: &str) -> Option<ModelPrice> {
        self.budgets.prices.get(model).copied()
    }
}
