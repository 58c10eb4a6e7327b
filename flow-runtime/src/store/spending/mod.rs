//! Spending: what threads and tenants have spent on model calls, kept in the run queue's store
//! so every runner and server process on it shares the same numbers, and the usage report
//! written as calls are charged. [`SpendingStore`] is the contract; the queues that keep
//! spending answer it through [`RunQueue::spending`](crate::store::RunQueue::spending)
//! ([`InMemoryRunQueue`](crate::store::InMemoryRunQueue), and `SqliteRunQueue` and
//! `PostgresRunQueue` behind their features).
//!
//! - `memory.rs`: the spending of the in-memory queue, two maps under one lock;
//! - `sql.rs`: the tables `agentflow_spending` (one row per scope: a thread, or a tenant's
//!   day or month) and `agentflow_usage` (one row per tenant, day, flow, agent and model), and
//!   the SQL queues' implementation;
//! - this file: the contract, its types and the one rule of a check ([`crossed`]).
//!
//! **Check and charge is one step.** [`reserve`](SpendingStore::reserve) reads the rows of
//! every scope a call counts in under the store's write lock (`BEGIN IMMEDIATE` on SQLite,
//! `SELECT ... FOR UPDATE` in key order on PostgreSQL, one mutex in memory), and either adds the
//! call's estimate to all of them or to none: of two processes whose calls fit under a limit
//! only one at a time, one passes. [`settle`](SpendingStore::settle) then replaces the estimate
//! with what the model reported (a signed correction) and adds the call to the usage report.
//!
//! **Once per charge key.** A call that may be made again for the same charge (a Temporal
//! model activity, retried) reserves with [`reserve_once`](SpendingStore::reserve_once): the
//! store records the call's key in the step that charges (the table `agentflow_spending_charges`
//! on SQL), so another attempt under the same key charges nothing and
//! [`settle_once`](SpendingStore::settle_once) applies one settlement.

mod memory;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub(crate) use memory::InMemorySpending;

use super::QueueError;
use crate::budget::{BudgetKind, BudgetLimits, BudgetScope};

/// One scope a call counts in: its row's key, the thread it belongs to (so deleting the thread
/// deletes it), which budget it is, and its limits (only the token, money and model-call
/// limits of a [`BudgetLimits`] apply to a shared scope).
#[derive(Debug, Clone, PartialEq)]
pub struct SpendingScope {
    /// The row's key: `thread:ID`, `tenant:TENANT:day:2026-12-07`, `tenant:TENANT:month:2026-12`.
    pub key: String,
    /// The thread whose row it is (`None` for a tenant's).
    pub thread: Option<String>,
    /// Which budget it is, as a refusal names it.
    pub scope: BudgetScope,
    /// Its limits.
    pub limits: BudgetLimits,
}

/// What a scope has spent, or a change to it (signed: a settlement may give back part of an
/// estimate).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spending {
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Reply tokens.
    pub output_tokens: i64,
    /// Money, in millionths of a dollar.
    pub cost_micro_usd: i64,
    /// Model calls.
    pub model_calls: i64,
}

impl Spending {
    /// Input plus output tokens.
    pub fn total_tokens(&self) -> i64 {
        self.input_tokens + self.output_tokens
    }

    pub(crate) fn add(&mut self, other: &Spending) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_micro_usd += other.cost_micro_usd;
        self.model_calls += other.model_calls;
    }
}

/// A limit a reservation would cross: which scope (its index in the list given), which
/// budget, the limit and what the call would have brought the spending to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossed {
    /// The index of the scope in the list given to [`SpendingStore::reserve`].
    pub scope: usize,
    /// Which budget.
    pub budget: BudgetKind,
    /// The limit.
    pub limit: u64,
    /// What the call would have brought the spending to.
    pub would_reach: u64,
}

