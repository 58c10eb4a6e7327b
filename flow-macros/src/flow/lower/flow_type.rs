//! The flow type: [`lower`] writes it (its module, its facts trait, its consts and methods) and
//! assembles the other pieces around it; [`stub`] is the bare type emitted with the errors of an
//! invalid flow.

use std::cell::RefCell;
use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::Ident;

use super::agent_enum::agent_enum_items;
use super::builder::{builder_items, Builder};
use super::checks::checks;
use super::cx::Cx;
use super::target_enums::{target_enums, Targets};
use crate::flow::parse::FlowAst;
use crate::flow::tree::{Kind, Tree};

thread_local! {
    /// How many flows of each module name this compilation has expanded, so that each gets a
    /// module of its own. (rustc expands macros on one thread; a thread-local also keeps the
    /// expansion tests, each on its own thread, deterministic.)
    static FLOWS: RefCell<BTreeMap<String, usize>> = const { RefCell::new(BTreeMap::new()) };
}

/// The module of a flow's items: `{flow}_flow` (snake case) for the first flow of that name in
/// the crate, `{flow}_flow_{n}` for the n-th. rustc names the module in some messages
/// (`desk_flow::DeskAgent`), so it reads as what it holds.
fn module_ident(flow: &Ident) -> Ident {
    let base = format!("{}_flow", crate::names::snake(&flow.unraw().to_string()));
    let seen = FLOWS.with(|flows| {
        let mut flows = flows.borrow_mut();
        let seen = flows.entry(base.clone()).or_insert(0);
        *seen += 1;
        *seen
    });
    if seen == 1 {
        format_ident!("{}", base)
    } else {
        format_ident!("{}_{}", base, seen)
    }
}

