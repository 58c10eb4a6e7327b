//! Shared spending: budgets that outlive one run, per thread and per tenant per period (a UTC
//! day, a UTC month), held by a store that every runner and server process on it shares.
//!
//! The engine knows only the contract, [`SpendingGate`]: before each model call it asks the
//! gate to **reserve** the call's estimate (its input tokens estimated, its output bounded by
//! the request's `max_tokens`, one model call, their cost per the gate's price table); the gate
//! checks and charges in one atomic step, so two processes cannot both pass a limit that only
//! one call fits under. After the reply the engine **settles** the reservation with the usage
//! the model reported (or gives it back when the call failed), and the gate records the call
//! in its usage report. A refused reservation ends the run with the same
//! [`BudgetExceeded`](crate::budget::BudgetExceeded) as a run budget, its
//! [`BudgetScope`](crate::budget::BudgetScope) being [`Thread`](crate::budget::BudgetScope::Thread)
//! or [`Tenant`](crate::budget::BudgetScope::Tenant).
//!
//! **Once per call, where the call may run again.** A call made in a Temporal worker's model
//! activity carries a charge key ([`SpendingCall::charge`]: the workflow's and the activity's
//! ids, the same on every attempt): the store records the key in the transaction that charges,
//! so a retried attempt finds its reservation already made and the call is charged once.
//!
//! Only the model's own answers are charged: an answer a middleware gives in the model's
//! place (the journal's replay of a recovered turn, a cache) was charged when the model gave
//! it. The in-process runtime implements the gate over its spending stores
//! (`agentweave_runtime::store::SpendingStore`); a run with no gate pays one branch per model call.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::budget::{BudgetError, ModelPrice};
use crate::usage::Usage;

/// The period a tenant's budget is counted over, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetPeriod {
    /// One UTC calendar day (midnight to midnight).
    Day,
    /// One UTC calendar month.
    Month,
}

impl BudgetPeriod {
    /// The period's name: `day` or `month`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetPeriod::Day => "day",
            BudgetPeriod::Month => "month",
        }
    }

    /// The period holding `ms` (milliseconds since the Unix epoch), named by its first day:
    /// `2026-12-07` for a day, `2026-12` for a month.
    ///
    /// ```
    /// use agentweave_core::spending::BudgetPeriod;
    /// // 2026-12-07T04:34:00Z
    /// let at = 1_796_618_040_000;
    /// assert_eq!(BudgetPeriod::Day.label(at), "2026-12-07");
    /// assert_eq!(BudgetPeriod::Month.label(at), "2026-12");
    /// ```
    pub fn label(self, ms: u64) -> String {
        let (y, m, d) = civil_date(ms);
        match self {
            BudgetPeriod::Day => format!("{y:04}-{m:02}-{d:02}"),
            BudgetPeriod::Month => format!("{y:04}-{m:02}"),
        }
    }
}

/// The UTC calendar date (year, month, day) of `ms` milliseconds since the Unix epoch, in the
/// proleptic Gregorian calendar. A time past chrono's range (year 262,143) is read as its last
/// representable day.
///
/// ```
/// assert_eq!(agentweave_core::spending::civil_date(0), (1970, 1, 1));
/// assert_eq!(agentweave_core::spending::civil_date(951_782_400_000), (2000, 2, 29));
/// ```
pub fn civil_date(ms: u64) -> (i64, u32, u32) {
    use chrono::Datelike;
    let at = i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
    (i64::from(at.year()), at.month(), at.day())
}

/// One model call asking a [`SpendingGate`] for room.
#[derive(Debug, Clone, Copy)]
pub struct SpendingCall<'a> {
    /// The thread the run is a turn of (its conversation id), if it is one.
    pub thread: Option<&'a str>,
    /// The agent making the call.
    pub agent: &'a str,
    /// The model it calls.
    pub model: &'a str,
    /// Its estimate: input tokens as a context budget counts them, output at most the
    /// request's `max_tokens`.
    pub estimate: Usage,
    /// When it is made, on the run's host clock (ms since the Unix epoch): the periods it
    /// counts in.
    pub at_ms: u64,
    /// The call's charge key, when the call may be made again for the same charge (a Temporal
    /// model activity retried: its workflow and activity ids): the store records it with the
    /// charge, so a reservation under a key already charged charges nothing again and its
    /// settlement is applied once. `None` (a call in process): every reservation charges.
    pub charge: Option<&'a str>,
}

/// A reservation a [`SpendingGate`] made for one call, given back to
/// [`settle`](SpendingGate::settle) once the call has answered or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendingHold {
    /// The thread charged, if any.
    pub thread: Option<Arc<str>>,
    /// The tenant charged, if any.
    pub tenant: Option<Arc<str>>,
    /// The agent that made the call.
    pub agent: Arc<str>,
    /// The model it called.
    pub model: Arc<str>,
    /// The tokens reserved.
    pub reserved: Usage,
    /// The money reserved, in millionths of a dollar.
    pub reserved_cost_micro_usd: u64,
    /// When the reservation was made (its periods; ms since the Unix epoch).
    pub at_ms: u64,
    /// The call's charge key ([`SpendingCall::charge`]), if it has one.
    pub charge: Option<Arc<str>>,
}

/// Budgets shared beyond one run: checks and charges each model call atomically in a store
/// every process shares (see the [module docs](self)).
#[async_trait::async_trait]
pub trait SpendingGate: Send + Sync + std::fmt::Debug {
    /// Reserves `call`'s estimate in every scope it counts in, or refuses it
    /// ([`BudgetError::Exceeded`] naming the scope that would be crossed), all or nothing.
    async fn reserve(&self, call: SpendingCall<'_>) -> Result<SpendingHold, BudgetError>;

    /// Replaces reservation `hold` with what the call spent: `Some(usage)` of the model that
    /// answered (`model`), or `None` when the call failed (the reservation is given back).
    /// Never fails the run: a store error is logged.
    async fn settle(&self, hold: SpendingHold, spent: Option<(&str, Usage)>);

    /// The price of model `model` in the gate's table, if it has one.
    fn price(&self, model: &str) -> Option<ModelPrice>;
}
