//! What an eval run found ([`Report`], down to each turn's events, trajectory and scores) and
//! its forms:
//!
//! - `table.rs`: [`Report::table`], a terminal table;
//! - `junit.rs`: [`Report::junit_xml`], JUnit XML for CI systems;
//! - `html.rs`: [`Report::html`], one page per run: each case's conversation, trajectory
//!   (drawn on the flow's picture) and scores with their reasons;
//! - JSON: a `Report` serialises with serde ([`Report::to_json`]).

mod html;
mod junit;
mod table;

use agentweave_runtime::EventJson;
use serde::{Deserialize, Serialize};

use crate::criteria::Score;
use crate::trajectory::{Metrics, Trajectory};

/// One turn of a run: what the user said, what came back, what it did and how it scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnResult {
    /// The user's message.
    pub user: String,
    /// The flow's final answer, if it gave one.
    pub answer: Option<String>,
    /// The turn's events, in their JSON form.
    pub events: Vec<EventJson>,
    /// The steps it took.
    pub trajectory: Trajectory,
    /// What it cost.
    pub metrics: Metrics,
    /// The verdicts of its expectations (and of the runner's own criteria).
    pub scores: Vec<Score>,
    /// Why the turn failed to run, if it did (an error event, a thread error).
    pub error: Option<String>,
}

/// One run of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The turns, in order.
    pub turns: Vec<TurnResult>,
    /// The verdicts of the case's own expectations (on the whole conversation).
    pub case_scores: Vec<Score>,
    /// Why the run could not be carried out or replayed, if so (a cassette error, a replay
    /// mismatch, a turn that failed).
    pub error: Option<String>,
    /// Whether every score passed and nothing failed.
    pub passed: bool,
}

impl RunResult {
    /// Every score of the run, turns first.
    pub fn scores(&self) -> impl Iterator<Item = &Score> {
        self.turns
            .iter()
            .flat_map(|t| &t.scores)
            .chain(&self.case_scores)
    }
}

/// A case's result over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case's id.
    pub id: String,
    /// What it checks.
    pub description: String,
    /// Its runs.
    pub runs: Vec<RunResult>,
    /// How many runs passed.
    pub passes: u32,
    /// The share of runs that passed.
    pub pass_rate: f64,
    /// The 95% Wilson score interval of the pass rate.
    pub interval: (f64, f64),
    /// The least pass rate for the case to pass.
    pub threshold: f64,
    /// Whether the pass rate reached the threshold.
    pub passed: bool,
}

/// The flow an eval ran against: its shape and picture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowPicture {
    /// The tree's shape, e.g. `triage(refund,complaint)`.
    pub shape: String,
    /// Its SVG drawing ([`FlowAgent::to_svg`](agentweave_runtime::FlowAgent::to_svg)).
    pub svg: String,
}

/// What an eval run of a set found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The set's name.
    pub set: String,
    /// The flow, as built for the first case.
    pub flow: Option<FlowPicture>,
    /// Each case's result, in the set's order.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// Whether every case passed.
    pub fn passed(&self) -> bool {
        self.cases.iter().all(|c| c.passed)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serialises")
    }

    /// The case named `id`.
    pub fn case(&self, id: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.id == id)
    }
}

/// The 95% Wilson score interval of `passes` successes in `runs` trials.
///
/// ```
/// use agentweave_eval::report::wilson_interval;
/// let (low, high) = wilson_interval(8, 10);
/// assert!((low - 0.490).abs() < 0.001 && (high - 0.943).abs() < 0.001);
/// assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
/// ```
pub fn wilson_interval(passes: u32, runs: u32) -> (f64, f64) {
    if runs == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n = f64::from(runs);
    let p = f64::from(passes) / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((center - half).max(0.0), (center + half).min(1.0))
}
