//! The lowering proper: the runtime `FlowAgent` expression of a node and its subtree, bottom-up
//! `set_sub_agents` as written by hand, with each node's options applied.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::cx::Cx;
use crate::flow::attr::{ContextOpt, DelegationOpt};
use crate::flow::parse::{MapItemsAst, MapPolicyAst, WorkflowKind};
use crate::flow::tree::Kind;

/// The local holding a builder slot's agent in `build()`; prefixed so that no agent's unit
/// struct (which a plain `let refund` would collide with) can clash with it.
pub(super) fn slot_local(field: &Ident) -> Ident {
    format_ident!("__agentflow_slot_{}", field)
}

/// The expression building node `i` and its subtree.
pub(super) fn lower_node(cx: &Cx<'_>, i: usize, given: &[usize], fields: &[Ident]) -> TokenStream {
    let p = &cx.p;
    let node = &cx.tree.nodes[i];
    let mut node_expr = match &node.kind {
        // An agent-type node: one call of the runtime's generic `flow_node` (which applies the
        // type's payload), not the same chain written out per node.
        // In parentheses: a fn named as a node is one "not a type" error. Whether the node is
        // barred is the flow's mark or the agent's `no_parent`, which `flow_built_node` reads.
        Kind::Static(ty) => {
            let marked = cx.tree.barred(i);
            quote_spanned!(node.span=>
                #p::flow_built_node(::core::marker::PhantomData::<(#ty)>, #marked)
            )
        }
        Kind::Given(_) => {
            let j = given.iter().position(|&g| g == i).unwrap_or(0);
            let slot = slot_local(&fields[j]);
            let barred = cx.barred(i);
            quote!(#p::flow_node(#slot, #barred))
        }
        Kind::Dyn { .. } => {
            let j = given.iter().position(|&g| g == i).unwrap_or(0);
            let slot = slot_local(&fields[j]);
            let barred = cx.barred(i);
            quote!(#p::FlowAgent::from_arc(#slot.0).disallow_transfer_to_parent(#barred))
        }
        Kind::Workflow(kind) => {
            let name = node.label.to_string();
            let workflow = match kind {
                WorkflowKind::Sequential => quote!(#p::Sequential::new(#name)),
                WorkflowKind::Parallel => quote!(#p::Parallel::new(#name)),
                WorkflowKind::Loop(Some(n)) => quote!(#p::Loop::new(#name, #n)),
                WorkflowKind::Loop(None) => quote!(#p::Loop::unbounded(#name)),
                WorkflowKind::Map(m) => {
                    let items = match &m.items {
                        MapItemsAst::Value(key) => quote!(#p::MapItems::value(#key)),
                        MapItemsAst::LastOutput => quote!(#p::MapItems::LastOutput),
                        MapItemsAst::Payload(_) => quote!(#p::MapItems::Payload),
                    };
                    let mut map = quote!(#p::Map::new(#name, #items));
                    if let Some(n) = &m.concurrency {
                        map.extend(quote!(.concurrency(#n)));
                    }
                    let policy = match &m.on_failure {
                        None => None,
                        Some(MapPolicyAst::FailFast) => Some(quote!(#p::MapPolicy::FailFast)),
                        Some(MapPolicyAst::CollectErrors) => {
                            Some(quote!(#p::MapPolicy::CollectErrors))
                        }
                        Some(MapPolicyAst::AtLeast(n)) => Some(quote!(#p::MapPolicy::AtLeast(#n))),
                    };
                    if let Some(policy) = policy {
                        map.extend(quote!(.on_failure(#policy)));
                    }
                    map
                }
            };
            let agent = match &node.description {
                Some(d) if !d.is_empty() => {
                    quote!(#p::FlowAgent::new(#workflow.with_description(#d)))
                }
                _ => quote!(#p::FlowAgent::new(#workflow)),
            };
            let barred = cx.barred(i);
            let mut agent = quote!(#agent.disallow_transfer_to_parent(#barred));
            // `map(payload)`: the node accepts a list of its agent's items (spanned at the
            // agent, so an agent that declares no item type is reported there).
            if let (Some(item_agent), WorkflowKind::Map(m)) = (map_payload_agent(cx, i), kind) {
                if matches!(m.items, MapItemsAst::Payload(_)) {
                    let span = cx.tree.nodes[node.children[0]].span;
                    agent.extend(quote_spanned!(span=>
                        .payload(::core::option::Option::Some(
                            #p::map_payload::<(#item_agent)>()
                        ))
                    ));
                }
            }
            agent
        }
    };
    if node.opts.skip_transfer_messages {
        node_expr.extend(quote!(.skip_transfer_messages(true)));
    }
    match node.opts.delegation {
        Some(DelegationOpt::Task) => node_expr.extend(quote!(.delegation(#p::Delegation::Task))),
        Some(DelegationOpt::SingleTurn) => {
            node_expr.extend(quote!(.delegation(#p::Delegation::SingleTurn)))
        }
        None => {}
    }
    if let Some(c) = &node.opts.context {
        let option = match c {
            ContextOpt::Rewrite => quote!(.context(#p::ContextPolicy::Rewrite)),
            ContextOpt::UserInputOnly => quote!(.context(#p::ContextPolicy::UserInputOnly)),
            ContextOpt::LastN(n) => quote!(.context(#p::ContextPolicy::LastN(#n))),
            ContextOpt::Custom(path) => quote!(.context(#p::ContextPolicy::custom(#path))),
            ContextOpt::Compact(path) => quote!(.context_budget(#path())),
        };
        node_expr.extend(option);
    }
    if node.children.is_empty() {
        node_expr
    } else {
        let children = node
            .children
            .iter()
            .map(|&c| lower_node(cx, c, given, fields));
        quote!(#p::set_sub_agents(#node_expr, [#(#children),*])?)
    }
}

/// The agent type of node `i` if it is a `map(payload)` node whose one sub-agent is an agent
/// type: the type whose declared item a transfer's payload lists.
pub(super) fn map_payload_agent<'t>(cx: &'t Cx<'_>, i: usize) -> Option<&'t syn::Path> {
    let node = &cx.tree.nodes[i];
    match node.workflow() {
        Some(WorkflowKind::Map(m)) if matches!(m.items, MapItemsAst::Payload(_)) => {
            cx.tree.nodes[*node.children.first()?].ty()
        }
        _ => None,
    }
}
