//! What an agent is given when a run resumes after an interrupt: [`ResumeInfo`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::event::{InterruptFrame, InterruptInfo, ToolFrame};
use crate::run_path::RunPath;

/// One interrupt point still pending below the level that holds it.
#[derive(Debug, Clone)]
struct Pending {
    /// The frames from the holding level down; `frames[0]` is the holding level's node.
    frames: Arc<[InterruptFrame]>,
    /// Index of the holding level in `frames`.
    depth: usize,
    interrupt: Arc<InterruptInfo>,
    data: Option<serde_json::Value>,
    /// Whether this level is the tool call in the leaf frame, which raised the interrupt
    /// itself (a plain tool, not an agent run inside it).
    at_tool: bool,
}

impl Pending {
    fn frame(&self) -> &InterruptFrame {
        &self.frames[self.depth]
    }

    fn is_leaf(&self) -> bool {
        self.depth + 1 == self.frames.len()
    }

    /// Whether the level holding this point raised the interrupt: the agent of a leaf frame
    /// with no tool call in it, or the tool call of a leaf frame.
    fn is_own(&self) -> bool {
        self.is_leaf() && (self.at_tool || self.frame().tool.is_none())
    }
}

/// The interrupt points a resumed agent (or a tree node) is responsible for.
///
/// A [`FlowAgent`](crate::FlowAgent) receives the points below it and resumes the node that was
/// running, at the run path it had. That node's agent gets a `ResumeInfo` too:
///
/// - if it raised the interrupt itself, [`was_interrupted`](ResumeInfo::was_interrupted) is true
///   and [`state`](ResumeInfo::state), [`info`](ResumeInfo::info) and, when the caller addressed
///   this point, [`data`](ResumeInfo::data) tell it how to go on;
/// - if it is a wrapper (a workflow agent, an agent tool) that forwarded a sub-agent's
///   interrupt, [`state`](ResumeInfo::state) is what it attached and
///   [`children`](ResumeInfo::children) says which sub-agents to resume, each with the
///   `ResumeInfo` to pass to that sub-agent's `FlowAgent::resume`.
#[derive(Debug, Clone, Default)]
pub struct ResumeInfo {
    points: Vec<Pending>,
}

impl ResumeInfo {
    /// The top-level resume info of a run: every interrupt it stopped at, with resume data for
    /// the ones named in `targets` (interrupt id -> data). Points not named are re-entered with
    /// no data (they may interrupt again).
    pub fn new(
        interrupts: impl IntoIterator<Item = InterruptInfo>,
        targets: &HashMap<String, serde_json::Value>,
    ) -> Self {
        let points = interrupts
            .into_iter()
            .filter(|i| !i.address.is_empty())
            .map(|i| Pending {
                frames: i.address.clone().into(),
                depth: 0,
                data: targets.get(&i.id).cloned(),
                at_tool: false,
                interrupt: Arc::new(i),
            })
            .collect();
        ResumeInfo { points }
    }

    /// Whether there is anything to resume.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The node (agent name and run path) this level must resume, if the points agree on one.
    pub(crate) fn node(&self) -> Option<(&Arc<str>, &RunPath)> {
        let first = self.points.first()?.frame();
        self.points
            .iter()
            .all(|p| p.frame().agent == first.agent && p.frame().run_path == first.run_path)
            .then_some((&first.agent, &first.run_path))
    }

    /// Whether this agent (or, in a tool's [`ToolContext::resume_info`](crate::ToolContext),
    /// this tool call) raised the interrupt being resumed.
    pub fn was_interrupted(&self) -> bool {
        self.points.iter().any(Pending::is_own)
    }

    fn leaf(&self) -> Option<&Pending> {
        self.points.iter().find(|p| p.is_own())
    }

    /// The state saved with the interrupt: the agent's own [`InterruptInfo::state`] if it
    /// raised it, else what it attached as a wrapper.
    pub fn state(&self) -> Option<&serde_json::Value> {
        match self.leaf() {
            Some(p) => p.interrupt.state.as_ref(),
            None => self.points.first().and_then(|p| p.frame().state.as_ref()),
        }
    }

    /// The interrupt's info, if this agent raised it.
    pub fn info(&self) -> Option<&serde_json::Value> {
        self.leaf().map(|p| &p.interrupt.info)
    }

    /// The interrupt's id, if this agent raised it.
    pub fn interrupt_id(&self) -> Option<&str> {
        self.leaf().map(|p| p.interrupt.id.as_str())
    }

