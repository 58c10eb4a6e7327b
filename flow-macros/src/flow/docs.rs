//! The rustdoc of a generated flow type: the tree, a Mermaid diagram, the transfer table.
//!
//! Written at expansion time from the nodes as written; the exact agent names (an agent may be
//! renamed with `#[agent(name = ...)]`) are in the generated consts and in `mermaid()`.

use proc_macro2::TokenStream;
use quote::quote;

use super::parse::{FlowAst, WorkflowKind};
use super::tree::{ContextOpt, Kind, Node, Tree};

/// The doc attributes of the flow type: the user's, then the generated sections.
pub(crate) fn docs(ast: &FlowAst, tree: &Tree) -> TokenStream {
    let flow = ast.name.to_string();
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
    lines.push(" ```mermaid".into());
    for l in mermaid(tree) {
        lines.push(format!(" {l}"));
    }
    lines.push(" ```".into());
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
        " An agent declared `#[agent(no_parent)]` is barred from its parent too. Nodes are shown \
         as written; the agents' names are in [`Self::AGENTS`], the path from the root to each \
         in [`Self::PATHS`], and the shape's fingerprint in [`Self::FINGERPRINT`]. A workflow \
         node runs its sub-agents itself and never transfers; they are barred from it."
            .into(),
    );
    let attrs = &ast.attrs;
    quote! {
        #(#attrs)*
        #(#[doc = #lines])*
    }
}

/// A node as the docs show it: its path as written, or a `dyn` node's name.
fn shown(node: &Node) -> String {
    match node.kind {
        Kind::Dyn => node.label.to_string(),
        Kind::Static(_) | Kind::Given(_) | Kind::Workflow(_) => node.written.clone(),
    }
}

fn annotations(node: &Node) -> String {
    let mut notes: Vec<String> = Vec::new();
    match &node.kind {
        Kind::Given(_) => notes.push("runtime".into()),
        Kind::Dyn => notes.push("dyn: given at run time".into()),
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

fn mermaid(tree: &Tree) -> Vec<String> {
    let mut out = vec!["graph TD".to_owned()];
    for (i, node) in tree.nodes.iter().enumerate() {
        out.push(format!(
            "    n{i}[\"{}\"]",
            node.written.replace('"', "#quot;")
        ));
    }
    for (i, node) in tree.nodes.iter().enumerate() {
        if let Some(p) = node.parent {
            let arrow = if tree.barred(i) { "-->" } else { "<-->" };
            out.push(format!("    n{p} {arrow} n{i}"));
        }
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
