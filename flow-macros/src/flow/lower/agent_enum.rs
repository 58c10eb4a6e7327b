//! `{Flow}Agent`: the enum of the flow's agents, with their names, paths, parents and children.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::cx::Cx;

/// `{Flow}Agent`: one variant per agent.
pub(super) fn agent_enum_items(
    cx: &Cx<'_>,
    agent_enum: &Ident,
    vis: &syn::Visibility,
) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let n = cx.tree.nodes.len();
    let variants: Vec<Ident> = (0..n).map(|i| cx.variant(i)).collect();
    let docs: Vec<String> = cx
        .tree
        .nodes
        .iter()
        .map(|node| format!("The agent of node `{}`.", node.written))
        .collect();
    let children: Vec<TokenStream> = cx
        .tree
        .nodes
        .iter()
        .map(|node| {
            let vs = node.children.iter().map(|&c| &variants[c]);
            quote!(&[#(#agent_enum::#vs),*])
        })
        .collect();
    let enum_doc =
        format!("The agents of flow [`{flow}`]; `Display` and `FromStr` use the agents' names.");
    quote! {
        #[doc = #enum_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
        // The variants are the agents' names, which may share a prefix.
        #[allow(dead_code, clippy::enum_variant_names)]
        #[repr(usize)]
        #vis enum #agent_enum {
            #( #[doc = #docs] #variants, )*
        }

        #[allow(dead_code)]
        impl #agent_enum {
            /// Every agent, depth first from the root.
            pub const ALL: &'static [Self] = &[#(#agent_enum::#variants),*];

            /// The agent's name.
            pub const fn name(self) -> &'static str {
                #flow::AGENTS[self as usize]
            }

            /// The names of the agents from the root down to this one.
            pub const fn path(self) -> &'static [&'static str] {
                #flow::PATHS[self as usize].1
            }

            /// The agent's parent in the flow, if it is not the root.
            pub const fn parent(self) -> ::core::option::Option<Self> {
                match #flow::__PARENTS[self as usize] {
                    ::core::option::Option::Some(p) => ::core::option::Option::Some(Self::ALL[p]),
                    ::core::option::Option::None => ::core::option::Option::None,
                }
            }

            /// The agent's sub-agents, in order.
            pub const fn children(self) -> &'static [Self] {
                Self::__CHILDREN[self as usize]
            }

            // A table rather than a `match` of one arm per agent: cheaper to check.
            const __CHILDREN: &'static [&'static [Self]] = &[#(#children),*];
        }

        #[automatically_derived]
        impl ::core::fmt::Display for #agent_enum {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                __f.write_str(self.name())
            }
        }

        #[automatically_derived]
        impl ::core::str::FromStr for #agent_enum {
            type Err = #p::UnknownAgent;
            fn from_str(__s: &str) -> ::core::result::Result<Self, Self::Err> {
                let mut __i = 0;
                while __i < Self::ALL.len() {
                    if Self::ALL[__i].name() == __s {
                        return ::core::result::Result::Ok(Self::ALL[__i]);
                    }
                    __i += 1;
                }
                ::core::result::Result::Err(#p::UnknownAgent {
                    flow: #flow::NAME,
                    name: ::core::convert::From::from(__s),
                    known: #flow::AGENTS,
                })
            }
        }
    }
}
