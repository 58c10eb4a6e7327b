//! Expansion snapshots: what `#[agent]` and `flow!` generate for a small flow, pretty-printed.
//! A change to the generated code shows up as a diff of `snapshots/*.rs`; regenerate them with
//! `UPDATE_SNAPSHOTS=1 cargo test -p agentweave-macros` and read the diff.

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
        "the expansion of {name} changed; run `UPDATE_SNAPSHOTS=1 cargo test -p agentweave-macros` \
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
        ::agentweave;
        /// The desk.
        pub Desk: triage => [refund(context = user_input_only), complaint => [escalation(no_parent)], dyn billing]
    });
    check("flow", out);
}

/// The picture in the generated rustdoc is one well-formed SVG holding every node, by name.
#[test]
fn doc_svg_is_well_formed_and_holds_every_agent() {
    let out = crate::flow::expand(quote! {
        ::agentweave;
        /// The desk.
        pub Desk: triage => [agents::refund_desk, complaint => [escalation(no_parent)], dyn billing, checks = sequential [audit]]
    });
    let file: syn::File = syn::parse2(out).unwrap();
    // The flow type is defined in the flow's module, `desk_flow`.
    let module = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == "desk_flow" => m.content.as_ref(),
            _ => None,
        })
        .expect("the flow's module");
    let svg = module
        .1
        .iter()
        .find_map(|item| match item {
            syn::Item::Struct(s) if s.ident == "Desk" => Some(s.attrs.clone()),
            _ => None,
        })
        .unwrap()
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        // (The docs are one attribute of many lines.)
        .flat_map(|doc| doc.lines().map(str::to_owned).collect::<Vec<_>>())
        .find(|line| line.trim_start().starts_with("<svg"))
        .expect("an SVG line in the docs");
    let doc = roxmltree::Document::parse(svg.trim()).expect("well-formed");
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("agent"))
        .filter_map(|n| n.attribute("data-name"))
        .collect();
    assert_eq!(
        names,
        [
            "triage",
            "refund_desk",
            "complaint",
            "escalation",
            "billing",
            "checks",
            "audit"
        ]
    );
    let barred: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("edge barred"))
        .filter_map(|n| n.attribute("data-to"))
        .collect();
    assert_eq!(barred, ["escalation", "audit"]);
    assert!(svg.contains(">sequential workflow</text>"));
    assert!(svg.contains(">agents::refund&#95;desk</text>"));
}
