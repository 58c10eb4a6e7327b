//! `#[agent]`: an async fn, a struct or a struct's impl block becomes an agent type.
//!
//! - `attr`: the arguments of `#[agent(...)]`, parsed and checked.
//! - `expand`: the agent type, its `AgentSpec` facts, its transfer enum and its `Agent` impl.

mod attr;
mod expand;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

/// Expands `#[agent(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let mut args = attr::parse(args, &mut cx);
    if args.krate.is_none() {
        if let Some(name) = crate::manifest::renamed_facade() {
            // The generated code names the dependency by its new name, so this is the only
            // error.
            cx.error(
                proc_macro2::Span::call_site(),
                format!(
                    "this crate's Cargo.toml renames the `agentweave` dependency to `{name}`, \
                     and `#[agent]` cannot see the new name: write `crate = {name}` in its \
                     arguments, as in `#[agent(crate = {name})]`"
                ),
            );
            let ident = proc_macro2::Ident::new(&name, proc_macro2::Span::call_site());
            args.krate = Some(syn::parse_quote!(::#ident));
        }
    }
    let out = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(f)) if f.sig.receiver().is_some() => {
            // A method: `#[agent]` was put on a fn inside an impl block. Leave the method as
            // written, with this one error.
            let ident = &f.sig.ident;
            cx.error_at(
                &f.sig,
                format!(
                    "#[agent] on the method `{ident}`: an agent with state is a struct: put \
                     #[agent] on the struct and on its impl block (not on the method), and \
                     name the method `run`, as in `#[agent] impl MyAgent {{ async fn run(&self, \
                     cx: &AgentContext) {{ ... }} }}`; an agent without state is a free async fn \
                     without `self`"
                ),
            );
            quote!(#f)
        }
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
