//! Expansion snapshots: what `#[agent]` and `flow!` generate for a small flow, pretty-printed.
//! A change to the generated code shows up as a diff of `snapshots/*.rs`; regenerate them with
//! `UPDATE_SNAPSHOTS=1 cargo test -p flow-macros` and read the diff.

use proc_macro2::TokenStream;
use quote::quote;

fn check(name: &str, tokens: TokenStream) {
    let file: syn::File = syn::parse2(tokens).expect("the expansion parses as a file");
    let pretty = prettyplease::unparse(&file);
    let path = format!("{}/snapshots/{name}.rs", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &pretty).expect("write the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == pretty,
        "the expansion of {name} changed; run `UPDATE_SNAPSHOTS=1 cargo test -p flow-macros` \
         and review the diff of snapshots/{name}.rs\n--- new expansion ---\n{pretty}"
    );
}

#[test]
fn agent_fn() {
    let out = crate::agent::expand(
        quote!(transfers = [refund, complaint]),
        quote! {
            /// Decides which desk owns the request.
            pub async fn triage(cx: &AgentContext, input: AgentInput) -> AgentResult<TriageTransfer> {
                Ok(TriageTransfer::Refund)
            }
        },
    );
    check("agent_fn", out);
}

#[test]
fn agent_struct_and_impl() {
    let mut out = crate::agent::expand(
        quote!(name = "lookup"),
        quote! {
            /// Looks orders up.
            pub struct Lookup { endpoint: String }
        },
    );
    out.extend(crate::agent::expand(
        TokenStream::new(),
        quote! {
            impl Lookup {
                async fn run(&self, cx: &AgentContext) {}
            }
        },
    ));
    check("agent_struct", out);
}

#[test]
fn flow() {
    let out = crate::flow::expand(quote! {
        ::agentflow;
        /// The desk.
        pub Desk: triage => [refund(context = user_input_only), complaint => [escalation(no_parent)], dyn billing]
    });
    check("flow", out);
}
