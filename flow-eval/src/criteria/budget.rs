//! [`check_budget`]: what a turn cost against its limits.

use super::Score;
use crate::set::Budget;
use crate::trajectory::Metrics;

/// Checks `metrics` against `budget`: passed (score 1) when every set limit holds; else
/// failed, scored by the share of limits that held, the reason naming each one exceeded.
///
/// ```
/// use agentweave_eval::criteria::check_budget;
/// use agentweave_eval::set::Budget;
/// use agentweave_eval::trajectory::Metrics;
/// let spent = Metrics { model_calls: 4, tool_calls: 1, ..Default::default() };
/// let budget = Budget { max_model_calls: Some(3), max_tool_calls: Some(2), ..Default::default() };
/// let score = check_budget(&budget, &spent);
/// assert!(!score.passed);
/// assert_eq!(score.reason, "model calls 4 > 3");
/// ```
pub fn check_budget(budget: &Budget, metrics: &Metrics) -> Score {
    let limits = [
        ("tokens", budget.max_tokens, metrics.usage.total_tokens()),
        ("model calls", budget.max_model_calls, metrics.model_calls),
        ("tool calls", budget.max_tool_calls, metrics.tool_calls),
        ("transfers", budget.max_transfers, metrics.transfers),
        ("wall ms", budget.max_wall_ms, metrics.wall_ms),
    ];
    let mut set = 0;
    let mut over = Vec::new();
    let mut within = Vec::new();
    for (what, limit, spent) in limits {
        let Some(limit) = limit else { continue };
        set += 1;
        if spent > limit {
            over.push(format!("{what} {spent} > {limit}"));
        } else {
            within.push(format!("{what} {spent} <= {limit}"));
        }
    }
    if over.is_empty() {
        let reason = if within.is_empty() {
            "no limits set".to_owned()
        } else {
            within.join(", ")
        };
        Score::new("budget", 1.0, true, reason)
    } else {
        let score = (set - over.len()) as f64 / set as f64;
        Score::new("budget", score, false, over.join(", "))
    }
}
