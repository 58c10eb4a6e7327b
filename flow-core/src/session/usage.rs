//! The run's token usage, kept among the session values (see [`crate::usage`]).

use super::Session;
use crate::budget::BudgetLedger;
use crate::usage::{Usage, UsageReport, USAGE_SESSION_KEY};

impl Session {
    /// The token usage of this run so far (empty if no model reported any). See
    /// [`UsageReport`].
    pub fn usage(&self) -> UsageReport {
        self.value::<UsageReport>(USAGE_SESSION_KEY)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Adds one model call's usage to the run's report.
    pub fn add_usage(&self, agent: &str, model: &str, usage: Usage) {
        self.update_value(USAGE_SESSION_KEY, |old| {
            let mut report: UsageReport = old
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            report.add(agent, model, usage);
            serde_json::to_value(report).unwrap_or_default()
        });
    }

    /// What this run has spent against its budgets (empty if it has none; see
    /// [`crate::budget`]).
    pub fn budget_ledger(&self) -> BudgetLedger {
        self.with_budget_ledger(|ledger| {
            ledger.merge();
            ledger.clone()
        })
    }
}
