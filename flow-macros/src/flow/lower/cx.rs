//! [`Cx`]: what every piece of the lowering reads (the facade path, the flow's module and name,
//! the tree) and the per-node token helpers they share.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use crate::flow::tree::Tree;
use crate::names::upper_camel;

/// The lowering's context.
pub(super) struct Cx<'a> {
    /// The facade's `__private` path, which every generated path starts from.
    pub(super) p: TokenStream,
    /// The module holding the flow's named items (see `flow_type::lower`).
    pub(super) m: Ident,
    pub(super) flow: &'a Ident,
    pub(super) flow_str: String,
    pub(super) tree: &'a Tree,
    /// The first paragraph of the flow's doc comment, if it has one.
    pub(super) summary: Option<String>,
}

impl Cx<'_> {
    /// The agent name of node `i`, as a const expression.
    pub(super) fn name(&self, i: usize) -> TokenStream {
        let p = &self.p;
        let node = &self.tree.nodes[i];
        match node.ty() {
            Some(ty) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::NAME),
            None => {
                let s = node.label.to_string();
                quote!(#s)
            }
        }
    }

    /// Whether node `i` is barred from its parent, as a const expression.
    pub(super) fn barred(&self, i: usize) -> TokenStream {
        let p = &self.p;
        let node = &self.tree.nodes[i];
        let flag = self.tree.barred(i);
        match node.ty() {
            _ if flag => quote!(true),
            Some(ty) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::NO_PARENT),
            None => quote!(false),
        }
    }

    /// The nodes node `i` may transfer to: its sub-agents, then its parent unless barred (none
    /// for a workflow node, which runs its sub-agents itself).
    pub(super) fn targets(&self, i: usize) -> Vec<usize> {
        let node = &self.tree.nodes[i];
        if node.workflow().is_some() {
            return Vec::new();
        }
        let mut targets: Vec<usize> = node.children.clone();
        if let (Some(parent), false) = (node.parent, self.tree.barred(i)) {
            targets.push(parent);
        }
        targets
    }

    /// `{Flow}{Node}Target`, the target enum of node `i` (if it has targets).
    pub(super) fn target_enum(&self, i: usize) -> Ident {
        format_ident!("{}{}Target", self.flow, self.variant(i))
    }

    pub(super) fn variant(&self, i: usize) -> Ident {
        let node = &self.tree.nodes[i];
        Ident::new(&upper_camel(&node.label.to_string()), node.label.span())
    }
}
