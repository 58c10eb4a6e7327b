//! `#[agent]`: an async fn, a struct or a struct's impl block becomes an agent type.
//!
//! `attr` parses the arguments, `expand` writes the agent type, its `AgentSpec` facts, its
//! transfer enum and its `Agent` impl.

mod attr;
mod expand;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

/// Expands `#[agent(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let args = attr::parse(args, &mut cx);
    let out = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(f)) => expand::agent_fn(&args, f, &mut cx),
        Ok(syn::Item::Struct(s)) => expand::agent_struct(&args, s, &mut cx),
        Ok(syn::Item::Impl(i)) => expand::agent_impl(&args, i, &mut cx),
        Ok(other) => {
            cx.error_at(
                &other,
                "#[agent] goes on an async fn, on a struct, or on the impl block holding a \
                 struct agent's `async fn run`",
            );
            quote!(#other)
        }
        Err(e) => {
            cx.push(e);
            item
        }
    };
    let errors = cx.into_compile_errors();
    quote!(#out #errors)
}
