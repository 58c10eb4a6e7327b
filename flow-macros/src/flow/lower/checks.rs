//! The compile-time checks: one associated const per rule and node, evaluated by the compiler
//! (unique agent names, declared transfers against the tree).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::cx::Cx;

/// The compile-time checks: unique names, and each agent's declared transfers against its
/// neighbours here.
pub(super) fn checks(cx: &Cx<'_>) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let flow_str = &cx.flow_str;
    let written: Vec<&str> = cx.tree.nodes.iter().map(|n| n.written.as_str()).collect();
    let n = written.len();
    // Each check is an associated const of the flow type named after what it checks, so a
    // failure reads "evaluation of `Desk::refund_transfers_are_legal` failed", and its
    // assertion is a method call spanned at the node, so the error points at the node.
    let mut consts = quote! {
        const __NODES: &'static [&'static str] = &[#(#written),*];
        const __EARLIER: [usize; #n] = #p::check::duplicates::<#n>(Self::AGENTS);
    };
    let mut uses = TokenStream::new();
    for (i, node) in cx.tree.nodes.iter().enumerate() {
        let span = node.span;
        let snake = crate::names::snake(&node.label.to_string());
        // `verdict` is a call of a `check` fn; the const asserts that it passed.
        let mut check = |name: Ident, verdict: TokenStream| {
            consts.extend(quote_spanned! {span=>
                const #name: () = {
                    let __v = #verdict;
                    __v.assert_passed()
                };
            });
            // One item per check, so each failing check is reported; the flow's name is
            // respanned so the note about the use points at the node alone.
            let flow_at = Ident::new(&flow.to_string(), span);
            uses.extend(quote_spanned! {span=>
                #[doc(hidden)]
                const _: () = #flow_at::#name;
            });
        };
        if i > 0 {
            check(
                format_ident!("{}_has_a_unique_name", snake, span = span),
                quote_spanned! {span=>
                    #p::check::unique_name(#flow_str, Self::AGENTS, Self::__NODES, #i, Self::__EARLIER[#i])
                },
            );
        }
        if node.ty().is_none() {
            continue;
        }
        let children = &node.children;
        let parent = match node.parent {
            Some(k) => quote!(::core::option::Option::Some(Self::AGENTS[#k])),
            None => quote!(::core::option::Option::None),
        };
        let no_parent = node.opts.no_parent;
        let facts = quote_spanned!(span=> <Self as __AgentflowFacts>);
        check(
            format_ident!("{}_transfers_are_legal", snake, span = span),
            quote_spanned! {span=>
                #p::check::transfers(
                    #flow_str,
                    Self::AGENTS[#i],
                    #facts::TRANSFERS[#i],
                    &[#(Self::AGENTS[#children]),*],
                    #parent,
                    #no_parent,
                    #facts::NO_PARENT[#i],
                )
            },
        );
        check(
            format_ident!("{}_returns_to_a_parent", snake, span = span),
            quote_spanned! {span=>
                #p::check::returns_to_a_parent(#flow_str, Self::AGENTS[#i], #facts::RETURNS[#i], #parent)
            },
        );
        let neighbours: Vec<usize> = children.iter().copied().chain(node.parent).collect();
        check(
            format_ident!("{}_payloads_are_received", snake, span = span),
            quote_spanned! {span=>
                #p::check::payloads(
                    #flow_str,
                    Self::AGENTS[#i],
                    #facts::TRANSFERS[#i],
                    #facts::TRANSFER_PAYLOADS[#i],
                    &[#(Self::AGENTS[#neighbours]),*],
                    &[#(#facts::ACCEPTS[#neighbours]),*],
                )
            },
        );
        if let (Some(crate::flow::attr::DelegationOpt::Task), Some(k)) =
            (node.opts.delegation, node.parent)
        {
            check(
                format_ident!("{}_can_finish_its_task", snake, span = span),
                quote_spanned! {span=>
                    #p::check::task_can_finish(#flow_str, Self::AGENTS[#i], #facts::RETURNS[#i], Self::AGENTS[#k])
                },
            );
        }
        if let Some((k, kind)) = cx.tree.workflow_parent(i) {
            let kind = kind.keyword();
            check(
                format_ident!("{}_does_not_transfer_to_its_workflow", snake, span = span),
                quote_spanned! {span=>
                    #p::check::workflow_child(
                        #flow_str,
                        Self::AGENTS[#i],
                        #facts::TRANSFERS[#i],
                        Self::AGENTS[#k],
                        #kind,
                    )
                },
            );
        }
    }
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        impl #flow {
            #consts
        }

        #uses
    }
}
