//! `{Flow}{Node}Target`: per node, the enum of the agents it may transfer to.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::cx::Cx;

/// `{Flow}{Node}Target`: for each node, the agents it may transfer to in this flow.
pub(super) fn target_enums(cx: &Cx<'_>, agent_enum: &Ident, vis: &syn::Visibility) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let mut out = TokenStream::new();
    for (i, node) in cx.tree.nodes.iter().enumerate() {
        if node.workflow().is_some() {
            continue; // a workflow runs its sub-agents; it never transfers
        }
        let targets = cx.targets(i);
        if targets.is_empty() {
            continue;
        }
        let ident = cx.target_enum(i);
        let variants: Vec<Ident> = targets.iter().map(|&t| cx.variant(t)).collect();
        let docs: Vec<String> = targets
            .iter()
            .map(|&t| {
                let rel = if Some(t) == node.parent {
                    "its parent"
                } else {
                    "a sub-agent"
                };
                format!("Transfer to `{}`, {rel}.", cx.tree.nodes[t].written)
            })
            .collect();
        let doc = format!(
            "The agents node `{}` of flow [`{flow}`] may transfer to: its sub-agents, and its \
             parent unless the node is `no_parent` (if the agent itself is declared \
             `#[agent(no_parent)]`, a transfer to the parent is refused at run time).",
            node.written
        );
        let target_impls = crate::target::impls(p, &ident);
        out.extend(quote! {
            #[doc = #doc]
            #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
            #[allow(dead_code)]
            #vis enum #ident {
                #( #[doc = #docs] #variants, )*
            }

            #[allow(dead_code)]
            impl #ident {
                /// Every target, sub-agents first.
                pub const ALL: &'static [Self] = &[#(Self::#variants),*];

                /// The target as an agent of the flow.
                pub const fn agent(self) -> #agent_enum {
                    match self {
                        #( Self::#variants => #agent_enum::#variants, )*
                    }
                }

                /// The name of the agent this target transfers to.
                pub const fn as_str(self) -> &'static str {
                    self.agent().name()
                }
            }

            #target_impls

            #[automatically_derived]
            impl ::core::convert::From<#ident> for #agent_enum {
                fn from(__target: #ident) -> Self {
                    __target.agent()
                }
            }
        });
    }
    out
}
