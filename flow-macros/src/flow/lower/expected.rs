//! `Flow::trajectory()`: an expected trajectory typed by the flow. The agent enum implements
//! `FlowAgentOf<Flow>` and each node's target enum `FlowTransferOf<Flow>`, so an expectation
//! names only the flow's agents and the transfers it allows; `__TRAJECTORY_TARGETS` gives the
//! facade's `trajectory!` the same targets for its compile-time checks.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::cx::Cx;

/// `trajectory()` on the flow type, and the impls that let its agent and target enums name
/// steps of it.
pub(super) fn expected_items(cx: &Cx<'_>, agent_enum: &Ident) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    // The first node that may transfer, for the example (an agent-type node's target type is
    // its agent's transfer enum, which may name fewer targets; the example is only text).
    let example = (0..cx.tree.nodes.len())
        .find_map(|i| cx.targets(i).first().map(|&first| (i, first)))
        .map_or_else(
            || format!("`{flow}::trajectory()`"),
            |(i, first)| {
                format!(
                    "`{flow}::trajectory().agent({agent_enum}::{}).transfer({}::{})`",
                    cx.variant(i),
                    cx.target_enum(i),
                    cx.variant(first)
                )
            },
        );
    let targets: Vec<TokenStream> = (0..cx.tree.nodes.len())
        .map(|i| {
            let t = cx.targets(i);
            quote!(&[#(#t),*])
        })
        .collect();
    let typed = cx.tree.nodes.iter().map(|n| n.ty().is_some());
    let labels = cx.tree.nodes.iter().map(|n| n.label.to_string());
    let doc = format!(
        "An expected trajectory of this flow, for `agentweave::eval` (which turns it into a \
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

            /// For each node, the nodes it may transfer to in the tree (its sub-agents, then its
            /// parent unless barred), for the compile-time checks of `trajectory!`.
            #[doc(hidden)]
            pub const __TRAJECTORY_TARGETS: &'static [&'static [usize]] = &[#(#targets),*];

            /// Whether each node is filled by an agent type, whose transfers are the ones it
            /// declared (`__TRAJECTORY_DECLARED`), for `trajectory!`.
            #[doc(hidden)]
            pub const __TRAJECTORY_TYPED: &'static [bool] = &[#(#typed),*];

            /// The transfers each node's agent type declares (none for a `dyn` node).
            #[doc(hidden)]
            pub const __TRAJECTORY_DECLARED: &'static [&'static [&'static str]] =
                <Self as __AgentflowFacts>::TRANSFERS;

            /// Each node as `trajectory!` may name it besides its agent's name: the node's
            /// identifier (`refund` for `#[agent(name = "refund-desk")] async fn refund`).
            #[doc(hidden)]
            pub const __LABELS: &'static [&'static str] = &[#(#labels),*];
        }

        #[automatically_derived]
        impl #p::FlowNames for #flow {
            const AGENTS: &'static [&'static str] = #flow::AGENTS;
        }

        #[automatically_derived]
        impl #p::FlowAgentOf<#flow> for #agent_enum {
            fn agent_name(self) -> &'static str {
                self.name()
            }
        }

        // One impl for every node's target type (not one per type): a target names an agent of
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
