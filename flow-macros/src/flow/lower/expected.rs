//! `Flow::trajectory()`: an expected trajectory typed by the flow. The agent enum implements
//! `FlowAgentOf<Flow>` and each node's target enum `FlowTransferOf<Flow>`, so an expectation
//! names only the flow's agents and the transfers it allows; `__TRAJECTORY_TARGETS` gives the
//! facade's `trajectory!` the same targets for its compile-time checks.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::cx::Cx;
use crate::flow::tree::Kind;

/// `trajectory()` on the flow type, and the impls that let its agent and target enums name
/// steps of it.
pub(super) fn expected_items(cx: &Cx<'_>, agent_enum: &Ident) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let mut example = format!("`{flow}::trajectory()`");
    let mut transfer_impls = TokenStream::new();
    let mut example_set = false;
    for i in 0..cx.tree.nodes.len() {
        let targets = cx.targets(i);
        let Some(&first) = targets.first() else {
            continue;
        };
        let ident = cx.target_enum(i);
        if !example_set {
            example_set = true;
            example = format!(
                "`{flow}::trajectory().agent({agent_enum}::{}).transfer({ident}::{})`",
                cx.variant(i),
                cx.variant(first)
            );
        }
        if let Kind::Static(_) = cx.tree.nodes[i].kind {
            // The agent's transfer enum, a transfer of this flow through `FlowPlaces`.
            continue;
        }
        transfer_impls.extend(quote! {
            #[automatically_derived]
            impl #p::FlowTransferOf<#flow> for #ident {
                fn source_name(self) -> &'static str {
                    #flow::AGENTS[#i]
                }
                fn target_name(self) -> &'static str {
                    self.as_str()
                }
            }
        });
    }
    let targets: Vec<TokenStream> = (0..cx.tree.nodes.len())
        .map(|i| {
            let t = cx.targets(i);
            quote!(&[#(#t),*])
        })
        .collect();
    let doc = format!(
        "An expected trajectory of this flow, for `agentflow::eval` (which turns it into a \
         `TrajectoryExpectation`): {example}. Agent steps take [`{agent_enum}`], transfer steps \
         a node's target enum, so only the flow's agents and the transfers it allows can be \
         named."
    );
    quote! {
        #[allow(dead_code)]
        impl #flow {
            #[doc = #doc]
            pub fn trajectory() -> #p::TrajectorySpec<Self> {
                #p::TrajectorySpec::__new(Self::NAME)
            }

            /// For each node, the nodes it may transfer to (its target enum's variants), for
            /// the compile-time checks of `trajectory!`.
            #[doc(hidden)]
            pub const __TRAJECTORY_TARGETS: &'static [&'static [usize]] = &[#(#targets),*];
        }

        #[automatically_derived]
        impl #p::FlowAgentOf<#flow> for #agent_enum {
            fn agent_name(self) -> &'static str {
                self.name()
            }
        }

        #transfer_impls

        // One impl for every node's target enum (not one per enum): a target names an agent of
        // the flow.
        #[automatically_derived]
        impl<__T: #p::FlowTransferOf<#flow>> ::core::convert::From<__T> for #agent_enum {
            fn from(__target: __T) -> Self {
                let __name = #p::FlowTransferOf::<#flow>::target_name(__target);
                let mut __i = 0;
                while __i < Self::ALL.len() - 1 && Self::ALL[__i].name() != __name {
                    __i += 1;
                }
                Self::ALL[__i]
            }
        }
    }
}
