//! Tokens out for `flow!`: the flow type, its builder, its agent and target enums, the
//! compile-time checks, and the lowering to the runtime's `FlowAgent` tree.

use std::cell::RefCell;
use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::Ident;

use super::attr::ContextOpt;
use super::parse::FlowAst;
use super::parse::WorkflowKind;
use super::tree::{Kind, Tree};
use crate::names::{ident, setter, upper_camel};

struct Cx<'a> {
    p: TokenStream,
    /// The module holding the flow's named items (see [`lower`]).
    m: Ident,
    flow: &'a Ident,
    flow_str: String,
    tree: &'a Tree,
}

impl Cx<'_> {
    /// The agent name of node `i`, as a const expression.
    fn name(&self, i: usize) -> TokenStream {
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
    fn barred(&self, i: usize) -> TokenStream {
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
    fn targets(&self, i: usize) -> Vec<usize> {
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
    fn target_enum(&self, i: usize) -> Ident {
        format_ident!("{}{}Target", self.flow, self.variant(i))
    }

    fn variant(&self, i: usize) -> Ident {
        let node = &self.tree.nodes[i];
        Ident::new(&upper_camel(&node.label.to_string()), node.label.span())
    }
}

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
            (Kind::Workflow(_), None) => {
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
    let notes: Vec<String> = tree.nodes.iter().map(super::docs::note).collect();
    let parents: Vec<TokenStream> = tree
        .nodes
        .iter()
        .map(|node| match node.parent {
            Some(p) => quote!(::core::option::Option::Some(#p)),
            None => quote!(::core::option::Option::None),
        })
        .collect();
    let paths: Vec<TokenStream> = (0..n)
        .map(|i| {
            let chain = tree.ancestry(i);
            quote!((Self::AGENTS[#i], &[#(Self::AGENTS[#chain]),*]))
        })
        .collect();
    let fingerprint = fingerprint(&cx);
    let checks = checks(&cx);
    // Every item of the module is `pub`; the glob re-export gives them the flow's visibility.
    let item_vis: syn::Visibility = syn::parse_quote!(pub);
    let agents = agent_enum_items(&cx, &agent_enum, &item_vis);
    let targets = target_enums(&cx, &agent_enum, &item_vis);
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
        }

        #[allow(dead_code)]
        impl #flow {
            /// The flow's name.
            pub const NAME: &'static str = #flow_str;

            /// The names of the flow's agents, depth first from the root.
            pub const AGENTS: &'static [&'static str] = <Self as __AgentflowFacts>::AGENTS;


            /// For each agent, the names of the agents from the root down to it: the path a
            /// resume follows to reach it.
            pub const PATHS: &'static [(&'static str, &'static [&'static str])] = &[#(#paths),*];

            /// The fingerprint of the flow's shape, computed at compile time; equal to
            /// `FlowAgent::fingerprint()` of the built tree.
            pub const FINGERPRINT: u64 = #fingerprint;

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
            pub fn mermaid() -> ::std::string::String {
                #p::render::mermaid(Self::AGENTS, Self::__PARENTS, Self::__BARRED)
            }

            /// The tree as a standalone SVG document (the picture in this type's
            /// documentation): each agent's name, kind and description; a solid two-headed edge
            /// where a sub-agent may transfer back to its parent, a dashed one where it is
            /// barred. A `dyn` node's description comes with its agent: draw the built tree
            /// with `FlowAgent::to_svg` to show it.
            pub fn svg() -> ::std::string::String {
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
            pub fn to_dot() -> ::std::string::String {
                #p::render::dot(Self::NAME, Self::AGENTS, Self::__PARENTS, Self::__BARRED)
            }
        }

        #[automatically_derived]
        impl ::core::convert::From<#flow> for #p::FlowAgent {
            fn from(__flow: #flow) -> Self {
                __flow.flow
            }
        }

        #agents
        #targets
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
        #[allow(non_snake_case, non_camel_case_types, unreachable_pub)]
        mod #m {
            #in_module
        }

        #[allow(unused_imports)]
        #vis use #m::*;

        #name_import

        #[automatically_derived]
        impl #m::__AgentflowFacts for #m::#flow {
            const AGENTS: &'static [&'static str] = &[#(#names),*];
            const BARRED: &'static [bool] = &[#(#barred),*];
            const DESCRIPTIONS: &'static [&'static str] = &[#(#descriptions),*];
            const TRANSFERS: &'static [&'static [&'static str]] = &[#(#transfers),*];
            const NO_PARENT: &'static [bool] = &[#(#no_parent),*];
        }

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
        }

        impl ::core::convert::From<#flow> for #p::FlowAgent {
            fn from(__flow: #flow) -> Self {
                __flow.flow
            }
        }
    }
}

