//! [`match_trajectory`]: the steps a turn took against the expected ones.

use std::collections::BTreeSet;

use serde_json::Value;

use super::Score;
use crate::set::{ArgsMatch, ExpectedStep, MatchMode, StepKind, TrajectoryExpectation};
use crate::trajectory::{Step, Trajectory};

/// Whether `expected` is a JSON subset of `actual`: every key of an expected object is in the
/// actual one with a subset value, arrays have the same length with subset elements, numbers
/// are equal as numbers (`39` and `39.0`), other values are equal.
///
/// ```
/// use agentweave_eval::criteria::json_subset;
/// use serde_json::json;
/// assert!(json_subset(&json!({"order_id": 42}), &json!({"order_id": 42, "amount_eur": 39.0})));
/// assert!(!json_subset(&json!({"order_id": 43}), &json!({"order_id": 42})));
/// ```
pub fn json_subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, ve)| a.get(k).is_some_and(|va| json_subset(ve, va))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(ve, va)| json_subset(ve, va))
        }
        (Value::Number(e), Value::Number(a)) => e == a || e.as_f64() == a.as_f64(),
        (e, a) => e == a,
    }
}

/// Equal JSON, numbers compared as numbers.
fn json_equal(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len()
                && e.iter()
                    .all(|(k, ve)| a.get(k).is_some_and(|va| json_equal(ve, va)))
        }
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(ve, va)| json_equal(ve, va))
        }
        (Value::Number(e), Value::Number(a)) => e == a || e.as_f64() == a.as_f64(),
        (e, a) => e == a,
    }
}

fn names(expected: &str, name: &str, run_path: &str) -> bool {
    if expected.contains('/') {
        expected == run_path
    } else {
        expected == name
    }
}

fn step_kind(step: &Step) -> StepKind {
    match step {
        Step::Agent { .. } => StepKind::Agent,
        Step::Tool { .. } => StepKind::Tool,
        Step::Transfer { .. } => StepKind::Transfer,
    }
}

fn step_matches(expected: &ExpectedStep, actual: &Step, args: ArgsMatch) -> bool {
    match actual {
        Step::Agent { agent, run_path } => {
            expected.tool.is_none()
                && expected.transfer.is_none()
                && expected
                    .agent
                    .as_deref()
                    .is_some_and(|e| names(e, agent, run_path))
        }
        Step::Tool {
            tool,
            arguments,
            agent,
            run_path,
        } => {
            expected.tool.as_deref() == Some(tool.as_str())
                && expected
                    .agent
                    .as_deref()
                    .map_or(true, |e| names(e, agent, run_path))
                && match (&expected.args, args) {
                    (None, _) | (_, ArgsMatch::Ignore) => true,
                    (Some(e), ArgsMatch::Exact) => json_equal(e, arguments),
                    (Some(e), ArgsMatch::Subset) => json_subset(e, arguments),
                }
        }
        Step::Transfer { from, to, run_path } => {
            expected.transfer.as_deref() == Some(to.as_str())
                && expected
                    .from
                    .as_deref()
                    .map_or(true, |e| names(e, from, run_path))
        }
    }
}

fn describe_expected(step: &ExpectedStep) -> String {
    match (&step.tool, &step.transfer, &step.agent) {
        (Some(tool), _, by) => {
            let mut s = format!("tool {tool}");
            if let Some(args) = &step.args {
                s.push_str(&format!(" {args}"));
            }
            if let Some(by) = by {
                s.push_str(&format!(" (by {by})"));
            }
            s
        }
        (None, Some(to), _) => match &step.from {
            Some(from) => format!("transfer {from} -> {to}"),
            None => format!("transfer -> {to}"),
        },
        (None, None, Some(agent)) => format!("agent {agent}"),
        (None, None, None) => "(empty step)".into(),
    }
}

/// Kuhn's augmenting paths: can expected `e` take an actual step, moving others if needed?
fn augment(e: usize, edges: &[Vec<usize>], seen: &mut [bool], owner: &mut [Option<usize>]) -> bool {
    for &a in &edges[e] {
        if seen[a] {
            continue;
        }
        seen[a] = true;
        if owner[a].map_or(true, |other| augment(other, edges, seen, owner)) {
            owner[a] = Some(e);
            return true;
        }
    }
    false
}

