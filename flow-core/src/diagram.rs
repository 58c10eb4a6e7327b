//! A built tree as a picture: [`FlowAgent::to_svg`] draws it with `agentweave-diagram`, the same
//! drawing `flow!` inlines into the rustdoc of a generated flow.

use crate::agent::FlowAgent;

impl FlowAgent {
    /// The tree below this node as a standalone SVG document (no script, no fonts, no
    /// network): one box per agent with its name and description, a solid two-headed edge where
    /// a sub-agent may transfer back to its parent, a dashed one where it is barred.
    ///
    /// ```
    /// use agentweave_runtime::{set_sub_agents, FlowAgent, FnAgent};
    ///
    /// let leaf = |name: &'static str| {
    ///     FlowAgent::new(FnAgent::new(name, |_, _| async move { Ok(()) }))
    /// };
    /// let tree = set_sub_agents(
    ///     leaf("triage"),
    ///     [leaf("refund"), leaf("escalation").disallow_transfer_to_parent(true)],
    /// )
    /// .unwrap();
    /// let svg = tree.to_svg();
    /// assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
    /// assert!(svg.contains(">escalation</text>"));
    /// ```
    pub fn to_svg(&self) -> String {
        agentweave_diagram::svg(self.name(), &diagram_node(self, true))
    }
}

fn diagram_node(node: &FlowAgent, root: bool) -> agentweave_diagram::Node {
    let mut out = agentweave_diagram::Node::new(node.name())
        .description(node.description())
        .barred(!root && node.options().disallow_transfer_to_parent);
    for child in node.sub_agents() {
        out = out.child(diagram_node(&child, false));
    }
    out
}