/// The FNV-1a hash of the shape, piece by piece, as a const block.
fn fingerprint(cx: &Cx<'_>) -> TokenStream {
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

/// The compile-time checks: unique names, and each agent's declared transfers against its
/// neighbours here.
fn checks(cx: &Cx<'_>) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let flow_str = &cx.flow_str;
    let written: Vec<&str> = cx.tree.nodes.iter().map(|n| n.written.as_str()).collect();
    let n = written.len();
    // Each check is an associated const of the flow type named after what it checks, so a
    // failure reads "evaluation of `Desk::refund_transfers_are_legal` failed", and its
    // assertion is a method call spanned at the node, so the error points at the node.
    let mut consts = quote! {
        const __NODES: &'static [&'static str] = &[#(#written),*];
        const __EARLIER: [usize; #n] = #p::check::duplicates::<#n>(Self::AGENTS);
    };
    let mut uses = TokenStream::new();
    for (i, node) in cx.tree.nodes.iter().enumerate() {
        let span = node.span;
        let snake = crate::names::snake(&node.label.to_string());
        // `verdict` is a call of a `check` fn; the const asserts that it passed.
        let mut check = |name: Ident, verdict: TokenStream| {
            consts.extend(quote_spanned! {span=>
                const #name: () = {
                    let __v = #verdict;
                    __v.assert_passed()
                };
            });
            // One item per check, so each failing check is reported; the flow's name is
            // respanned so the note about the use points at the node alone.
            let flow_at = Ident::new(&flow.to_string(), span);
            uses.extend(quote_spanned! {span=>
                #[doc(hidden)]
                const _: () = #flow_at::#name;
            });
        };
        if i > 0 {
            check(
                format_ident!("{}_has_a_unique_name", snake, span = span),
                quote_spanned! {span=>
                    #p::check::unique_name(#flow_str, Self::AGENTS, Self::__NODES, #i, Self::__EARLIER[#i])
                },
            );
        }
        if node.ty().is_none() {
            continue;
        }
        let children = &node.children;
        let parent = match node.parent {
            Some(k) => quote!(::core::option::Option::Some(Self::AGENTS[#k])),
            None => quote!(::core::option::Option::None),
        };
        let no_parent = node.opts.no_parent;
        let facts = quote_spanned!(span=> <Self as __AgentflowFacts>);
        check(
            format_ident!("{}_transfers_are_legal", snake, span = span),
            quote_spanned! {span=>
                #p::check::transfers(
                    #flow_str,
                    Self::AGENTS[#i],
                    #facts::TRANSFERS[#i],
                    &[#(Self::AGENTS[#children]),*],
                    #parent,
                    #no_parent,
                    #facts::NO_PARENT[#i],
                )
            },
        );
        if let Some((k, kind)) = cx.tree.workflow_parent(i) {
            let kind = kind.keyword();
            check(
                format_ident!("{}_does_not_transfer_to_its_workflow", snake, span = span),
                quote_spanned! {span=>
                    #p::check::workflow_child(
                        #flow_str,
                        Self::AGENTS[#i],
                        #facts::TRANSFERS[#i],
                        Self::AGENTS[#k],
                        #kind,
                    )
                },
            );
        }
    }
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        impl #flow {
            #consts
        }

        #uses
    }
}

/// `{Flow}Agent`: one variant per agent.
fn agent_enum_items(cx: &Cx<'_>, agent_enum: &Ident, vis: &syn::Visibility) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let n = cx.tree.nodes.len();
    let variants: Vec<Ident> = (0..n).map(|i| cx.variant(i)).collect();
    let docs: Vec<String> = cx
        .tree
        .nodes
        .iter()
        .map(|node| format!("The agent of node `{}`.", node.written))
        .collect();
    let parents: Vec<TokenStream> = cx
        .tree
        .nodes
        .iter()
        .map(|node| match node.parent {
            Some(k) => {
                let v = &variants[k];
                quote!(::core::option::Option::Some(Self::#v))
            }
            None => quote!(::core::option::Option::None),
        })
        .collect();
    let children: Vec<TokenStream> = cx
        .tree
        .nodes
        .iter()
        .map(|node| {
            let vs = node.children.iter().map(|&c| &variants[c]);
            quote!(&[#(Self::#vs),*])
        })
        .collect();
    let enum_doc =
        format!("The agents of flow [`{flow}`]; `Display` and `FromStr` use the agents' names.");
    let indices = 0..n;
    quote! {
        #[doc = #enum_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
        #[allow(dead_code)]
        #[repr(usize)]
        #vis enum #agent_enum {
            #( #[doc = #docs] #variants = #indices, )*
        }

        #[allow(dead_code)]
        impl #agent_enum {
            /// Every agent, depth first from the root.
            pub const ALL: &'static [Self] = &[#(Self::#variants),*];

            /// The agent's name.
            pub const fn name(self) -> &'static str {
                #flow::AGENTS[self as usize]
            }

            /// The names of the agents from the root down to this one.
            pub const fn path(self) -> &'static [&'static str] {
                #flow::PATHS[self as usize].1
            }

            /// The agent's parent in the flow, if it is not the root.
            pub const fn parent(self) -> ::core::option::Option<Self> {
                match self {
                    #( Self::#variants => #parents, )*
                }
            }

            /// The agent's sub-agents, in order.
            pub const fn children(self) -> &'static [Self] {
                match self {
                    #( Self::#variants => #children, )*
                }
            }
        }

        #[automatically_derived]
        impl ::core::fmt::Display for #agent_enum {
            fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                __f.write_str(self.name())
            }
        }

        #[automatically_derived]
        impl ::core::str::FromStr for #agent_enum {
            type Err = #p::UnknownAgent;
            fn from_str(__s: &str) -> ::core::result::Result<Self, Self::Err> {
                let mut __i = 0;
                while __i < Self::ALL.len() {
                    if Self::ALL[__i].name() == __s {
                        return ::core::result::Result::Ok(Self::ALL[__i]);
                    }
                    __i += 1;
                }
                ::core::result::Result::Err(#p::UnknownAgent {
                    flow: #flow::NAME,
                    name: ::core::convert::From::from(__s),
                    known: #flow::AGENTS,
                })
            }
        }
    }
}