/// The full expansion of a valid flow.
///
/// The named items (the flow type, its builder, its agent and target enums and the builder's
/// node markers) are defined in a module of their own (see [`module_ident`]), and
/// re-exported with a glob, the flow type also by name. So two flows of one name in one module
/// are one error (that name, imported twice), and a user's item named like another generated
/// one simply shadows it. What names the agents' types cannot live in that module, whose scope
/// does not see agents declared in a fn body: the agents' facts are the module's trait
/// `__AgentflowFacts`, implemented at the call site, and the builder's setters and `build()`
/// are inherent impls written at the call site (the fields are `pub(super)` for them).
pub(crate) fn lower(ast: &FlowAst, tree: &Tree, docs: TokenStream) -> TokenStream {
    let krate = &ast.krate;
    let cx = Cx {
        p: quote!(#krate::__private),
        m: module_ident(&ast.name),
        flow: &ast.name,
        flow_str: ast.name.to_string(),
        tree,
        summary: summary(&ast.attrs),
    };
    let p = &cx.p;
    let flow = cx.flow;
    let flow_str = &cx.flow_str;
    let vis = &ast.vis;
    let n = tree.nodes.len();
    let agent_enum = format_ident!("{}Agent", flow);
    let builder = format_ident!("{}Builder", flow);

    let names: Vec<TokenStream> = (0..n).map(|i| cx.name(i)).collect();
    let barred: Vec<TokenStream> = (0..n).map(|i| cx.barred(i)).collect();
    let descriptions: Vec<TokenStream> = tree
        .nodes
        .iter()
        .map(|node| match (&node.kind, node.ty()) {
            (_, Some(ty)) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::DESCRIPTION),
            (Kind::Workflow(_) | Kind::Dyn { .. }, None) => {
                let d = node.description.clone().unwrap_or_default();
                quote!(#d)
            }
            _ => quote!(""),
        })
        .collect();
    let transfers: Vec<TokenStream> = tree
        .nodes
        .iter()
        .map(|node| match node.ty() {
            Some(ty) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::TRANSFERS),
            None => quote!(&[]),
        })
        .collect();
    let no_parent: Vec<TokenStream> = tree
        .nodes
        .iter()
        .map(|node| match node.ty() {
            Some(ty) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::NO_PARENT),
            None => quote!(false),
        })
        .collect();
    let returns: Vec<TokenStream> = tree
        .nodes
        .iter()
        .map(|node| match node.ty() {
            Some(ty) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::RETURNS),
            None => quote!(::core::option::Option::None),
        })
        .collect();
    // A `map(payload)` node accepts a list of its agent's items: its fact is the item's name.
    let accepts: Vec<TokenStream> = tree
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| match node.ty() {
            Some(ty) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::ACCEPTS),
            None => match super::node::map_payload_agent(&cx, i) {
                // `Some("")` when the agent declares none: the map's own check says so.
                Some(ty) => quote_spanned!(node.span=>
                    match <(#ty) as #p::AgentSpec>::ACCEPTS {
                        ::core::option::Option::None => ::core::option::Option::Some(""),
                        some => some,
                    }
                ),
                None => quote!(::core::option::Option::None),
            },
        })
        .collect();
    let sent: Vec<TokenStream> = tree
        .nodes
        .iter()
        .map(|node| match node.ty() {
            Some(ty) => quote_spanned!(node.span=> <#ty as #p::AgentSpec>::TRANSFER_PAYLOADS),
            None => quote!(&[]),
        })
        .collect();
    let notes: Vec<String> = tree.nodes.iter().map(crate::flow::docs::note).collect();
    let parents: Vec<TokenStream> = tree
        .nodes
        .iter()
        .map(|node| match node.parent {
            Some(p) => quote!(::core::option::Option::Some(#p)),
            None => quote!(::core::option::Option::None),
        })
        .collect();
    // The paths' total length: each node's ancestors and itself.
    let path_names: usize = (0..n).map(|i| tree.ancestry(i).len()).sum();
    let children: Vec<&Vec<usize>> = tree.nodes.iter().map(|n| &n.children).collect();
    let checks = checks(&cx);
    let (payloads_decl, payloads_def) = super::checks::payload_checks(&cx);
    // Every item of the module is `pub`; the glob re-export gives them the flow's visibility.
    let item_vis: syn::Visibility = syn::parse_quote!(pub);
    let agents = agent_enum_items(&cx, &agent_enum, &item_vis);
    let Targets {
        in_module: targets,
        at_call_site: target_aliases,
        facts_decls,
        facts_defs,
    } = target_enums(&cx, &agent_enum, &item_vis);
    let expected = super::expected::expected_items(&cx, &agent_enum);
    let Builder {
        in_module: builder_items,
        at_call_site: builder_impls,
        has_given,
    } = builder_items(&cx, &builder, &item_vis);
    let m = &cx.m;

    let new_fn = if has_given {
        // A `new()` whose every call fails to compile, saying to use the builder. (The bound
        // names a lifetime so that it is checked at the call, not here.)
        quote! {
            /// Not available: this flow has nodes whose agents are given at run time; use
            /// `builder()`.
            #[doc(hidden)]
            pub fn new<'__a>() -> ::core::result::Result<Self, #p::FlowError>
            where
                &'__a #p::UseTheBuilder: #p::NewNeedsNoAgents<Self>,
            {
                ::core::unreachable!()
            }
        }
    } else {
        quote! {
            /// Builds the flow's tree: every agent of this flow is built by the flow itself.
            ///
            /// # Errors
            ///
            /// Only if an agent's `OnSubAgents` hook refuses its place in the tree.
            pub fn new() -> ::core::result::Result<Self, #p::FlowError> {
                Self::builder().build()
            }
        }
    };
    let builder_doc = format!(
        "A builder of [`{flow}`]{}.",
        if has_given {
            ": give it the agent of every `dyn` and `runtime` node, then call `build()`"
        } else {
            ""
        }
    );

    let in_module = quote! {
        #docs
        #[derive(::core::fmt::Debug, ::core::clone::Clone)]
        #[allow(dead_code)]
        pub struct #flow {
            pub(super) flow: #p::FlowAgent,
        }

        /// What the flow's items need to know of its agents' types, which only the call site
        /// can name: given there, by node (depth first from the root).
        pub(super) trait __AgentflowFacts {
            /// The agents' names.
            const AGENTS: &'static [&'static str];
            /// Whether each node is barred from transferring to its parent.
            const BARRED: &'static [bool];
            /// The agents' descriptions.
            const DESCRIPTIONS: &'static [&'static str];
            /// The transfers each agent declares (none for a `dyn` or workflow node).
            const TRANSFERS: &'static [&'static [&'static str]];
            /// Whether each agent is declared `#[agent(no_parent)]`.
            const NO_PARENT: &'static [bool];
            /// The result type each agent declares with `#[agent(returns = T)]`.
            const RETURNS: &'static [::core::option::Option<&'static str>];
            /// The payload type each agent receives (`#[agent(accepts = T)]`).
            const ACCEPTS: &'static [::core::option::Option<&'static str>];
            /// The payload types each agent's transfers carry.
            const TRANSFER_PAYLOADS: &'static [&'static [&'static str]];
            #facts_decls
            #payloads_decl
        }

        #[allow(dead_code)]
        impl #flow {
            /// The flow's name.
            pub const NAME: &'static str = #flow_str;

            /// The names of the flow's agents, depth first from the root.
            // Through a call: rustdoc then shows the value as `_`, not the internal trait.
            pub const AGENTS: &'static [&'static str] =
                ::core::convert::identity(<Self as __AgentflowFacts>::AGENTS);


            /// For each agent, the names of the agents from the root down to it: the path a
            /// resume follows to reach it.
            pub const PATHS: &'static [(&'static str, &'static [&'static str])] =
                &#p::paths::paths::<#n>(Self::AGENTS, Self::__PARENTS, &Self::__PATH_NAMES);

            #[doc(hidden)]
            pub const __PATH_NAMES: [&'static str; #path_names] =
                #p::paths::path_names::<#path_names>(Self::AGENTS, Self::__PARENTS);

            /// The fingerprint of the flow's shape, computed at compile time; equal to
            /// `FlowAgent::fingerprint()` of the built tree.
            pub const FINGERPRINT: u64 =
                #p::check::fingerprint(Self::AGENTS, Self::__BARRED, Self::__CHILDREN);

            #[doc(hidden)]
            pub const __CHILDREN: &'static [&'static [usize]] = &[#(&[#(#children),*]),*];

            #[doc(hidden)]
            pub const __PARENTS: &'static [::core::option::Option<usize>] = &[#(#parents),*];


            #[doc(hidden)]
            pub const __BARRED: &'static [bool] = <Self as __AgentflowFacts>::BARRED;

            #[doc(hidden)]
            pub const __DESCRIPTIONS: &'static [&'static str] =
                <Self as __AgentflowFacts>::DESCRIPTIONS;

            #[doc(hidden)]
            pub const __NOTES: &'static [&'static str] = &[#(#notes),*];

            #new_fn

            #[doc = #builder_doc]
            pub fn builder() -> #builder {
                #builder::__agentflow_new()
            }

            /// The path from the root to the named agent (see [`Self::PATHS`]), or `None` if
            /// the flow has no such agent.
            pub fn path_of(agent_name: &str) -> ::core::option::Option<&'static [&'static str]> {
                let mut __i = 0;
                while __i < Self::PATHS.len() {
                    if Self::PATHS[__i].0 == agent_name {
                        return ::core::option::Option::Some(Self::PATHS[__i].1);
                    }
                    __i += 1;
                }
                ::core::option::Option::None
            }

            /// The built tree, at its root.
            pub fn flow(&self) -> &#p::FlowAgent {
                &self.flow
            }

            /// The built tree, at its root.
            pub fn into_flow(self) -> #p::FlowAgent {
                self.flow
            }

            /// A runner for this flow.
            pub fn runner(&self) -> #p::Runner {
                #p::Runner::new(::core::clone::Clone::clone(&self.flow))
            }

            /// The tree as a Mermaid flowchart: `<-->` where a sub-agent may transfer back to
            /// its parent, `-->` where it is barred.
            pub fn mermaid() -> #p::String {
                #p::render::mermaid(Self::AGENTS, Self::__PARENTS, Self::__BARRED)
            }

            /// The tree as a standalone SVG document (the picture in this type's
            /// documentation): each agent's name, kind and description; a solid two-headed edge
            /// where a sub-agent may transfer back to its parent, a dashed one where it is
            /// barred. A `dyn` node's description is its doc comment in `flow!` (the built tree's
            /// `FlowAgent::to_svg` draws its agent's own).
            pub fn svg() -> #p::String {
                #p::render::svg(
                    Self::NAME,
                    Self::AGENTS,
                    Self::__DESCRIPTIONS,
                    Self::__NOTES,
                    Self::__PARENTS,
                    Self::__BARRED,
                )
            }

            /// The tree as a Graphviz digraph (`dir=both` where a sub-agent may transfer back
            /// to its parent).
            pub fn to_dot() -> #p::String {
                #p::render::dot(Self::NAME, Self::AGENTS, Self::__PARENTS, Self::__BARRED)
            }
        }

        #[automatically_derived]
        impl ::core::convert::From<#flow> for #p::FlowAgent {
            // A pattern, not a named parameter: rustdoc shows it as `_`.
            fn from(#flow { flow: __agentflow_flow }: #flow) -> Self {
                __agentflow_flow
            }
        }

        #agents
        #targets
        #expected
        #builder_items

        #checks
    };

    // The flow type is imported by name (the rest by the glob): an item of the same name, such
    // as a second flow named so, is one clear error pointing at the name.
    // (Imported `as` itself, the source spanned at the whole macro call: rustc then suggests no
    // `Desk as OtherDesk`, which is no flow syntax. The module's name is spanned at the flow's,
    // so the error points at it.)
    let flow_at_call = Ident::new(&flow.to_string(), proc_macro2::Span::call_site());
    let m_at_name = Ident::new(&m.to_string(), flow.span());
    let name_import = quote_spanned! {flow.span()=>
        #[allow(unused_imports)]
        #vis use #m_at_name::#flow_at_call as #flow;
    };
    quote! {
        #[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, unreachable_pub)]
        mod #m {
            #in_module
        }

        #[allow(unused_imports)]
        #vis use #m::*;

        #name_import

        #[automatically_derived]
        #[allow(unused_parens)]
        impl #m::__AgentflowFacts for #m::#flow {
            const AGENTS: &'static [&'static str] = &[#(#names),*];
            const BARRED: &'static [bool] = &[#(#barred),*];
            const DESCRIPTIONS: &'static [&'static str] = &[#(#descriptions),*];
            const TRANSFERS: &'static [&'static [&'static str]] = &[#(#transfers),*];
            const NO_PARENT: &'static [bool] = &[#(#no_parent),*];
            const RETURNS: &'static [::core::option::Option<&'static str>] = &[#(#returns),*];
            const ACCEPTS: &'static [::core::option::Option<&'static str>] = &[#(#accepts),*];
            const TRANSFER_PAYLOADS: &'static [&'static [&'static str]] = &[#(#sent),*];
            #facts_defs
            #payloads_def
        }

        #target_aliases

        #builder_impls
    }
}

