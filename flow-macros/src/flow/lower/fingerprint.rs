//! The fingerprint of the flow's shape (`FINGERPRINT`), hashed at compile time.

use proc_macro2::TokenStream;
use quote::quote;

use super::cx::Cx;

/// The FNV-1a hash of the shape, piece by piece, as a const block.
pub(super) fn fingerprint(cx: &Cx<'_>) -> TokenStream {
    fn node(cx: &Cx<'_>, i: usize, out: &mut Vec<TokenStream>) {
        let p = &cx.p;
        out.push(quote!(__h = #p::check::fnv1a(__h, Self::AGENTS[#i]);));
        out.push(quote!(if Self::__BARRED[#i] { __h = #p::check::fnv1a(__h, "^"); }));
        let children = &cx.tree.nodes[i].children;
        if !children.is_empty() {
            out.push(quote!(__h = #p::check::fnv1a(__h, "(");));
            for (k, &c) in children.iter().enumerate() {
                if k > 0 {
                    out.push(quote!(__h = #p::check::fnv1a(__h, ",");));
                }
                node(cx, c, out);
            }
            out.push(quote!(__h = #p::check::fnv1a(__h, ")");));
        }
    }
    let p = &cx.p;
    let mut steps = Vec::new();
    node(cx, 0, &mut steps);
    quote! {{
        let mut __h = #p::check::FNV_OFFSET;
        #(#steps)*
        __h
    }}
}
