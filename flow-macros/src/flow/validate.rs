//! Every rule `flow!` checks while expanding, each error spanned on the offending token.
//!
//! Rules that need facts of the agent types (their names, declared transfers, `no_parent`) are
//! checked by the compiler instead, in `const` items `lower` generates.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::parse::Parser;
use syn::{Ident, LitInt};

use super::parse::{NodeAst, Target};
use super::tree::{ContextOpt, NodeOpts, Tree};
use crate::ctxt::Ctxt;
use crate::names::{setter, upper_camel};

const OPTIONS: &str = "`no_parent`, `skip_transfer_messages`, `context = rewrite`, \
                       `context = user_input_only`, `context = last(N)`, \
                       `context = custom(path::to::rewriter)`, `runtime`";

/// Checks the options of one node.
pub(crate) fn options(ast: &NodeAst, is_root: bool, flow: &Ident, cx: &mut Ctxt) -> NodeOpts {
    let mut opts = NodeOpts::default();
    let written = ast.written();
    let mut seen: Vec<String> = Vec::new();
    for o in &ast.options {
        let key = o.key.to_string();
        if seen.contains(&key) {
            cx.error(
                o.key.span(),
                format!("option `{key}` is given twice on node `{written}`; give it once"),
            );
            continue;
        }
        seen.push(key.clone());
        let flag = |cx: &mut Ctxt| {
            if let Some(v) = &o.value {
                cx.error_at(
                    v,
                    format!("option `{key}` takes no value: write just `{key}`"),
                );
            }
        };
        match key.as_str() {
            "no_parent" => {
                flag(cx);
                if is_root {
                    cx.error(
                        o.key.span(),
                        format!(
                            "`no_parent` on `{written}` has no effect: it is the root of flow \
                             `{flow}` and has no parent; remove it"
                        ),
                    );
                }
                opts.no_parent = true;
            }
            "skip_transfer_messages" => {
                flag(cx);
                opts.skip_transfer_messages = true;
            }
            "runtime" => {
                flag(cx);
                if let Target::Workflow(..) = ast.target {
                    cx.error(
                        o.key.span(),
                        format!(
                            "node `{written}` is a workflow, which the flow builds itself; \
                             remove `runtime`"
                        ),
                    );
                } else if matches!(ast.target, Target::Dyn(_)) {
                    cx.error(
                        o.key.span(),
                        format!(
                            "node `{written}` is `dyn`, so its agent is always given at run \
                             time; remove `runtime`"
                        ),
                    );
                }
                opts.runtime = true;
            }
            "context" => match &o.value {
                None => cx.error(
                    o.key.span(),
                    "`context` takes a policy: `context = rewrite`, `context = user_input_only`, \
                     `context = last(N)` or `context = custom(path::to::rewriter)`",
                ),
                Some(v) => match context(v.clone()) {
                    Ok(c) => opts.context = Some(c),
                    Err(e) => cx.push(e),
                },
            },
            other => cx.error(
                o.key.span(),
                format!(
                    "unknown option `{other}` on node `{written}` of flow `{flow}`; the node \
                     options are: {OPTIONS}"
                ),
            ),
        }
    }
    opts
}

fn context(tokens: proc_macro2::TokenStream) -> syn::Result<ContextOpt> {
    let span = tokens.clone().into_iter().next().map(|t| t.span());
    let bad = |span: Option<Span>| {
        syn::Error::new(
            span.unwrap_or_else(Span::call_site),
            "unknown context policy; write `rewrite` (the default), `user_input_only`, \
             `last(N)` or `custom(path::to::rewriter)`",
        )
    };
    let parser = |input: syn::parse::ParseStream| {
        let key: Ident = input.parse().map_err(|_| bad(span))?;
        let out = match key.to_string().as_str() {
            "rewrite" => ContextOpt::Rewrite,
            "user_input_only" => ContextOpt::UserInputOnly,
            "last" => {
                if !input.peek(syn::token::Paren) {
                    return Err(syn::Error::new(
                        key.span(),
                        "`last` takes how many entries to keep: write `context = last(5)`",
                    ));
                }
                let content;
                syn::parenthesized!(content in input);
                let n: LitInt = content.parse().map_err(|e| {
                    syn::Error::new(e.span(), "`last` takes a count: `context = last(5)`")
                })?;
                n.base10_parse::<usize>()?;
                ContextOpt::LastN(n)
            }
            "custom" => {
                if !input.peek(syn::token::Paren) {
                    return Err(syn::Error::new(
                        key.span(),
                        "`custom` takes the path of a history rewriter: write \
                         `context = custom(my_rewriter)`",
                    ));
                }
                let content;
                syn::parenthesized!(content in input);
                let p: syn::Path = content.call(syn::Path::parse_mod_style).map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        "`custom` takes the path of a history rewriter: \
                         `context = custom(my_rewriter)`",
                    )
                })?;
                ContextOpt::Custom(p)
            }
            _ => return Err(bad(Some(key.span()))),
        };
        if !input.is_empty() {
            return Err(syn::Error::new(
                input.span(),
                "unexpected tokens after the context policy",
            ));
        }
        Ok(out)
    };
    parser.parse2(tokens)
}

/// `x => []`.
/// The description of a workflow node: its doc comment. Attributes other than doc comments,
/// and doc comments on agent nodes (whose description comes from the agent), are errors.
pub(crate) fn description(ast: &NodeAst, cx: &mut Ctxt) -> Option<String> {
    for attr in ast.attrs.iter().filter(|a| !a.path().is_ident("doc")) {
        cx.error_at(
            attr,
            format!(
                "only doc comments can stand before node `{}` (they describe a workflow node)",
                ast.written()
            ),
        );
    }
    let first = ast.attrs.iter().find(|a| a.path().is_ident("doc"))?;
    match &ast.target {
        Target::Workflow(..) => Some(crate::names::doc_text(&ast.attrs)),
        Target::Type(_) => {
            cx.error_at(
                first,
                format!(
                    "a doc comment on agent node `{}` would be lost: an agent's description is \
                     the doc comment where the agent is declared (or `#[agent(description = \
                     \"...\")]`); in `flow!`, doc comments describe workflow nodes",
                    ast.written()
                ),
            );
            None
        }
        Target::Dyn(name) => {
            cx.error_at(
                first,
                format!(
                    "a doc comment on `dyn {name}` would be lost: the agent given for it at run \
                     time brings its own description; in `flow!`, doc comments describe \
                     workflow nodes"
                ),
            );
            None
        }
    }
}

pub(crate) fn empty_children(ast: &NodeAst, bracket: Span, cx: &mut Ctxt) {
    let w = ast.written();
    if let Target::Workflow(_, kind) = &ast.target {
        let k = kind.keyword();
        cx.error(
            bracket,
            format!(
                "{k} workflow `{w}` has an empty list of sub-agents, so it would have nothing \
                 to run; list them, as in `{w} = {k}{} [draft, review]`",
                if let super::parse::WorkflowKind::Loop(_) = kind {
                    "(max = 3)"
                } else {
                    ""
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
