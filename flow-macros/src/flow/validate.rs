//! The rules `flow!` checks over the whole tree, each error spanned on the offending token. A
//! node's own options and doc comments are checked in `attr`, its child list in `tree`.
//!
//! Rules that need facts of the agent types (their names, declared transfers, `no_parent`) are
//! checked by the compiler instead, in `const` items `lower` generates.

use std::collections::HashMap;

use syn::Ident;

use super::parse::{MapItemsAst, WorkflowKind};
use super::tree::Tree;
use crate::ctxt::Ctxt;
use crate::names::{setter, upper_camel};

/// Rules over the whole tree: every agent in one place, no cycles, distinct generated names.
pub(crate) fn tree(tree: &Tree, flow: &Ident, cx: &mut Ctxt) {
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, node) in tree.nodes.iter().enumerate() {
        let Some(&j) = first.get(node.written.as_str()) else {
            first.insert(&node.written, i);
            continue;
        };
        let w = &node.written;
        let chain = tree.ancestry(i);
        let name = |k: usize| tree.nodes[k].written.as_str();
        if chain.contains(&j) {
            let from = chain.iter().position(|&k| k == j).unwrap_or(0);
            let cycle: Vec<&str> = chain[from..].iter().map(|&k| name(k)).collect();
            let parent = node.parent.map_or("", name);
            cx.error(
                node.span,
                format!(
                    "cycle in flow `{flow}`: agent `{w}` is its own ancestor ({}); a flow is a \
                     tree. To let `{parent}` hand control back to `{w}`, remove this node: a \
                     sub-agent may always transfer to its parent (declare \
                     `#[agent(transfers = [{w}])]` on it)",
                    cycle.join(" => ")
                ),
            );
        } else if node.workflow().is_some() || tree.nodes[j].workflow().is_some() {
            let what = |k: usize| match tree.nodes[k].workflow() {
                Some(kind) => format!("the {} workflow `{w}`", kind.keyword()),
                None => format!("the agent `{w}`"),
            };
            cx.error(
                node.span,
                format!(
                    "two nodes of flow `{flow}` are named `{w}`: {} and {}. Transfers and \
                     resumes find agents by name, so names must be unique within a flow: give \
                     the workflow another name, as in `{w}_steps = ...`",
                    what(j),
                    what(i)
                ),
            );
        } else if tree.nodes[j].parent == node.parent {
            let parent = node.parent.map_or("", name);
            cx.error(
                node.span,
                format!(
                    "agent `{w}` is listed twice under `{parent}` in flow `{flow}`; list it once"
                ),
            );
        } else {
            let first_parent = tree.nodes[j].parent.map_or("(the root)", name);
            let parent = node.parent.map_or("(the root)", name);
            cx.error(
                node.span,
                format!(
                    "agent `{w}` is placed under two parents in flow `{flow}`: `{first_parent}` \
                     and `{parent}`; an agent has one place in a tree. Keep one, or define a \
                     second agent with its own name for the other place"
                ),
            );
        }
    }

    map_payloads(tree, flow, cx);

    // Distinct nodes whose generated items (enum variants, builder setters) would collide.
    let mut labels: HashMap<String, usize> = HashMap::new();
    for (i, node) in tree.nodes.iter().enumerate() {
        if first.get(node.written.as_str()) != Some(&i) {
            continue; // already reported above
        }
        let label = upper_camel(&node.label.to_string());
        if let Some(&j) = labels.get(&label) {
            cx.error(
                node.span,
                format!(
                    "nodes `{}` and `{}` of flow `{flow}` would share the generated name `{label}` \
                     (and the builder setter `{}`); nodes are named by their last path segment: \
                     rename one of the agents",
                    tree.nodes[j].written,
                    node.written,
                    setter(&node.label.to_string())
                ),
            );
        } else {
            labels.insert(label, i);
        }
    }
}

/// A `map(payload)` node's items are typed by its agent's item type (`#[agent(accepts = T)]`),
/// so its agent must be an agent type: a `dyn` or `remote` node has none the compiler can see.
fn map_payloads(tree: &Tree, flow: &Ident, cx: &mut Ctxt) {
    for node in &tree.nodes {
        let Some(WorkflowKind::Map(map)) = node.workflow() else {
            continue;
        };
        let MapItemsAst::Payload(span) = map.items else {
            continue;
        };
        let Some(&child) = node.children.first() else {
            continue;
        };
        let agent = &tree.nodes[child];
        if agent.ty().is_none() {
            let name = &node.label;
            cx.error(
                span,
                format!(
                    "map workflow `{name}` of flow `{flow}` takes its items from the transfer's \
                     payload, a list of the items its agent declares with `#[agent(accepts = \
                     Item)]`, but its agent `{}` is not an agent type, so it has no declared \
                     item type: make it an `#[agent(accepts = Item)]` type, or take the items \
                     from elsewhere (`map(last_output)`, `map(value = \"KEY\")`)",
                    agent.written
                ),
            );
        }
    }
}