/// The flow type and a stub impl, emitted with the errors of an invalid flow.
pub(crate) fn stub(ast: &FlowAst) -> TokenStream {
    let krate = &ast.krate;
    let p = quote!(#krate::__private);
    let flow = &ast.name;
    let vis = &ast.vis;
    let attrs = &ast.attrs;
    quote! {
        #(#attrs)*
        #[allow(dead_code)]
        #vis struct #flow {
            flow: #p::FlowAgent,
        }

        #[allow(dead_code)]
        impl #flow {
            /// Not available: the flow has errors.
            pub fn new() -> ::core::result::Result<Self, #p::FlowError> {
                ::core::unimplemented!()
            }
            /// Not available: the flow has errors.
            pub fn into_flow(self) -> #p::FlowAgent {
                self.flow
            }
            /// Not available: the flow has errors. (Here so that `builder().build()` adds no
            /// error to the flow's own.)
            pub fn builder() -> Self {
                ::core::unimplemented!()
            }
            /// Not available: the flow has errors.
            pub fn build(self) -> ::core::result::Result<Self, #p::FlowError> {
                ::core::result::Result::Ok(self)
            }
        }

        impl ::core::convert::From<#flow> for #p::FlowAgent {
            // A pattern, not a named parameter: rustdoc shows it as `_`.
            fn from(#flow { flow: __agentflow_flow }: #flow) -> Self {
                __agentflow_flow
            }
        }
    }
}

/// The first paragraph of the flow's doc comment, as one line; `None` without one.
fn summary(attrs: &[syn::Attribute]) -> Option<String> {
    let text = crate::names::doc_text(attrs);
    let first: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    (!first.is_empty()).then(|| first.join(" "))
}
