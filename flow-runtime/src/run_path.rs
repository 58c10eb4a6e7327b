//! Run paths: where in a run an event came from.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One step of a [`RunPath`]: the agent that ran.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunStep {
    agent_name: Arc<str>,
}

impl RunStep {
    /// A step for the named agent.
    pub fn new(agent_name: impl Into<Arc<str>>) -> Self {
        RunStep {
            agent_name: agent_name.into(),
        }
    }

    /// The agent that ran at this step.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }
}

impl fmt::Display for RunStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.agent_name)
    }
}

/// The chain of agents from the root of a run to an event's source.
///
/// It records hops, not the tree: the root runs at `[root]`; a transfer from an agent at path
/// `P` to `Y` runs `Y` at `P + [Y]`, so `A -> B -> A -> C` runs `C` at `A/B/A/C`. The framework
/// sets an event's run path exactly once, where the event is first seen; user code only reads
/// it. Cloning is cheap (the steps are shared).
///
/// ```
/// use flow_runtime::RunPath;
/// let p = RunPath::root("triage").child("refund");
/// assert_eq!(p.to_string(), "triage/refund");
/// assert_eq!(p.len(), 2);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunPath {
    steps: Arc<[RunStep]>,
}

impl RunPath {
    /// The path of a run's root agent.
    pub fn root(agent_name: impl Into<Arc<str>>) -> Self {
        RunPath {
            steps: Arc::from([RunStep::new(agent_name)]),
        }
    }

    /// A path from explicit steps.
    pub fn from_steps(steps: impl IntoIterator<Item = RunStep>) -> Self {
        RunPath {
            steps: steps.into_iter().collect(),
        }
    }

    /// This path extended by one agent.
    pub fn child(&self, agent_name: impl Into<Arc<str>>) -> Self {
        // An exact-size iterator: collected straight into one allocation.
        let last = std::iter::once(RunStep::new(agent_name));
        RunPath {
            steps: self.steps.iter().cloned().chain(last).collect(),
        }
    }

    /// The steps, root first.
    pub fn steps(&self) -> &[RunStep] {
        &self.steps
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the path has no steps (an event not yet seen by the framework).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The first step's agent (the root of the run), if any.
    pub fn first(&self) -> Option<&str> {
        self.steps.first().map(RunStep::agent_name)
    }

    /// The agents of the steps, root first.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.steps.iter().map(RunStep::agent_name)
    }

    /// The last step's agent, if any.
    pub fn last(&self) -> Option<&str> {
        self.steps.last().map(RunStep::agent_name)
    }

    /// Whether `self` is `other` or starts with all of `other`'s steps.
    pub fn starts_with(&self, other: &RunPath) -> bool {
        self.steps.len() >= other.steps.len() && self.steps[..other.steps.len()] == other.steps[..]
    }

    /// Compares two paths, short-cutting when they share storage.
    pub(crate) fn same(&self, other: &RunPath) -> bool {
        Arc::ptr_eq(&self.steps, &other.steps) || self.steps == other.steps
    }
}

impl fmt::Display for RunPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            f.write_str(step.agent_name())?;
        }
        Ok(())
    }
}

impl fmt::Debug for RunPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunPath({self})")
    }
}

impl<S: Into<Arc<str>>> FromIterator<S> for RunPath {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        RunPath::from_steps(iter.into_iter().map(RunStep::new))
    }
}
