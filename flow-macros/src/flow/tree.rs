//! The flow as a flat tree: nodes in depth-first order (the order of `FlowAgent::shape`), each
//! with its parent, children and checked options.

use proc_macro2::Span;
use syn::{Ident, LitInt};

use super::parse::{FlowAst, NodeAst, Target};
use super::validate;
use crate::ctxt::Ctxt;

/// How a node's context is shaped (`context = ...`).
pub(crate) enum ContextOpt {
    Rewrite,
    UserInputOnly,
    LastN(LitInt),
    Custom(syn::Path),
}

/// A node's options, checked.
#[derive(Default)]
pub(crate) struct NodeOpts {
    /// `no_parent`: barred from transferring to its parent.
    pub(crate) no_parent: bool,
    pub(crate) skip_transfer_messages: bool,
    pub(crate) context: Option<ContextOpt>,
    /// `runtime`: an agent type whose value the builder is given.
    pub(crate) runtime: bool,
}

/// What fills a node.
pub(crate) enum Kind {
    /// An agent type the flow builds itself (`Default`).
    Static(syn::Path),
    /// An agent type whose value is given to the builder.
    Given(syn::Path),
    /// Any agent, given to the builder, named by the node.
    Dyn,
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
    pub(crate) parent: Option<usize>,
    pub(crate) children: Vec<usize>,
}

impl Node {
    /// The agent type, unless the node is `dyn`.
    pub(crate) fn ty(&self) -> Option<&syn::Path> {
        match &self.kind {
            Kind::Static(p) | Kind::Given(p) => Some(p),
            Kind::Dyn => None,
        }
    }

    /// Whether the builder is given this node's agent.
    pub(crate) fn is_given(&self) -> bool {
        !matches!(self.kind, Kind::Static(_))
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
        let opts = validate::options(ast, parent.is_none(), flow, cx);
        let kind = match &ast.target {
            Target::Type(p) if opts.runtime => Kind::Given(p.clone()),
            Target::Type(p) => Kind::Static(p.clone()),
            Target::Dyn(_) => Kind::Dyn,
        };
        let index = self.nodes.len();
        self.nodes.push(Node {
            kind,
            label: ast.label(),
            written: ast.written(),
            span: ast.span(),
            opts,
            parent,
            children: Vec::new(),
        });
        if let Some(children) = &ast.children {
            if children.nodes.is_empty() {
                validate::empty_children(ast, children.bracket, cx);
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

    /// Runtime-given nodes, in tree order.
    pub(crate) fn given(&self) -> impl Iterator<Item = (usize, &Node)> {
        self.nodes.iter().enumerate().filter(|(_, n)| n.is_given())
    }
}