/// Matches `actual` against the expectation, returning a score (the share of expected steps
/// matched; for `exact`, 0 unless all line up) and a reason naming the first step that did not
/// match and listing the steps taken.
///
/// Only the kinds of step the expectation lists are compared (agents, tool calls,
/// transfers); an empty list compares tool calls, so it expects none.
pub fn match_trajectory(expect: &TrajectoryExpectation, actual: &Trajectory) -> Score {
    let mut kinds: BTreeSet<StepKind> = expect.steps.iter().filter_map(|s| s.kind().ok()).collect();
    if kinds.is_empty() {
        kinds.insert(StepKind::Tool);
    }
    let taken: Vec<&Step> = actual
        .steps
        .iter()
        .filter(|s| kinds.contains(&step_kind(s)))
        .collect();
    let taken_text = if taken.is_empty() {
        "none".to_owned()
    } else {
        taken
            .iter()
            .map(|s| s.describe())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let criterion = match expect.mode {
        MatchMode::Exact => "trajectory (exact)",
        MatchMode::InOrder => "trajectory (in order)",
        MatchMode::AnyOrder => "trajectory (any order)",
    };
    let expected = &expect.steps;
    let total = expected.len().max(1) as f64;
    let (matched, problem) = match expect.mode {
        MatchMode::Exact => {
            let mut problem = None;
            for (i, e) in expected.iter().enumerate() {
                match taken.get(i) {
                    Some(a) if step_matches(e, a, expect.args) => {}
                    Some(a) => {
                        problem = Some(format!(
                            "step {}: expected `{}`, got `{}`",
                            i + 1,
                            describe_expected(e),
                            a.describe()
                        ));
                        break;
                    }
                    None => {
                        problem = Some(format!(
                            "step {}: expected `{}`, but only {} steps were taken",
                            i + 1,
                            describe_expected(e),
                            taken.len()
                        ));
                        break;
                    }
                }
            }
            if problem.is_none() && taken.len() > expected.len() {
                problem = Some(format!(
                    "{} steps expected, {} taken; the first extra one is `{}`",
                    expected.len(),
                    taken.len(),
                    taken[expected.len()].describe()
                ));
            }
            let matched = if problem.is_none() { expected.len() } else { 0 };
            (matched, problem)
        }
        MatchMode::InOrder => {
            let mut next = 0;
            let mut matched = 0;
            let mut problem = None;
            for e in expected {
                match taken[next..]
                    .iter()
                    .position(|a| step_matches(e, a, expect.args))
                {
                    Some(at) => {
                        next += at + 1;
                        matched += 1;
                    }
                    None => {
                        if problem.is_none() {
                            problem = Some(format!(
                                "`{}` was not taken{}",
                                describe_expected(e),
                                if matched > 0 {
                                    " after the steps matched before it"
                                } else {
                                    ""
                                }
                            ));
                        }
                    }
                }
            }
            (matched, problem)
        }
        MatchMode::AnyOrder => {
            let edges: Vec<Vec<usize>> = expected
                .iter()
                .map(|e| {
                    (0..taken.len())
                        .filter(|&a| step_matches(e, taken[a], expect.args))
                        .collect()
                })
                .collect();
            let mut owner = vec![None; taken.len()];
            let mut missing = Vec::new();
            let mut matched = 0;
            for (e, step) in expected.iter().enumerate() {
                let mut seen = vec![false; taken.len()];
                if augment(e, &edges, &mut seen, &mut owner) {
                    matched += 1;
                } else {
                    missing.push(describe_expected(step));
                }
            }
            let problem =
                (!missing.is_empty()).then(|| format!("not taken: `{}`", missing.join("`, `")));
            (matched, problem)
        }
    };
    match problem {
        None => {
            let score = if expected.is_empty() && !taken.is_empty() {
                0.0
            } else {
                1.0
            };
            Score::new(
                criterion,
                score,
                score == 1.0,
                format!("all {} expected steps taken: {taken_text}", expected.len()),
            )
        }
        Some(problem) => Score::new(
            criterion,
            matched as f64 / total,
            false,
            format!("{problem}; steps taken: {taken_text}"),
        ),
    }
}
