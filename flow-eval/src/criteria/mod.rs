//! Criteria: each looks at a turn (or a whole case) and returns a [`Score`] with a reason.
//!
//! - `trajectory.rs`: [`match_trajectory`], the agents, tool calls and transfers against the
//!   expected steps (modes exact, in order, any order; arguments exact, subset or ignored).
//! - `response.rs`: [`check_response`], the final answer: exact, contains, regex, ROUGE-L,
//!   JSON Schema.
//! - `judge.rs`: [`Judge`], an LLM judge with a rubric through any `ChatModel`.
//! - `budget.rs`: [`check_budget`], tokens, model calls, tool calls, transfers, wall time.
//!
//! A [`Criterion`] of your own plugs into the runner beside them
//! ([`EvalRunner::criterion`](crate::runner::EvalRunner::criterion)).

mod budget;
mod judge;
mod response;
mod trajectory;

pub use budget::check_budget;
pub use judge::{Judge, DEFAULT_JUDGE_PROMPT};
pub use response::{check_response, rouge_l};
pub use trajectory::{json_subset, match_trajectory};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::trajectory::{Metrics, Trajectory};

/// A criterion's verdict: a score from 0 to 1, whether it passed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The criterion, e.g. `trajectory`, `response contains`, `judge`.
    pub criterion: String,
    /// From 0 (worst) to 1 (best).
    pub score: f64,
    /// Whether it passed.
    pub passed: bool,
    /// Why, in words (for a judge: its reasoning).
    pub reason: String,
}

impl Score {
    /// A passed or failed score with its reason.
    pub fn new(
        criterion: impl Into<String>,
        score: f64,
        passed: bool,
        reason: impl Into<String>,
    ) -> Self {
        Score {
            criterion: criterion.into(),
            score,
            passed,
            reason: reason.into(),
        }
    }

    /// A failure scored 0.
    pub fn fail(criterion: impl Into<String>, reason: impl Into<String>) -> Self {
        Score::new(criterion, 0.0, false, reason)
    }
}

/// One exchange of a conversation: what the user said, what the flow answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The user's message.
    pub user: String,
    /// The flow's final answer to it, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// What a criterion looks at: a turn (or a whole case) once it ran.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The conversation so far, this turn last.
    pub conversation: &'a [Exchange],
    /// The final answer being judged.
    pub response: Option<&'a str>,
    /// The steps it took.
    pub trajectory: &'a Trajectory,
    /// What it cost.
    pub metrics: &'a Metrics,
}

/// A check of your own, run on every turn beside the expectations of the eval set.
#[async_trait]
pub trait Criterion: Send + Sync + 'static {
    /// The criterion's name, as reports show it.
    fn name(&self) -> String;

    /// The verdict on `subject`.
    async fn evaluate(&self, subject: &Subject<'_>) -> Score;
}
