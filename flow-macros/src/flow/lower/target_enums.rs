//! `{Flow}{Node}Target`: per node, the type of the agents it may transfer to. For a node
//! filled by an agent type (`Kind::Static`) it is an alias of the agent's own target type (its
//! transfer enum, or `NoTarget`): a transfer the agent makes is one it declared, and the flow's
//! checks hold each declared transfer to the node's neighbours. A `dyn` or `runtime` node gets
//! an enum of its own, and a node that may transfer nowhere a deprecated stand-in. Each node
//! that may transfer gets a `FlowPlaces` impl, which makes its target type name transfers of
//! the flow (`FlowTransferOf`, for typed trajectories and `From<..> for {Flow}Agent`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::cx::Cx;
use crate::flow::tree::Kind;

/// The target types of the flow's nodes: what goes in the flow's module (the enums and
/// aliases), and what goes at the call site, which can name the agents' types (what each alias
/// names, and the `FlowPlaces` impls of agent-type nodes).
pub(super) struct Targets {
    pub(super) in_module: TokenStream,
    pub(super) at_call_site: TokenStream,
    /// The associated types of the flow's facts trait that the aliases name.
    pub(super) facts_decls: TokenStream,
    /// Their values, in the facts impl at the call site.
    pub(super) facts_defs: TokenStream,
}

/// `{Flow}{Node}Target`: for each node, the agents it may transfer to in this flow.
pub(super) fn target_enums(cx: &Cx<'_>, agent_enum: &Ident, vis: &syn::Visibility) -> Targets {
    let p = &cx.p;
    let flow = cx.flow;
    let m = &cx.m;
    let mut out = TokenStream::new();
    let mut at_call_site = TokenStream::new();
    let mut facts_decls = TokenStream::new();
    let mut facts_defs = TokenStream::new();
    for (i, node) in cx.tree.nodes.iter().enumerate() {
        if node.workflow().is_some() {
            continue; // a workflow runs its sub-agents; it never transfers
        }
        let targets = cx.targets(i);
        if targets.is_empty() {
            out.extend(no_targets(cx, i, vis));
            continue;
        }
        if let Kind::Static(ty) = &node.kind {
            let ident = cx.target_enum(i);
            let doc = format!(
                "The agents node `{}` of flow [`{flow}`] may transfer to: the target type of its \
                 agent (its transfer enum, declared with `#[agent(transfers = [...])]`, which \
                 the flow checks against the node's sub-agents and parent).",
                node.written
            );
            // The alias lives in the flow's module; the agent type it reads is given at the
            // call site, which sees it, as an associated type of the flow's facts trait
            // (private to the crate, so a public flow may place private agents). The facts
            // impl names the agent type alone: its targets are read by the alias, which rustc
            // resolves where it is used, so a node that is no agent type is one error (the
            // facts' `AgentSpec`), not a second one about its targets.
            let assoc = format_ident!("__Agent{}", i);
            out.extend(quote! {
                #[doc = #doc]
                #[allow(dead_code, private_interfaces, private_bounds)]
                #vis type #ident = <<#flow as __AgentflowFacts>::#assoc as #p::AgentTargets>::Targets;
            });
            // (The trait is private to the flow's module: its items need no docs.)
            facts_decls.extend(quote!(type #assoc: ?::core::marker::Sized;));
            let agent = quote_spanned!(node.span=> (#ty));
            facts_defs.extend(quote!(type #assoc = #agent;));
            // In parentheses, so that a path naming a value (a fn without #[agent]) is read as
            // a type and reported once, as rustc reports it everywhere else.
            let placed = quote_spanned!(node.span=> (#ty));
            at_call_site.extend(quote! {
                #[automatically_derived]
                #[allow(unused_parens)]
                impl #p::FlowPlaces<#placed> for #m::#flow {
                    const NODE: usize = #i;
                }
            });
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
            #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq)]
            // The variants are the agents' names, which may share a prefix.
        #[allow(dead_code, clippy::enum_variant_names)]
            #vis enum #ident {
                #( #[doc = #docs] #variants, )*
            }

            #[allow(dead_code)]
            impl #ident {
                /// Every target, sub-agents first.
                pub const ALL: &'static [Self] = &[#(#ident::#variants),*];

                /// The target as an agent of the flow.
                pub const fn agent(self) -> #agent_enum {
                    match self {
                        #( #ident::#variants => #agent_enum::#variants, )*
                    }
                }

                /// The name of the agent this target transfers to.
                pub const fn as_str(self) -> &'static str {
                    self.agent().name()
                }
            }

            #target_impls

            #[automatically_derived]
            impl #p::AgentTransfer for #ident {
                type Agent = #ident;
            }

            #[automatically_derived]
            impl #p::FlowPlaces<#ident> for #flow {
                const NODE: usize = #i;
            }
        });
    }
    Targets {
        in_module: out,
        at_call_site,
        facts_decls,
        facts_defs,
    }
}

/// For a node that may transfer nowhere, a stand-in `{Flow}{Node}Target` with no variants and
/// a deprecation note saying why, so that naming it (`DeskRefundTarget::Triage`) gets, beside
/// rustc's "no variant named `Triage`", a warning that names the node and says what to write.
fn no_targets(cx: &Cx<'_>, i: usize, vis: &syn::Visibility) -> TokenStream {
    let node = &cx.tree.nodes[i];
    let flow = cx.flow;
    let w = &node.written;
    let label = &node.label;
    let why = match node.parent {
        None => "it is the root of the flow and has no sub-agents".to_owned(),
        Some(p) => match cx.tree.nodes[p].workflow() {
            Some(kind) => format!(
                "it is a leaf under the {} workflow `{}`, which runs its sub-agents itself",
                kind.keyword(),
                cx.tree.nodes[p].written
            ),
            None => "it is a leaf barred from its parent (`no_parent`)".to_owned(),
        },
    };
    let note = format!(
        "node `{label}` of flow `{flow}` may transfer nowhere: {why}, so it has no targets and its \
         builder closure gets `FlowNode<NoTarget>`. To let it transfer, give it sub-agents \
         (`{w} => [...]`){}",
        if node.parent.is_some() && cx.tree.workflow_parent(i).is_none() {
            " or remove `no_parent`"
        } else {
            ""
        }
    );
    let ident = cx.target_enum(i);
    quote! {
        #[doc = #note]
        #[doc(hidden)]
        #[deprecated(note = #note)]
        #[allow(dead_code)]
        #vis enum #ident {}
    }
}
