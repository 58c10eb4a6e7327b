//! A node's attributes as written in `flow!`: its options (`no_parent`, `skip_transfer_messages`,
//! `context = ...`, `runtime`, `task`, `single_turn`, `skills = [...]`, `tools = [...]`),
//! checked into [`NodeOpts`] (a `dyn` node's skill folders read and checked by `crate::skills`), and the doc comments before it (a
//! workflow node's description). `tree` reads them while it flattens the flow.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::{Ident, LitInt};

use super::parse::{NodeAst, Target};
use crate::ctxt::Ctxt;

/// How a node's context is shaped (`context = ...`).
pub(crate) enum ContextOpt {
    Rewrite,
    UserInputOnly,
    LastN(LitInt),
    Custom(syn::Path),
    /// `compact(path)`: the default policy, and the budget the function at `path` makes.
    Compact(syn::Path),
}

/// How a node gives control back to its parent (`task`, `single_turn`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum DelegationOpt {
    Task,
    SingleTurn,
}

impl DelegationOpt {
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            DelegationOpt::Task => "task",
            DelegationOpt::SingleTurn => "single_turn",
        }
    }
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
    /// `task` or `single_turn`: the node returns its result to its parent.
    pub(crate) delegation: Option<DelegationOpt>,
    /// `skills = ["path", ...]` on a `dyn` node: its skill folders, checked.
    pub(crate) skills: Vec<crate::skills::SkillFolder>,
}

const OPTIONS: &str = "`no_parent`, `skip_transfer_messages`, `context = rewrite`, \
                       `context = user_input_only`, `context = last(N)`, \
                       `context = custom(path::to::rewriter)`, \
                       `context = compact(path::to::budget)`, `runtime`, `task`, `single_turn`, \
                       `skills = [\"path/to/skill\"]`, `tools = [tool_a, tool_b]`";

/// Checks the options of one node.
pub(crate) fn options(ast: &NodeAst, is_root: bool, flow: &Ident, cx: &mut Ctxt) -> NodeOpts {
    let mut opts = NodeOpts::default();
    let written = ast.written();
    let mut seen: Vec<String> = Vec::new();
    let mut skills: Option<(&Ident, Vec<syn::LitStr>)> = None;
    let mut tools: Option<(&Ident, Vec<String>)> = None;
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
            "task" | "single_turn" => {
                flag(cx);
                let mode = if key == "task" {
                    DelegationOpt::Task
                } else {
                    DelegationOpt::SingleTurn
                };
                if is_root {
                    cx.error(
                        o.key.span(),
                        format!(
                            "`{key}` on `{written}` cannot work: it is the root of flow `{flow}`, \
                             so there is no parent to return its result to; remove `{key}`, or \
                             place `{written}` under the agent that delegates to it"
                        ),
                    );
                } else if let (Target::Workflow(_, kind), DelegationOpt::Task) = (&ast.target, mode)
                {
                    cx.error(
                        o.key.span(),
                        format!(
                            "`task` on the {} workflow `{written}` cannot work: a workflow runs \
                             its sub-agents and ends when they do, so it never finishes a task \
                             with a result for its parent. Remove `task` (a transfer to the \
                             workflow runs it to its end), or delegate the task to an agent \
                             declared `#[agent(returns = ...)]` instead",
                            kind.keyword()
                        ),
                    );
                } else if let Some(earlier) = opts.delegation {
                    cx.error(
                        o.key.span(),
                        format!(
                            "node `{written}` is given both `{}` and `{key}`; a node is either a \
                             task (it talks with the user until it finishes) or single-turn (it \
                             runs once): keep one",
                            earlier.keyword()
                        ),
                    );
                }
                opts.delegation = Some(mode);
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
                } else if let Target::Dyn(_, remote) = ast.target {
                    let kind = if remote { "remote" } else { "dyn" };
                    cx.error(
                        o.key.span(),
                        format!(
                            "node `{written}` is `{kind}`, so its agent is always given at run \
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
                     `context = last(N)`, `context = custom(path::to::rewriter)` or \
                     `context = compact(path::to::budget)`",
                ),
                Some(v) => match context(v.clone()) {
                    Ok(c) => opts.context = Some(c),
                    Err(e) => cx.push(e),
                },
            },
            "skills" | "tools" => {
                let example = if key == "skills" {
                    "`skills = [\"skills/pdf-forms\"]`"
                } else {
                    "`tools = [read_file, write_file]`"
                };
                let Some(v) = &o.value else {
                    cx.error(o.key.span(), format!("`{key}` takes a list: {example}"));
                    continue;
                };
                if key == "skills" {
                    match crate::skills::list_tokens(v.clone()) {
                        Ok(paths) => skills = Some((&o.key, paths)),
                        Err(e) => cx.push(e),
                    }
                } else {
                    match crate::skills::tool_tokens(v.clone()) {
                        Ok(names) => tools = Some((&o.key, names)),
                        Err(e) => cx.push(e),
                    }
                }
            }
            other => cx.error(
                o.key.span(),
                format!(
                    "unknown option `{other}` on node `{written}` of flow `{flow}`; the node \
                     options are: {OPTIONS}"
                ),
            ),
        }
    }
    node_skills(ast, skills, tools, &mut opts, cx);
    opts
}