    /// Whether the caller addressed resume data to this agent's interrupt.
    pub fn is_target(&self) -> bool {
        self.leaf().is_some_and(|p| p.data.is_some())
    }

    /// The resume data the caller addressed to this agent's interrupt.
    pub fn data(&self) -> Option<&serde_json::Value> {
        self.leaf().and_then(|p| p.data.as_ref())
    }

    /// For wrappers: the sub-agents with pending interrupts below this agent, in the order
    /// their interrupts happened, each with the `ResumeInfo` for its `FlowAgent::resume`.
    pub fn children(&self) -> Vec<(Arc<str>, ResumeInfo)> {
        let mut out: Vec<(Arc<str>, ResumeInfo)> = Vec::new();
        for p in self.points.iter().filter(|p| !p.is_leaf()) {
            let below = Pending {
                depth: p.depth + 1,
                ..p.clone()
            };
            let name = Arc::clone(&below.frame().agent);
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, info)) => info.points.push(below),
                None => out.push((
                    name,
                    ResumeInfo {
                        points: vec![below],
                    },
                )),
            }
        }
        out
    }

    /// Like [`children`](ResumeInfo::children), but grouped by the run path the sub-agent
    /// had as well as its name: a [`Map`](crate::workflow::Map) runs one sub-agent once per
    /// item, each at its own path, and resumes each interrupted item on its own.
    pub(crate) fn children_by_path(&self) -> Vec<(RunPath, ResumeInfo)> {
        let mut out: Vec<(RunPath, ResumeInfo)> = Vec::new();
        for p in self.points.iter().filter(|p| !p.is_leaf()) {
            let below = Pending {
                depth: p.depth + 1,
                ..p.clone()
            };
            let at = below.frame().run_path.clone();
            match out.iter_mut().find(|(path, _)| *path == at) {
                Some((_, info)) => info.points.push(below),
                None => out.push((
                    at,
                    ResumeInfo {
                        points: vec![below],
                    },
                )),
            }
        }
        out
    }

    /// For an agent whose tool calls were interrupted (a [`ChatModelAgent`](crate::ChatModelAgent)
    /// calling an [`AgentTool`](crate::AgentTool) whose agent interrupted, or a tool that
    /// interrupted itself with [`ToolContext::interrupt`](crate::ToolContext::interrupt)): the
    /// calls with pending interrupts, in the order their interrupts happened, each with the
    /// `ResumeInfo` of the level below the call. For an agent tool that is its tree's
    /// `FlowAgent::resume` info; for a tool that interrupted itself, it is the tool's own:
    /// [`was_interrupted`](ResumeInfo::was_interrupted) is true and
    /// [`data`](ResumeInfo::data) holds what the caller sent it.
    pub fn tool_calls(&self) -> Vec<(ToolFrame, ResumeInfo)> {
        let mut out: Vec<(ToolFrame, ResumeInfo)> = Vec::new();
        for p in &self.points {
            if p.at_tool {
                continue;
            }
            let Some(tool) = p.frame().tool.clone() else {
                continue;
            };
            let below = if p.is_leaf() {
                Pending {
                    at_tool: true,
                    ..p.clone()
                }
            } else {
                Pending {
                    depth: p.depth + 1,
                    ..p.clone()
                }
            };
            match out.iter_mut().find(|(t, _)| t.call_id == tool.call_id) {
                Some((_, info)) => info.points.push(below),
                None => out.push((
                    tool,
                    ResumeInfo {
                        points: vec![below],
                    },
                )),
            }
        }
        out
    }

    /// The id of the pending interrupt raised at `address` (the frames from this level down,
    /// compared by agent, run path and tool call; the state attached to them may differ), if
    /// one was: an interrupt raised again at the same place keeps the id the caller knows it
    /// by, whichever other interrupts were answered in between.
    pub(crate) fn earlier_id(&self, address: &[InterruptFrame]) -> Option<&str> {
        self.points
            .iter()
            .find(|p| {
                let frames = &p.frames[p.depth..];
                frames.len() == address.len()
                    && frames.iter().zip(address).all(|(a, b)| {
                        a.agent == b.agent && a.run_path == b.run_path && a.tool == b.tool
                    })
            })
            .map(|p| p.interrupt.id.as_str())
    }

    /// The interrupts still pending, as they were raised.
    pub fn interrupts(&self) -> impl Iterator<Item = &InterruptInfo> {
        self.points.iter().map(|p| &*p.interrupt)
    }
}