/// The first limit of `limits` that `spent` plus `charge` would cross, if any (the rule every
/// backend applies).
pub fn crossed(
    spent: &Spending,
    charge: &Spending,
    limits: &BudgetLimits,
) -> Option<(BudgetKind, u64, u64)> {
    let after = |a: i64, b: i64| (a + b).max(0) as u64;
    let checks = [
        (
            BudgetKind::ModelCalls,
            limits.max_model_calls,
            after(spent.model_calls, charge.model_calls),
        ),
        (
            BudgetKind::InputTokens,
            limits.max_input_tokens,
            after(spent.input_tokens, charge.input_tokens),
        ),
        (
            BudgetKind::OutputTokens,
            limits.max_output_tokens,
            after(spent.output_tokens, charge.output_tokens),
        ),
        (
            BudgetKind::TotalTokens,
            limits.max_total_tokens,
            after(spent.total_tokens(), charge.total_tokens()),
        ),
        (
            BudgetKind::Cost,
            limits.max_cost_micro_usd,
            after(spent.cost_micro_usd, charge.cost_micro_usd),
        ),
    ];
    checks
        .into_iter()
        .find_map(|(kind, limit, reach)| limit.filter(|l| reach > *l).map(|l| (kind, l, reach)))
}

/// One row of the usage report: what one agent of one flow of one tenant spent on one model
/// in one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRow {
    /// The tenant.
    pub tenant: String,
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// The flow (the runner's root agent, or the name a server serves it under).
    pub flow: String,
    /// The agent that made the calls.
    pub agent: String,
    /// The model that answered.
    pub model: String,
    /// What the calls spent.
    #[serde(flatten)]
    pub spent: Spending,
}

/// Which rows of the usage report to read: one tenant's (or every tenant's), days from `from`
/// to `to` (both included, `YYYY-MM-DD`), one flow and one agent if given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UsageFilter {
    /// The tenant (`None`: every tenant, for an administrator).
    pub tenant: Option<String>,
    /// The first day.
    pub from: Option<String>,
    /// The last day.
    pub to: Option<String>,
    /// Only this flow's.
    pub flow: Option<String>,
    /// Only this agent's.
    pub agent: Option<String>,
}

impl UsageFilter {
    pub(crate) fn matches(&self, row: &UsageRow) -> bool {
        self.tenant.as_ref().map_or(true, |t| *t == row.tenant)
            && self.from.as_ref().map_or(true, |d| row.day >= *d)
            && self.to.as_ref().map_or(true, |d| row.day <= *d)
            && self.flow.as_ref().map_or(true, |f| *f == row.flow)
            && self.agent.as_ref().map_or(true, |a| *a == row.agent)
    }
}

/// Spending shared by every process on one store (see the module's guide).
///
/// ```
/// use agentweave_runtime::budget::{BudgetLimits, BudgetScope};
/// use agentweave_runtime::store::{InMemoryRunQueue, RunQueue, Spending, SpendingScope};
/// # futures::executor::block_on(async {
/// let queue = InMemoryRunQueue::new();
/// let spending = queue.spending().expect("the in-memory queue keeps spending");
/// let thread = SpendingScope {
///     key: "thread:t1".into(),
///     thread: Some("t1".into()),
///     scope: BudgetScope::Thread,
///     limits: BudgetLimits::default().max_model_calls(1),
/// };
/// let call = Spending { model_calls: 1, ..Spending::default() };
/// assert!(spending.reserve(&[thread.clone()], &call).await.unwrap().is_ok());
/// // The thread's one call is spent: the next is refused, and nothing is charged.
/// assert!(spending.reserve(&[thread], &call).await.unwrap().is_err());
/// assert_eq!(spending.spent("thread:t1").await.unwrap().model_calls, 1);
/// # });
/// ```
#[async_trait]
pub trait SpendingStore: Send + Sync {
    /// Adds `charge` to every scope of `scopes` if none of them would cross a limit, in one
    /// atomic step; else adds nothing and answers the first limit crossed.
    async fn reserve(
        &self,
        scopes: &[SpendingScope],
        charge: &Spending,
    ) -> Result<Result<(), Crossed>, QueueError>;

