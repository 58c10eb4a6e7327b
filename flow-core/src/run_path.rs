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
/// it.
///
/// A path is a link to its last step, which links to the path before it: extending a path,
/// cloning it and comparing it with one it was made from cost O(1), and every event of a run
/// shares the steps it has in common with the others, so a run of `n` hops holds `O(n)` steps,
/// not `O(n²)`.
///
/// ```
/// use agentweave_runtime::RunPath;
/// let p = RunPath::root("triage").child("refund");
/// assert_eq!(p.to_string(), "triage/refund");
/// assert_eq!(p.len(), 2);
/// assert_eq!(p.iter().collect::<Vec<_>>(), ["triage", "refund"]);
/// ```
#[derive(Clone, Default)]
pub struct RunPath {
    tip: Option<Arc<Link>>,
}

/// One step of a path and the path before it.
struct Link {
    step: RunStep,
    parent: Option<Arc<Link>>,
    /// Steps from the root to this one, this one included.
    len: usize,
}

impl Drop for Link {
    fn drop(&mut self) {
        // Unlinks a long chain one link at a time: dropping it recursively would take a stack
        // frame per step.
        let mut parent = self.parent.take();
        while let Some(link) = parent {
            match Arc::try_unwrap(link) {
                Ok(mut only) => parent = only.parent.take(),
                Err(_) => break,
            }
        }
    }
}

impl RunPath {
    /// The path of a run's root agent.
    pub fn root(agent_name: impl Into<Arc<str>>) -> Self {
        RunPath::default().child(agent_name)
    }

    /// A path from explicit steps.
    pub fn from_steps(steps: impl IntoIterator<Item = RunStep>) -> Self {
        steps
            .into_iter()
            .fold(RunPath::default(), |path, step| path.child_step(step))
    }

    /// This path extended by one agent. O(1): the new path shares this one.
    pub fn child(&self, agent_name: impl Into<Arc<str>>) -> Self {
        self.child_step(RunStep::new(agent_name))
    }

    fn child_step(&self, step: RunStep) -> Self {
        RunPath {
            tip: Some(Arc::new(Link {
                step,
                parent: self.tip.clone(),
                len: self.len() + 1,
            })),
        }
    }

    /// The links from the last step back to the first.
    fn links(&self) -> impl Iterator<Item = &Link> + '_ {
        std::iter::successors(self.tip.as_deref(), |l| l.parent.as_deref())
    }

    /// The steps, root first (collected: O(len)).
    pub fn steps(&self) -> Vec<RunStep> {
        let mut steps: Vec<RunStep> = self.links().map(|l| l.step.clone()).collect();
        steps.reverse();
        steps
    }

    /// The agents of the steps, root first.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let mut names: Vec<&str> = self.links().map(|l| l.step.agent_name()).collect();
        names.reverse();
        names.into_iter()
    }

    /// Number of steps. O(1).
    pub fn len(&self) -> usize {
        self.tip.as_ref().map_or(0, |l| l.len)
    }

    /// Whether the path has no steps (an event not yet seen by the framework).
    pub fn is_empty(&self) -> bool {
        self.tip.is_none()
    }

    /// The last step's agent, if any. O(1).
    pub fn last(&self) -> Option<&str> {
        self.tip.as_ref().map(|l| l.step.agent_name())
    }

    /// The first step's agent (the root of the run), if any.
    pub fn first(&self) -> Option<&str> {
        self.links().last().map(|l| l.step.agent_name())
    }

    /// The first `len` steps of this path (all of it if it is shorter), sharing its storage.
    pub fn prefix(&self, len: usize) -> RunPath {
        let mut tip = self.tip.clone();
        while let Some(link) = &tip {
            if link.len <= len {
                break;
            }
            tip = link.parent.clone();
        }
        RunPath { tip }
    }

    /// Whether `self` is `other` or starts with all of `other`'s steps.
    pub fn starts_with(&self, other: &RunPath) -> bool {
        self.len() >= other.len() && self.prefix(other.len()) == *other
    }

    /// Compares two paths, short-cutting when they share storage.
    pub(crate) fn same(&self, other: &RunPath) -> bool {
        self == other
    }

    /// Calls `visit(link id, parent link id, agent)` for each step of this path not yet in
    /// `seen`, nearest the root first, and returns this path's link id (`None` if empty). Each
    /// step shared by several paths is visited once over all calls with one `seen`: linear in
    /// the number of distinct steps.
    #[doc(hidden)]
    pub fn visit_new_steps<'p>(
        &'p self,
        seen: &mut std::collections::HashSet<usize>,
        mut visit: impl FnMut(usize, Option<usize>, &'p str),
    ) -> Option<usize> {
        let id = |l: &Link| l as *const Link as usize;
        let mut new: Vec<&'p Link> = Vec::new();
        for link in self.links() {
            if seen.contains(&id(link)) {
                break;
            }
            new.push(link);
        }
        for link in new.into_iter().rev() {
            seen.insert(id(link));
            visit(
                id(link),
                link.parent.as_deref().map(id),
                link.step.agent_name(),
            );
        }
        self.tip.as_deref().map(id)
    }
}

impl PartialEq for RunPath {
    fn eq(&self, other: &RunPath) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let (mut a, mut b) = (self.tip.as_ref(), other.tip.as_ref());
        while let (Some(x), Some(y)) = (a, b) {
            if Arc::ptr_eq(x, y) {
                return true;
            }
            if x.step != y.step {
                return false;
            }
            (a, b) = (x.parent.as_ref(), y.parent.as_ref());
        }
        true
    }
}

impl Eq for RunPath {}

impl std::hash::Hash for RunPath {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for link in self.links() {
            link.step.hash(state);
        }
    }
}

impl Serialize for RunPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for RunPath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let steps = Vec::<RunStep>::deserialize(deserializer)?;
        Ok(RunPath::from_steps(steps))
    }
}

impl fmt::Display for RunPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            f.write_str(step)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_compare_by_their_steps_shared_or_not() {
        let a = RunPath::root("a").child("b").child("a");
        let b: RunPath = ["a", "b", "a"].into_iter().collect();
        assert_eq!(a, b);
        assert_ne!(a, a.child("c"));
        assert!(a.child("c").starts_with(&b));
        assert!(!b.starts_with(&a.child("c")));
        assert_eq!(a.prefix(2).to_string(), "a/b");
        assert_eq!(a.first(), Some("a"));
        assert_eq!(serde_json::to_string(&a).unwrap(), r#"["a","b","a"]"#);
        assert_eq!(
            serde_json::from_str::<RunPath>(r#"["a","b","a"]"#).unwrap(),
            a
        );
    }

    #[test]
    fn a_million_step_path_drops_without_deep_recursion() {
        let mut p = RunPath::root("a");
        for _ in 0..1_000_000 {
            p = p.child("b");
        }
        assert_eq!(p.len(), 1_000_001);
        drop(p);
    }
}