/// `{Flow}{Node}Target`: for each node, the agents it may transfer to in this flow.
fn target_enums(cx: &Cx<'_>, agent_enum: &Ident, vis: &syn::Visibility) -> TokenStream {
    let p = &cx.p;
    let flow = cx.flow;
    let mut out = TokenStream::new();
    for (i, node) in cx.tree.nodes.iter().enumerate() {
        if node.workflow().is_some() {
            continue; // a workflow runs its sub-agents; it never transfers
        }
        let targets = cx.targets(i);
        if targets.is_empty() {
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
            #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
            #[allow(dead_code)]
            #vis enum #ident {
                #( #[doc = #docs] #variants, )*
            }

            #[allow(dead_code)]
            impl #ident {
                /// Every target, sub-agents first.
                pub const ALL: &'static [Self] = &[#(Self::#variants),*];

                /// The target as an agent of the flow.
                pub const fn agent(self) -> #agent_enum {
                    match self {
                        #( Self::#variants => #agent_enum::#variants, )*
                    }
                }

                /// The name of the agent this target transfers to.
                pub const fn as_str(self) -> &'static str {
                    self.agent().name()
                }
            }

            #target_impls

            #[automatically_derived]
            impl ::core::convert::From<#ident> for #agent_enum {
                fn from(__target: #ident) -> Self {
                    __target.agent()
                }
            }
        });
    }
    out
}

