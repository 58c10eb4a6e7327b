//! A served flow's tree as JSON, as a Mermaid flowchart and as an SVG picture.

use agentweave_runtime::FlowAgent;
use serde::Serialize;

/// One agent of a tree, with its sub-agents.
#[derive(Debug, Clone, Serialize)]
pub struct TreeNode {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Whether it is barred from transferring to its parent.
    pub no_parent: bool,
    /// The agents it may transfer to (sub-agents, and the parent unless barred).
    pub transfers: Vec<String>,
    /// Its sub-agents.
    pub children: Vec<TreeNode>,
}

impl TreeNode {
    /// The tree `agent` heads.
    pub fn of(agent: &FlowAgent) -> Self {
        TreeNode {
            name: agent.name().to_owned(),
            description: agent.description().to_owned(),
            no_parent: agent.options().disallow_transfer_to_parent,
            transfers: agent
                .transfer_targets()
                .into_iter()
                .map(|t| t.name.to_string())
                .collect(),
            children: agent.sub_agents().iter().map(TreeNode::of).collect(),
        }
    }
}

/// The Mermaid flowchart of the tree `agent` heads: `<-->` from a parent to a sub-agent that
/// may transfer back, `-->` to one barred from it.
pub fn mermaid(agent: &FlowAgent) -> String {
    fn walk<'a>(
        node: &'a TreeNode,
        parent: Option<usize>,
        names: &mut Vec<&'a str>,
        parents: &mut Vec<Option<usize>>,
        barred: &mut Vec<bool>,
    ) {
        let me = names.len();
        names.push(&node.name);
        parents.push(parent);
        barred.push(node.no_parent);
        for child in &node.children {
            walk(child, Some(me), names, parents, barred);
        }
    }
    let tree = TreeNode::of(agent);
    let (mut names, mut parents, mut barred) = (Vec::new(), Vec::new(), Vec::new());
    walk(&tree, None, &mut names, &mut parents, &mut barred);
    agentweave_runtime::spec::render::mermaid(&names, &parents, &barred)
}

/// The tree `agent` heads as a standalone SVG picture (drawn by `agentweave-diagram`), titled
/// `title`.
pub fn svg(title: &str, agent: &FlowAgent) -> String {
    fn node(t: &TreeNode) -> agentweave_diagram::Node {
        let mut n = agentweave_diagram::Node::new(&t.name)
            .description(&t.description)
            .barred(t.no_parent);
        for child in &t.children {
            n = n.child(node(child));
        }
        n
    }
    agentweave_diagram::svg(title, &node(&TreeNode::of(agent)))
}
