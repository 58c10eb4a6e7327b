//! Errors raised while building an agent tree.

use std::sync::Arc;

/// A tree that cannot be built. Raised by [`set_sub_agents`](crate::set_sub_agents) and by
/// [`OnSubAgents`](crate::OnSubAgents) hooks; nothing is changed when it is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FlowError {
    /// The parent was given sub-agents before.
    #[error(
        "agent '{agent}' already has sub-agents; give an agent all its sub-agents in one \
         set_sub_agents call"
    )]
    AlreadyHasSubAgents {
        /// The parent.
        agent: Arc<str>,
    },
    /// A child is already a sub-agent of another agent.
    #[error(
        "agent '{agent}' already has parent '{parent}'; an agent can have only one parent \
         (build a second instance for the other tree)"
    )]
    AlreadyHasParent {
        /// The child.
        agent: Arc<str>,
        /// Its existing parent.
        parent: Arc<str>,
    },
    /// Two agents of one tree share a name, so transfers and resumes could not tell them apart.
    #[error("two agents named '{name}' in one tree; agent names must be unique within a tree")]
    DuplicateName {
        /// The repeated name.
        name: Arc<str>,
    },
    /// `set_sub_agents` was called with no children.
    #[error("agent '{agent}' was given an empty list of sub-agents")]
    NoSubAgents {
        /// The parent.
        agent: Arc<str>,
    },
    /// An agent given to a node declared with a name (a `dyn` node of `flow!`) has another name.
    #[error(
        "node '{node}' of flow '{flow}' was given an agent named '{agent}'; the agent of a `dyn` \
         node must carry the node's name (rename the node or the agent)"
    )]
    NodeNameMismatch {
        /// The flow.
        flow: Arc<str>,
        /// The node, as declared.
        node: Arc<str>,
        /// The name of the agent given to it.
        agent: Arc<str>,
    },
    /// A hook of an agent refused its place in the tree.
    #[error("agent '{agent}' refused its place in the tree: {message}")]
    Hook {
        /// The agent whose hook failed.
        agent: Arc<str>,
        /// Its reason.
        message: Arc<str>,
    },
}