    /// Adds `correction` (signed) to the rows `keys` (each a scope's key, with its thread), and
    /// `usage` to the usage report, in one step.
    async fn settle(
        &self,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<(), QueueError>;

    /// [`reserve`](Self::reserve) once per charge key `charge` (a call that may be made again
    /// for the same charge: a Temporal model activity retried; see
    /// [`SpendingCall::charge`](crate::spending::SpendingCall::charge)): the key is recorded
    /// in the same atomic step as the charge, with `day` (`YYYY-MM-DD`, for
    /// [`trim_usage`](Self::trim_usage)). Answers `Ok(true)` when it charged now, `Ok(false)`
    /// when the key was charged before (nothing is charged again, nothing is checked), or the
    /// first limit crossed (nothing charged, the key not recorded).
    async fn reserve_once(
        &self,
        charge: &str,
        day: &str,
        scopes: &[SpendingScope],
        spending: &Spending,
    ) -> Result<Result<bool, Crossed>, QueueError>;

    /// [`settle`](Self::settle) once per charge key `charge` reserved with
    /// [`reserve_once`](Self::reserve_once): applied only while the key's reservation is
    /// open. With `usage` (the call answered) the key is then marked settled, so a later
    /// attempt of the same call charges nothing; without it (the call failed) the reservation
    /// is given back and the key forgotten, so another attempt reserves again. Answers whether
    /// it was applied.
    async fn settle_once(
        &self,
        charge: &str,
        keys: &[(String, Option<String>)],
        correction: &Spending,
        usage: Option<&UsageRow>,
    ) -> Result<bool, QueueError>;

    /// What the scope keyed `key` has spent (zero if it has no row).
    async fn spent(&self, key: &str) -> Result<Spending, QueueError>;

    /// Deletes the rows of thread `thread`; answers how many there were.
    async fn delete_thread(&self, thread: &str) -> Result<u64, QueueError>;

    /// At most `limit` rows of the usage report `filter` selects, after `offset` of them,
    /// by day, tenant, flow, agent and model.
    async fn usage(
        &self,
        filter: &UsageFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<UsageRow>, QueueError>;

    /// How many rows of the usage report `filter` selects.
    async fn count_usage(&self, filter: &UsageFilter) -> Result<u64, QueueError>;

    /// Deletes the usage report's rows of the days before `first_kept` (`YYYY-MM-DD`), every
    /// tenant's, and the charge keys of those days ([`reserve_once`](Self::reserve_once));
    /// answers how many report rows there were. The scopes' spending (what budgets count) is
    /// not touched. [`usage_kept_from`] gives the first day a retention of some days keeps; a
    /// server's queue sweeper calls this with it
    /// (`QueueOptions::usage_retention_days` in `agentweave-server`).
    async fn trim_usage(&self, first_kept: &str) -> Result<u64, QueueError>;
}

/// The first UTC day (`YYYY-MM-DD`) a usage retention of `days` days keeps at `now_ms`
/// (milliseconds since the Unix epoch): today and the `days - 1` days before it (a retention
/// of 0 days keeps today's rows too, since they are still being written).
///
/// ```
/// use agentweave_runtime::store::usage_kept_from;
/// let dec_7 = 1_796_601_600_000 + 3_600_000; // 2026-12-07 01:00 UTC
/// assert_eq!(usage_kept_from(dec_7, 1), "2026-12-07");
/// assert_eq!(usage_kept_from(dec_7, 30), "2026-11-08");
/// ```
pub fn usage_kept_from(now_ms: u64, days: u32) -> String {
    let back = u64::from(days.saturating_sub(1)) * 86_400_000;
    crate::budget::BudgetPeriod::Day.label(now_ms.saturating_sub(back))
}