/// Checks `skills = [...]` and `tools = [...]` of a node: only a `dyn` node takes them (an agent
/// type declares its skills with `#[agent(skills = [...])]`), and its folders are read and
/// checked (`crate::skills::check`) against the tools it declares.
fn node_skills(
    ast: &NodeAst,
    skills: Option<(&Ident, Vec<syn::LitStr>)>,
    tools: Option<(&Ident, Vec<String>)>,
    opts: &mut NodeOpts,
    cx: &mut Ctxt,
) {
    let written = ast.written();
    let Some(first) = skills.as_ref().map(|s| s.0).or(tools.as_ref().map(|t| t.0)) else {
        return;
    };
    match &ast.target {
        Target::Dyn(name, false) => {
            let Some((_, paths)) = skills else {
                cx.error(
                    first.span(),
                    format!(
                        "`tools = [...]` lists the tools the skills of node `{written}` may \
                         allow, but it has no `skills = [...]`: add its skills, or remove `tools`"
                    ),
                );
                return;
            };
            let tools = tools.as_ref().map(|(_, t)| t.as_slice());
            opts.skills = crate::skills::check(&paths, tools, &name.unraw().to_string(), cx);
        }
        Target::Dyn(_, true) => cx.error(
            first.span(),
            format!(
                "node `{written}` is a remote agent, which has its own skills where it runs; \
                 remove `{first}`"
            ),
        ),
        Target::Type(path) => cx.error(
            first.span(),
            format!(
                "node `{written}` names an agent type, which declares its skills itself: write \
                 `#[agent(skills = [...])]` where `{}` is declared, and remove `{first}` here",
                quote::quote!(#path).to_string().replace(' ', "")
            ),
        ),
        Target::Workflow(..) => cx.error(
            first.span(),
            format!(
                "node `{written}` is a workflow, which runs its sub-agents and calls no model: \
                 give the skills to the agents under it instead, and remove `{first}` here"
            ),
        ),
    }
}

fn context(tokens: proc_macro2::TokenStream) -> syn::Result<ContextOpt> {
    let span = tokens.clone().into_iter().next().map(|t| t.span());
    let bad = |span: Option<Span>| {
        syn::Error::new(
            span.unwrap_or_else(Span::call_site),
            "unknown context policy; write `rewrite` (the default), `user_input_only`, \
             `last(N)`, `custom(path::to::rewriter)` or `compact(path::to::budget)`",
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
                n.base10_parse::<usize>().map_err(|_| {
                    syn::Error::new(
                        n.span(),
                        format!(
                            "`last` takes how many of the latest history entries the agent \
                             sees, a whole number of 0 or more, not `{n}`: write \
                             `context = last(5)`"
                        ),
                    )
                })?;
                ContextOpt::LastN(n)
            }
            "compact" => {
                let wrong = |span| {
                    syn::Error::new(
                        span,
                        "`compact` takes the path of a function returning a ContextBudget: \
                         write `context = compact(my_budget)`",
                    )
                };
                if !input.peek(syn::token::Paren) {
                    return Err(wrong(key.span()));
                }
                let content;
                syn::parenthesized!(content in input);
                let p: syn::Path = content
                    .call(syn::Path::parse_mod_style)
                    .map_err(|e| wrong(e.span()))?;
                ContextOpt::Compact(p)
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

/// The description of a workflow or `dyn` node: its doc comment. Attributes other than doc
/// comments, and doc comments on agent-type nodes (whose description comes from the agent),
/// are errors.
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
                     \"...\")]`); in `flow!`, doc comments describe workflow and `dyn` nodes",
                    ast.written()
                ),
            );
            None
        }
        // A `dyn` node's doc comment describes it in the flow's pictures (rustdoc, `svg()`):
        // its agent is only known at run time.
        Target::Dyn(..) => Some(crate::names::doc_text(&ast.attrs)),
    }
}
