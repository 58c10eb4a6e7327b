//! The rustdoc of a generated flow type: the tree, a Mermaid diagram, the transfer table.
//!
//! Written at expansion time from the nodes as written; the exact agent names (an agent may be
//! renamed with `#[agent(name = ...)]`) are in the generated consts and in `mermaid()`.

use proc_macro2::TokenStream;
use quote::quote;

use std::collections::HashMap;

use super::attr::ContextOpt;
use super::local_agents::{self, LocalAgent};
use super::parse::{FlowAst, WorkflowKind};
use super::tree::{Kind, Node, Tree};

/// The doc attributes of the flow type: the user's, then the generated sections.
pub(crate) fn docs(ast: &FlowAst, tree: &Tree) -> TokenStream {
    let flow = ast.name.to_string();
    let local = local_agents::scan(ast.name.span());
    let mut lines: Vec<String> = Vec::new();
    let user_doc = ast.attrs.iter().any(|a| a.path().is_ident("doc"));
    if user_doc {
        lines.push(String::new());
    } else {
        lines.push(format!(" The flow `{flow}`."));
        lines.push(String::new());
    }
    lines.push(format!(
        " Declared with `flow!`: the tree below, the legal transfers and every agent's declared \
         transfers are checked at compile time. Build it with [`{flow}::builder`]{}; run it with \
         [`{flow}::runner`].",
        if tree.given().next().is_none() {
            format!(" or [`{flow}::new`]")
        } else {
            String::new()
        }
    ));
    lines.push(String::new());
    lines.push(" # Tree".into());
    lines.push(String::new());
    lines.push(" ```text".into());
    tree_lines(tree, 0, "", true, true, &mut lines);
    lines.push(" ```".into());
    lines.push(String::new());
    // The picture: an inline SVG, laid out here, at compile time. An HTML block (the `<div>` on
    // its own line) so Markdown leaves it alone.
    lines.push(" <div class=\"agentflow-diagram\">".into());
    lines.push(format!(
        " {}",
        agentweave_diagram::svg(&flow, &diagram(tree, 0, &local))
    ));
    lines.push(" </div>".into());
    lines.push(String::new());
    lines.push(format!(
        " Boxes show each agent's name (the one a model uses), kind and description; agents \
         declared in another file are shown by their identifier here, and with their real \
         names and descriptions by [`{flow}::svg`] (and, with those of agents given at run \
         time, by `FlowAgent::to_svg`). [`{flow}::mermaid`] and [`{flow}::to_dot`] give the \
         tree as Mermaid and Graphviz text."
    ));
    lines.push(String::new());
    lines.push(" # Transfers".into());
    lines.push(String::new());
    lines.push(" Who may transfer to whom (its sub-agents, and its parent unless barred):".into());
    lines.push(String::new());
    lines.push(" | agent | may transfer to |".into());
    lines.push(" | --- | --- |".into());
    for (i, node) in tree.nodes.iter().enumerate() {
        lines.push(format!(" | `{}` | {} |", shown(node), targets(tree, i)));
    }
    lines.push(String::new());
    lines.push(
        " An agent declared `#[agent(no_parent)]` is barred from its parent too. Agent types are \
         shown by their identifier, which is their name unless they were renamed with \
         `#[agent(name = \"...\")]`; the agents' names are in [`Self::AGENTS`], the path from the root to each \
         in [`Self::PATHS`], and the shape's fingerprint in [`Self::FINGERPRINT`]. A workflow \
         node runs its sub-agents itself and never transfers; they are barred from it."
            .into(),
    );
    let attrs = &ast.attrs;
    // One attribute for all the lines (rustdoc joins doc attributes with newlines anyway).
    let text = crate::names::doc_literal(&lines.join("\n"));
    quote! {
        #(#attrs)*
        #[doc = #text]
    }
}

/// A node as the docs show it: its agent's name as far as the expansion knows it.
fn shown(node: &Node) -> String {
    name(node)
}

