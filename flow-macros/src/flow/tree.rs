//! The flow as a flat tree: nodes in depth-first order (the order of `FlowAgent::shape`), each
//! with its parent, children and checked options.

use proc_macro2::Span;
use syn::Ident;

use super::attr::{self, NodeOpts};
use super::parse::{FlowAst, NodeAst, Target, WorkflowKind};
use crate::ctxt::Ctxt;

/// What fills a node.
pub(crate) enum Kind {
    /// An agent type the flow builds itself (`Default`).
    Static(syn::Path),
    /// An agent type whose value is given to the builder.
    Given(syn::Path),
    /// Any agent, given to the builder, named by the node (`remote`: written `remote NAME`, an
    /// A2A agent running elsewhere).
    Dyn { remote: bool },
    /// A workflow agent the flow builds, named by the node; it runs its sub-agents itself.
    Workflow(WorkflowKind),
}

/// One node of the tree.
pub(crate) struct Node {
    pub(crate) kind: Kind,
    /// The identifier the node's generated items are named after.
    pub(crate) label: Ident,
    /// The node as written (`desk::refund`, `dyn billing`): its identity in syntax checks.
    pub(crate) written: String,
    pub(crate) span: Span,
    pub(crate) opts: NodeOpts,
    /// A workflow node's description (its doc comment).
    pub(crate) description: Option<String>,
    pub(crate) parent: Option<usize>,
    pub(crate) children: Vec<usize>,
}

impl Node {
    /// The agent type, unless the node is `dyn`.
    pub(crate) fn ty(&self) -> Option<&syn::Path> {
        match &self.kind {
            Kind::Static(p) | Kind::Given(p) => Some(p),
            Kind::Dyn { .. } | Kind::Workflow(_) => None,
        }
    }

    /// Whether the builder is given this node's agent.
    pub(crate) fn is_given(&self) -> bool {
        matches!(self.kind, Kind::Given(_) | Kind::Dyn { .. })
    }

    /// The workflow this node runs, if it is a workflow node.
    pub(crate) fn workflow(&self) -> Option<&WorkflowKind> {
        match &self.kind {
            Kind::Workflow(k) => Some(k),
            _ => None,
        }
    }
}

/// The flow, flattened.
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
}

impl Tree {
    /// Flattens the parsed tree, checking each node's options and child list on the way.
    pub(crate) fn build(ast: &FlowAst, cx: &mut Ctxt) -> Tree {
        let mut tree = Tree { nodes: Vec::new() };
        if let Some(root) = &ast.root {
            tree.add(root, None, &ast.name, cx);
        }
        tree
    }

    fn add(&mut self, ast: &NodeAst, parent: Option<usize>, flow: &Ident, cx: &mut Ctxt) {
        let opts = attr::options(ast, parent.is_none(), flow, cx);
        let description = attr::description(ast, cx);
        let kind = match &ast.target {
            Target::Type(p) if opts.runtime => Kind::Given(p.clone()),
            Target::Type(p) => Kind::Static(p.clone()),
            Target::Dyn(_, remote) => Kind::Dyn { remote: *remote },
            Target::Workflow(_, k) => Kind::Workflow(k.clone()),
        };
        let index = self.nodes.len();
        self.nodes.push(Node {
            kind,
            label: ast.label(),
            written: ast.written(),
            span: ast.span(),
            opts,
            description,
            parent,
            children: Vec::new(),
        });
        if let Some(children) = &ast.children {
            if children.nodes.is_empty() {
                empty_children(ast, children.bracket, cx);
            }
            for child in &children.nodes {
                let c = self.nodes.len();
                self.nodes[index].children.push(c);
                self.add(child, Some(index), flow, cx);
            }
        }
    }

    /// The chain of nodes from the root to `i`, root first.
    pub(crate) fn ancestry(&self, i: usize) -> Vec<usize> {
        let mut chain = vec![i];
        let mut at = i;
        while let Some(p) = self.nodes[at].parent {
            chain.push(p);
            at = p;
        }
        chain.reverse();
        chain
    }

    /// The workflow node `i` is a sub-agent of, if its parent is one.
    pub(crate) fn workflow_parent(&self, i: usize) -> Option<(usize, &WorkflowKind)> {
        let p = self.nodes[i].parent?;
        self.nodes[p].workflow().map(|k| (p, k))
    }

    /// Whether the flow's syntax bars node `i` from its parent: the node is `no_parent`, or
    /// its parent is a workflow (which runs its sub-agents itself).
    pub(crate) fn barred(&self, i: usize) -> bool {
        self.nodes[i].opts.no_parent || self.workflow_parent(i).is_some()
    }

    /// Runtime-given nodes, in tree order.
    pub(crate) fn given(&self) -> impl Iterator<Item = (usize, &Node)> {
        self.nodes.iter().enumerate().filter(|(_, n)| n.is_given())
    }
}

/// `x => []`: an empty list of sub-agents, an error spanned on the brackets.
fn empty_children(ast: &NodeAst, bracket: Span, cx: &mut Ctxt) {
    let w = ast.written();
    if let Target::Workflow(_, kind) = &ast.target {
        let k = kind.keyword();
        cx.error(
            bracket,
            format!(
                "{k} workflow `{w}` has an empty list of sub-agents, so it would have nothing \
                 to run; list them, as in `{w} = {k}{} [draft, review]`",
                match kind {
                    WorkflowKind::Loop(_) => "(max = 3)",
                    WorkflowKind::Map(_) => "(value = \"tickets\")",
                    _ => "",
                }
            ),
        );
        return;
    }
    cx.error(
        bracket,
        format!(
            "agent `{w}` has an empty list of sub-agents; list them, as in `{w} => [refund]`, \
             or remove `=> []` to make `{w}` a leaf"
        ),
    );
}
