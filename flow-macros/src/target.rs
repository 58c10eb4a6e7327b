//! What every generated transfer-target enum implements, whether `#[agent]` made it (the
//! agent's declared targets) or `flow!` (a node's legal targets): `Display` by the target's
//! agent name and the runtime's `TransferTarget`. The enum has `ALL` and `as_str()`.

use proc_macro2::TokenStream;
use quote::quote;

/// The `Display` and `TransferTarget` impls of the target enum `ident`; `p` is the path of the
/// facade's `__private`.
pub(crate) fn impls(p: &TokenStream, ident: &syn::Ident) -> TokenStream {
    quote! {
        #[automatically_derived]
        impl ::core::fmt::Display for #ident {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                __f.write_str(self.as_str())
            }
        }

        #[automatically_derived]
        impl #p::TransferTarget for #ident {
            const ALL: &'static [Self] = #ident::ALL;
            fn agent_name(self) -> &'static str {
                self.as_str()
            }
        }
    }
}