fn annotations(node: &Node) -> String {
    let mut notes: Vec<String> = Vec::new();
    match &node.kind {
        Kind::Given(_) => notes.push("runtime".into()),
        Kind::Dyn { remote: false } => notes.push("dyn: given at run time".into()),
        Kind::Dyn { remote: true } => notes.push("remote: an A2A agent given at run time".into()),
        Kind::Static(_) => {}
        Kind::Workflow(WorkflowKind::Loop(Some(n))) => {
            notes.push(format!("loop workflow, at most {n} iterations"));
        }
        Kind::Workflow(WorkflowKind::Loop(None)) => notes.push("loop workflow, unbounded".into()),
        Kind::Workflow(k) => notes.push(format!("{} workflow", k.keyword())),
    }
    if node.opts.no_parent {
        notes.push("no_parent".into());
    }
    if node.opts.skip_transfer_messages {
        notes.push("skip_transfer_messages".into());
    }
    match &node.opts.context {
        None => {}
        Some(ContextOpt::Rewrite) => notes.push("context = rewrite".into()),
        Some(ContextOpt::UserInputOnly) => notes.push("context = user_input_only".into()),
        Some(ContextOpt::LastN(n)) => notes.push(format!("context = last({n})")),
        Some(ContextOpt::Custom(p)) => notes.push(format!(
            "context = custom({})",
            super::parse::path_string(p)
        )),
        Some(ContextOpt::Compact(p)) => notes.push(format!(
            "context = compact({})",
            super::parse::path_string(p)
        )),
    }
    if notes.is_empty() {
        String::new()
    } else {
        format!("  ({})", notes.join(", "))
    }
}

fn tree_lines(tree: &Tree, i: usize, prefix: &str, last: bool, root: bool, out: &mut Vec<String>) {
    let node = &tree.nodes[i];
    let (branch, next) = if root {
        ("", String::new())
    } else if last {
        ("└── ", format!("{prefix}    "))
    } else {
        ("├── ", format!("{prefix}│   "))
    };
    out.push(format!(
        " {prefix}{branch}{}{}",
        shown(node),
        annotations(node)
    ));
    let n = node.children.len();
    for (k, &c) in node.children.iter().enumerate() {
        tree_lines(tree, c, &next, k + 1 == n, false, out);
    }
}

/// The agent name of a node as far as the expansion knows it: a `dyn` or workflow node's name,
/// or the identifier of the agent type (its name unless renamed with `#[agent(name = ...)]`).
fn name(node: &Node) -> String {
    node.label.to_string()
}

/// What a node is, in a few words, for the picture: its kind, or the path it was written as.
pub(crate) fn note(node: &Node) -> String {
    match &node.kind {
        Kind::Dyn { remote: false } => "dyn: built at run time".into(),
        Kind::Dyn { remote: true } => "remote: an A2A agent given at run time".into(),
        Kind::Given(_) => "given at run time".into(),
        Kind::Static(_) if node.written.contains("::") => node.written.clone(),
        Kind::Static(_) => String::new(),
        Kind::Workflow(WorkflowKind::Loop(Some(n))) => format!("loop workflow, at most {n}"),
        Kind::Workflow(WorkflowKind::Loop(None)) => "loop workflow, unbounded".into(),
        Kind::Workflow(k) => format!("{} workflow", k.keyword()),
    }
}

/// The tree below node `i`, for `agentweave-diagram`: an agent declared in this file is drawn with
/// its real name and description (`local`).
fn diagram(tree: &Tree, i: usize, local: &HashMap<String, LocalAgent>) -> agentweave_diagram::Node {
    let node = &tree.nodes[i];
    let found = match node.kind {
        Kind::Static(_) | Kind::Given(_) => local.get(&node.label.to_string()),
        _ => None,
    };
    let name = found
        .and_then(|a| a.name.clone())
        .unwrap_or_else(|| name(node));
    let description = match found {
        Some(a) => a.description.clone(),
        None => node.description.clone().unwrap_or_default(),
    };
    let mut out = agentweave_diagram::Node::new(name)
        .note(note(node))
        .description(description)
        .barred(tree.barred(i));
    for &c in &node.children {
        out = out.child(diagram(tree, c, local));
    }
    out
}

fn targets(tree: &Tree, i: usize) -> String {
    let node = &tree.nodes[i];
    if let Some(kind) = node.workflow() {
        return format!(
            "none: a {} workflow, it runs its sub-agents itself",
            kind.keyword()
        );
    }
    let mut out: Vec<String> = node
        .children
        .iter()
        .map(|&c| format!("`{}`", shown(&tree.nodes[c])))
        .collect();
    if let Some(p) = node.parent {
        let parent = shown(&tree.nodes[p]);
        if tree.barred(i) {
            let why = if tree.workflow_parent(i).is_some() {
                ", a workflow"
            } else {
                ""
            };
            if out.is_empty() {
                return format!("none (barred from its parent `{parent}`{why})");
            }
            out.push(format!("(barred from its parent `{parent}`{why})"));
        } else {
            out.push(format!("`{parent}` (parent)"));
        }
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}