/// The builder's part of a flow's expansion.
struct Builder {
    /// The builder type and its node markers, in the flow's module.
    in_module: TokenStream,
    /// Its setters and `build()`, which name the agents' types, at the call site.
    at_call_site: TokenStream,
    /// Whether some node's agent is given at run time.
    has_given: bool,
}

/// The builder type: a typed slot per node whose agent is given at run time; `build()` lowers
/// the tree.
fn builder_items(cx: &Cx<'_>, builder: &Ident, vis: &syn::Visibility) -> Builder {
    let p = &cx.p;
    let flow = cx.flow;
    let flow_str = &cx.flow_str;
    let given: Vec<usize> = cx.tree.given().map(|(i, _)| i).collect();
    let k = given.len();
    // The span of the facade's path (`$crate` of `flow!`), for the tokens a compile error
    // notes: rustc then says the error "originates in the macro `flow`".
    let krate_span = p
        .clone()
        .into_iter()
        .next()
        .map_or_else(proc_macro2::Span::call_site, |t| t.span());
    let params: Vec<Ident> = (0..k).map(|j| format_ident!("S{}", j)).collect();
    let fields: Vec<Ident> = given
        .iter()
        .map(|&i| {
            let node = &cx.tree.nodes[i];
            ident(&setter(&node.label.to_string()), node.label.span())
        })
        .collect();
    let slot_tys: Vec<TokenStream> = given
        .iter()
        .map(|&i| match cx.tree.nodes[i].ty() {
            Some(ty) => quote!(#ty),
            None => quote!(#p::DynAgent),
        })
        .collect();
    // Per slot, a marker type named after its setter, in the module `{Flow}Nodes`: `build()`
    // asks `DynGiven<Flow, marker>` (or `RuntimeGiven`) of the slot, so a slot still `Unset`
    // fails to compile naming its node. (A per-node trait with its own message would need
    // `#[diagnostic::...]` in generated code, which a `#[no_implicit_prelude]` module cannot
    // resolve.)
    let nodes_mod = format_ident!("{}Nodes", flow);
    let doc = if k == 0 {
        format!(
            "A builder of [`{flow}`]. Every agent of this flow is built by the flow itself: call \
             `build()`."
        )
    } else {
        let list: Vec<String> = given
            .iter()
            .map(|&i| format!("`{}`", cx.tree.nodes[i].written))
            .collect();
        format!(
            "A builder of [`{flow}`]: call one setter per node whose agent is given at run \
             time ({}), then `build()`. Each type parameter is `Unset` until its setter is \
             called.",
            list.join(", ")
        )
    };

    let nodes_doc = format!(
        "Marker types naming the `dyn` and `runtime` nodes of [`{flow}`] in the messages of its \
         builder."
    );
    let given_defs = quote_spanned! {krate_span=>
        #[doc = #nodes_doc]
        #[doc(hidden)]
        #[allow(non_snake_case)]
        #vis mod #nodes_mod {
            #(
                #[allow(non_camel_case_types)]
                #[derive(::core::fmt::Debug)]
                pub struct #fields;
            )*
        }
    };

    let struct_def = if k == 0 {
        quote! {
            #[doc = #doc]
            #[must_use]
            #[derive(::core::fmt::Debug)]
            #[allow(dead_code)]
            #vis struct #builder {
                _private: (),
            }

            #[allow(dead_code)]
            impl #builder {
                fn __agentflow_new() -> Self {
                    #builder { _private: () }
                }
            }
        }
    } else {
        quote! {
            #[doc = #doc]
            #[must_use]
            #[derive(::core::fmt::Debug)]
            #[allow(dead_code)]
            #vis struct #builder<#(#params = #p::Unset),*> {
                #(pub(super) #fields: #params,)*
            }

            #given_defs

            #[allow(dead_code)]
            impl #builder {
                fn __agentflow_new() -> Self {
                    #builder { #(#fields: #p::Unset,)* }
                }
            }
        }
    };

    // The rest is written at the call site (it names the agents' types), naming the module's
    // items by path: a second flow of the same name must not make them ambiguous.
    let m = &cx.m;
    let builder = &quote!(#m::#builder);
    let flow = &quote!(#m::#flow);
    let nodes_mod = &quote!(#m::#nodes_mod);

    let mut setters = TokenStream::new();
    for (j, &i) in given.iter().enumerate() {
        let node = &cx.tree.nodes[i];
        let field = &fields[j];
        let others: Vec<&Ident> = params
            .iter()
            .enumerate()
            .filter(|(m, _)| *m != j)
            .map(|(_, x)| x)
            .collect();
        let before: Vec<TokenStream> = params
            .iter()
            .enumerate()
            .map(|(m, x)| {
                if m == j {
                    quote!(#p::Unset)
                } else {
                    quote!(#x)
                }
            })
            .collect();
        let slot_ty = &slot_tys[j];
        let after: Vec<TokenStream> = params
            .iter()
            .enumerate()
            .map(|(m, x)| {
                if m == j {
                    quote!(#p::Set<#slot_ty>)
                } else {
                    quote!(#x)
                }
            })
            .collect();
        let rest: Vec<&Ident> = fields
            .iter()
            .enumerate()
            .filter(|(m, _)| *m != j)
            .map(|(_, f)| f)
            .collect();
        let setter = if let Kind::Dyn = node.kind {
            let name = node.label.to_string();
            let (target_ty, target) = if cx.targets(i).is_empty() {
                (quote!(#p::NoTarget), "`NoTarget`: none".to_owned())
            } else {
                let t = cx.target_enum(i);
                (quote!(#m::#t), format!("[`{t}`]"))
            };
            let doc = format!(
                "Gives the `dyn` node `{name}` its agent: the closure is called with the node (its \
                 name and its legal transfer targets, {target}) and returns the agent, which \
                 takes its name from the node, as in `ChatModelAgent::builder(node, model)`. \
                 `build()` checks that the agent carries the node's name."
            );
            quote! {
                #[doc = #doc]
                pub fn #field<__A: #p::Agent>(
                    self,
                    __agentflow_make: impl ::core::ops::FnOnce(#p::FlowNode<#target_ty>) -> __A,
                ) -> #builder<#(#after),*> {
                    let __agent = __agentflow_make(#p::FlowNode::__new(
                        #flow_str,
                        #name,
                        <#target_ty as #p::TransferTarget>::ALL,
                    ));
                    #builder {
                        #field: #p::Set(#p::DynAgent(#p::Arc::new(__agent))),
                        #(#rest: self.#rest,)*
                    }
                }
            }
        } else {
            let doc = format!("Gives node `{}` its agent.", node.written);
            quote! {
                #[doc = #doc]
                pub fn #field(self, __agent: #slot_ty) -> #builder<#(#after),*> {
                    #builder {
                        #field: #p::Set(__agent),
                        #(#rest: self.#rest,)*
                    }
                }
            }
        };
        setters.extend(quote! {
            #[allow(dead_code)]
            impl<#(#others),*> #builder<#(#before),*> {
                #setter
            }
        });
    }

    // The lowering: bottom-up `set_sub_agents`, as written by hand.
    let mut takes = TokenStream::new();
    for (j, &i) in given.iter().enumerate() {
        let field = &fields[j];
        let node = &cx.tree.nodes[i];
        let slot = slot_local(field);
        let into = match node.kind {
            Kind::Dyn => quote!(#p::DynGiven::<#flow, #nodes_mod::#field>::into_agent),
            _ => quote!(#p::RuntimeGiven::<#flow, #nodes_mod::#field, _>::into_agent),
        };
        takes.extend(quote! {
            let #slot = #into(self.#field);
        });
        if let Kind::Dyn = node.kind {
            let name = node.label.to_string();
            takes.extend(quote! {
                if #p::Agent::name(&*#slot.0) != #name {
                    return ::core::result::Result::Err(#p::FlowError::NodeNameMismatch {
                        flow: ::core::convert::From::from(#flow_str),
                        node: ::core::convert::From::from(#name),
                        agent: ::core::convert::From::from(#p::Agent::name(&*#slot.0)),
                    });
                }
            });
        }
    }
    let tree_expr = lower_node(cx, 0, &given, &fields);
    let bounds: Vec<TokenStream> = params
        .iter()
        .zip(&given)
        .zip(&fields)
        .map(|((s, &i), field)| match cx.tree.nodes[i].ty() {
            Some(t) => {
                quote_spanned!(krate_span=> #s: #p::RuntimeGiven<#flow, #nodes_mod::#field, #t>)
            }
            None => quote_spanned!(krate_span=> #s: #p::DynGiven<#flow, #nodes_mod::#field>),
        })
        .collect();
    let build_doc = "Builds the flow's tree: bottom-up, each agent's node given its options and \
                     then its sub-agents, exactly as `set_sub_agents` calls written by hand \
                     would.\n\n# Errors\n\nIf a `dyn` node's agent has another name than the \
                     node, or an agent's `OnSubAgents` hook refuses its place in the tree.";
    let build = quote! {
        #[allow(dead_code)]
        impl<#(#params),*> #builder<#(#params),*> {
            #[doc = #build_doc]
            pub fn build(self) -> ::core::result::Result<#flow, #p::FlowError>
            where
                #(#bounds,)*
            {
                #takes
                ::core::result::Result::Ok(#flow { flow: #tree_expr })
            }
        }
    };
    Builder {
        in_module: struct_def,
        at_call_site: quote!(#setters #build),
        has_given: k > 0,
    }
}

/// The local holding a builder slot's agent in `build()`; prefixed so that no agent's unit
/// struct (which a plain `let refund` would collide with) can clash with it.
fn slot_local(field: &Ident) -> Ident {
    format_ident!("__agentflow_slot_{}", field)
}

/// The expression building node `i` and its subtree.
fn lower_node(cx: &Cx<'_>, i: usize, given: &[usize], fields: &[Ident]) -> TokenStream {
    let p = &cx.p;
    let node = &cx.tree.nodes[i];
    let agent = match &node.kind {
        Kind::Static(ty) => {
            quote_spanned!(node.span=> #p::FlowAgent::new(<#ty as #p::FlowBuilt>::instance()))
        }
        Kind::Given(_) => {
            let j = given.iter().position(|&g| g == i).unwrap_or(0);
            let slot = slot_local(&fields[j]);
            quote!(#p::FlowAgent::new(#slot))
        }
        Kind::Dyn => {
            let j = given.iter().position(|&g| g == i).unwrap_or(0);
            let slot = slot_local(&fields[j]);
            quote!(#p::FlowAgent::from_arc(#slot.0))
        }
        Kind::Workflow(kind) => {
            let name = node.label.to_string();
            let workflow = match kind {
                WorkflowKind::Sequential => quote!(#p::Sequential::new(#name)),
                WorkflowKind::Parallel => quote!(#p::Parallel::new(#name)),
                WorkflowKind::Loop(Some(n)) => quote!(#p::Loop::new(#name, #n)),
                WorkflowKind::Loop(None) => quote!(#p::Loop::unbounded(#name)),
            };
            match &node.description {
                Some(d) if !d.is_empty() => {
                    quote!(#p::FlowAgent::new(#workflow.with_description(#d)))
                }
                _ => quote!(#p::FlowAgent::new(#workflow)),
            }
        }
    };
    let barred = cx.barred(i);
    let mut node_expr = quote!(#agent.disallow_transfer_to_parent(#barred));
    if node.opts.skip_transfer_messages {
        node_expr.extend(quote!(.skip_transfer_messages(true)));
    }
    if let Some(c) = &node.opts.context {
        let policy = match c {
            ContextOpt::Rewrite => quote!(#p::ContextPolicy::Rewrite),
            ContextOpt::UserInputOnly => quote!(#p::ContextPolicy::UserInputOnly),
            ContextOpt::LastN(n) => quote!(#p::ContextPolicy::LastN(#n)),
            ContextOpt::Custom(path) => quote!(#p::ContextPolicy::custom(#path)),
        };
        node_expr.extend(quote!(.context(#policy)));
    }
    if node.children.is_empty() {
        node_expr
    } else {
        let children = node
            .children
            .iter()
            .map(|&c| lower_node(cx, c, given, fields));
        quote!(#p::set_sub_agents(#node_expr, [#(#children),*])?)
    }
}
