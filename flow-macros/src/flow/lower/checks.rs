//! The compile-time checks: the flow's facts in one associated const, and one const per node
//! asserting that node's checks, evaluated by the compiler (unique agent names, declared
//! transfers against the tree, results and payloads).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::cx::Cx;

/// The compile-time checks: `__CHECKED`, the facts every check reads (one value per flow), and
/// per node a const `{node}_fits_this_flow` that asserts the runtime's `check::node` for it, and
/// `__AGENTFLOW_PAYLOAD_AT`, which [`payload_checks`] reads.
pub(super) fn checks(cx: &Cx<'_>) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let flow_str = &cx.flow_str;
    let nodes = &cx.tree.nodes;
    let n = nodes.len();
    let written: Vec<&str> = nodes.iter().map(|n| n.written.as_str()).collect();
    let marked: Vec<bool> = nodes.iter().map(|n| n.opts.no_parent).collect();
    let task: Vec<bool> = nodes
        .iter()
        .map(|n| {
            // (A `dyn` node's agent, built at run time, is not checked here.)
            n.parent.is_some()
                && n.ty().is_some()
                && matches!(
                    n.opts.delegation,
                    Some(crate::flow::attr::DelegationOpt::Task)
                )
        })
        .collect();
    let delegated: Vec<bool> = nodes.iter().map(|n| n.opts.delegation.is_some()).collect();
    let workflows: Vec<&str> = nodes
        .iter()
        .map(|n| n.workflow().map_or("", |k| k.keyword()))
        .collect();
    // The table of names by hash: a power of two of slots, at least twice the nodes.
    let slots = (2 * n).next_power_of_two();
    let facts = quote!(<Self as __AgentflowFacts>);
    // The facts are one const, evaluated once, which every node's check reads.
    let consts = quote! {
        const __NAMES: #p::check::NameIndex<#n, #slots> =
            #p::check::name_index::<#n, #slots>(Self::AGENTS);
        const __CHECKED: #p::check::FlowFacts<'static> = #p::check::FlowFacts {
            flow: #flow_str,
            agents: Self::AGENTS,
            nodes: &[#(#written),*],
            parents: Self::__PARENTS,
            children: Self::__CHILDREN,
            marked_no_parent: &[#(#marked),*],
            task: &[#(#task),*],
            delegated: &[#(#delegated),*],
            workflows: &[#(#workflows),*],
            transfers: #facts::TRANSFERS,
            no_parent: #facts::NO_PARENT,
            returns: #facts::RETURNS,
            accepts: #facts::ACCEPTS,
            payloads: #facts::TRANSFER_PAYLOADS,
            earlier: &Self::__NAMES.earlier,
            hashes: &Self::__NAMES.hashes,
            slots: &Self::__NAMES.slots,
            unique: Self::__NAMES.unique,
        };
        const __FAILING: [bool; #n] = #p::check::failing::<#n>(&Self::__CHECKED);
    };
    // Each node's check is a const of the flow's module named after the node (the compiler
    // evaluates every free const, used or not), so a failure reads "evaluation of
    // `desk_flow::refund_fits_this_flow` failed" and each failing node is its own error.
    // Whether each node passes is computed once for the flow (`__FAILING`): a node's const
    // only reads its entry, and builds its message only when it fails (evaluating the checks
    // in one const is several times cheaper than in one const per node). Each node's const
    // calls one `#[track_caller]` fn of the flow's module, so the panic is reported at the
    // call, spanned at the node (a fn of the module, not of the flow's type: finding an
    // associated item of the flow costs more than finding a fn in scope, 200 times).
    let mut node_checks = quote! {
        #[doc(hidden)]
        #[track_caller]
        const fn __agentflow_fits(node: usize) {
            if #flow::__FAILING[node] {
                #flow::__CHECKED.assert_node(node)
            }
        }
    };
    for (i, node) in nodes.iter().enumerate() {
        let span = node.span;
        let snake = crate::names::snake(&node.label.to_string());
        let name: Ident = format_ident!("{}_fits_this_flow", snake, span = span);
        node_checks.extend(quote_spanned! {span=>
            #[doc(hidden)]
            #[allow(dead_code)]
            const #name: () = __agentflow_fits(#i);
        });
    }
    let edges = payload_edges(cx);
    let e = edges.len();
    let edge_pairs = edges.iter().map(|(a, b)| quote!((#a, #b)));
    // A const of the module, not of the flow type: each edge's check reads it, and finding a
    // const in a module costs the compiler less than finding an associated item of a type.
    let positions = (e > 0).then(|| {
        quote! {
            #[doc(hidden)]
            pub(super) const __AGENTFLOW_PAYLOAD_AT: [usize; #e] =
                #p::check::payload_positions::<#e>(&#flow::__CHECKED, &[#(#edge_pairs),*]);
        }
    });
    let in_module = quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        impl #flow {
            #consts
        }

        #positions

        #node_checks
    };
    in_module
}

/// The directed edges between two agent-type nodes (a node and its sub-agent, both ways): the
/// transfers whose payload types the trait system compares.
/// Also, from an agent type to its `map(payload)` sub-agent (whose payload is a list of its
/// agent's items, compared as the `MapOver` of that agent).
fn payload_edges(cx: &Cx<'_>) -> Vec<(usize, usize)> {
    let nodes = &cx.tree.nodes;
    let mut edges = Vec::new();
    for (j, node) in nodes.iter().enumerate() {
        if let Some(i) = node.parent {
            if node.ty().is_some() && nodes[i].ty().is_some() {
                edges.push((i, j));
                edges.push((j, i));
            } else if nodes[i].ty().is_some() && super::node::map_payload_agent(cx, j).is_some() {
                edges.push((i, j));
            }
        }
    }
    edges
}

/// The assertions that, for each edge where both the sender's transfer and its target declare
/// a payload, they are one type: `same_payload` compiles only when the two types are equal,
/// whatever their spelling (an alias, an import). A const of the flow's facts impl (whose other
/// items name the same agent types, so a type rustc cannot use there is reported once for them
/// all); each call is spanned at the sub-agent's node of the edge, and a failing one names both
/// agents and both types.
pub(super) fn payload_checks(cx: &Cx<'_>) -> (TokenStream, TokenStream) {
    let edges = payload_edges(cx);
    if edges.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    let p = &cx.p;
    let m = &cx.m;
    let nodes = &cx.tree.nodes;
    let calls = edges.iter().enumerate().map(|(e, &(a, b))| {
        let Some(from) = nodes[a].ty() else {
            unreachable!("payload edges start at agent types")
        };
        let child = if nodes[b].parent == Some(a) { b } else { a };
        let span = nodes[child].span;
        // In parentheses, so that a path naming a value (a fn without #[agent]) is read as a
        // type, as everywhere else.
        let call = match (nodes[b].ty(), super::node::map_payload_agent(cx, b)) {
            (Some(to), _) => quote! {
                #p::same_payload::<(#from), (#to), { #m::__AGENTFLOW_PAYLOAD_AT[#e] }>();
            },
            (None, Some(agent)) => quote! {
                #p::same_items::<(#from), (#agent), { #m::__AGENTFLOW_PAYLOAD_AT[#e] }>();
            },
            (None, None) => unreachable!("payload edges end at agent types or their maps"),
        };
        respan(call, span)
    });
    (
        quote!(
            const __PAYLOADS: ();
        ),
        quote! {
            #[allow(unused_parens)]
            const __PAYLOADS: () = {
                #(#calls)*
            };
        },
    )
}

/// `tokens`, every one located at `span` (so an error about them points at a node of the flow,
/// not at the whole macro call).
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(g.span().located_at(span));
                t = proc_macro2::TokenTree::Group(group);
            } else {
                // Where it points moves; how its names resolve (`$crate`) stays.
                t.set_span(t.span().located_at(span));
            }
            t
        })
        .collect()
}
