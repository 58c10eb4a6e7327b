//! `{Flow}Builder`: the builder type with a typed slot per node whose agent is given at run
//! time, its setters, and `build()`, which takes the slots and lowers the tree (see `node`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::cx::Cx;
use super::node::{lower_node, slot_local};
use crate::flow::tree::Kind;
use crate::names::{ident, setter};

/// The builder's part of a flow's expansion.
pub(super) struct Builder {
    /// The builder type and its node markers, in the flow's module.
    pub(super) in_module: TokenStream,
    /// Its setters and `build()`, which name the agents' types, at the call site.
    pub(super) at_call_site: TokenStream,
    /// Whether some node's agent is given at run time.
    pub(super) has_given: bool,
}

/// The builder type: a typed slot per node whose agent is given at run time; `build()` lowers
/// the tree.
pub(super) fn builder_items(cx: &Cx<'_>, builder: &Ident, vis: &syn::Visibility) -> Builder {
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
    // The nodes the flow builds itself: each gets a stand-in setter (hidden) whose call fails to
    // compile saying the node is not `dyn` or `runtime` (only when the builder has setters).
    // Each is named in that message by its agent type (printed as written in scope), or a
    // workflow node by a marker type.
    let mut built: Vec<(Ident, Option<syn::Path>)> = Vec::new();
    if k > 0 {
        for (i, node) in cx.tree.nodes.iter().enumerate() {
            if !given.contains(&i) {
                let method = ident(&setter(&node.label.to_string()), node.label.span());
                built.push((method, node.ty().cloned()));
            }
        }
    }
    let built_markers: Vec<&Ident> = built
        .iter()
        .filter(|(_, ty)| ty.is_none())
        .map(|(m, _)| m)
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
            #(
                #[allow(non_camel_case_types)]
                #[derive(::core::fmt::Debug)]
                pub struct #built_markers;
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
        let param = &params[j];
        let setter = if let Kind::Dyn { remote } = node.kind {
            let name = node.label.to_string();
            let kind = if remote { "remote" } else { "dyn" };
            let (target_ty, target) = if cx.targets(i).is_empty() {
                (quote!(#p::NoTarget), "`NoTarget`: none".to_owned())
            } else {
                let t = cx.target_enum(i);
                (quote!(#m::#t), format!("[`{t}`]"))
            };
            let skills = if node.opts.skills.is_empty() {
                TokenStream::new()
            } else {
                let array = crate::skills::lower(&node.opts.skills, p);
                quote!(.__with_skills(#array))
            };
            let doc = format!(
                "Gives the `{kind}` node `{name}` its agent: the closure is called with the node (its \
                 name and its legal transfer targets, {target}) and returns the agent, which \
                 takes its name from the node, as in `ChatModelAgent::builder(node, model)`. \
                 `build()` checks that the agent carries the node's name."
            );
            quote! {
                #[doc = #doc]
                pub fn #field<__M, __A>(self, __agentflow_make: __M) -> #builder<#(#after),*>
                where
                    #param: #p::NotGiven<#flow, #nodes_mod::#field>,
                    __M: #p::NodeMaker<#flow, #nodes_mod::#field, #target_ty, __A>,
                    __A: #p::NodeAgent<#flow, #nodes_mod::#field>,
                {
                    let __agent = __agentflow_make(#p::FlowNode::__new(
                        #flow_str,
                        #name,
                        <#target_ty as #p::TransferTarget>::ALL,
                    )#skills);
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
                pub fn #field(self, __agent: #slot_ty) -> #builder<#(#after),*>
                where
                    #param: #p::NotGiven<#flow, #nodes_mod::#field>,
                {
                    #builder {
                        #field: #p::Set(__agent),
                        #(#rest: self.#rest,)*
                    }
                }
            }
        };
        setters.extend(setter);
    }
    for (field, ty) in &built {
        let marker = match ty {
            Some(ty) => quote!(#ty),
            None => quote!(#nodes_mod::#field),
        };
        setters.extend(quote! {
            #[doc(hidden)]
            pub fn #field<__X>(self, _: __X) -> Self
            where
                __X: #p::NoSetter<#flow, #marker>,
            {
                self
            }
        });
    }
    let setters = if k == 0 {
        TokenStream::new()
    } else {
        quote! {
        #[allow(dead_code)]
        impl<#(#params),*> #builder<#(#params),*> {
            #setters
        }
        }
    };

    // The lowering: bottom-up `set_sub_agents`, as written by hand.
    let mut takes = TokenStream::new();
    for (j, &i) in given.iter().enumerate() {
        let field = &fields[j];
        let node = &cx.tree.nodes[i];
        let slot = slot_local(field);
        let into = match node.kind {
            Kind::Dyn { remote: false } => {
                quote!(#p::DynGiven::<#flow, #nodes_mod::#field>::into_agent)
            }
            Kind::Dyn { remote: true } => {
                quote!(#p::RemoteGiven::<#flow, #nodes_mod::#field>::into_agent)
            }
            _ => quote!(#p::RuntimeGiven::<#flow, #nodes_mod::#field, _>::into_agent),
        };
        takes.extend(quote! {
            let #slot = #into(self.#field);
        });
        if let Kind::Dyn { .. } = node.kind {
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
    // The flow's doc comment describes the whole flow.
    let tree_expr = match &cx.summary {
        Some(summary) => quote!(#p::FlowAgent::with_flow_description(#tree_expr, #summary)),
        None => tree_expr,
    };
    let bounds: Vec<TokenStream> = params
        .iter()
        .zip(&given)
        .zip(&fields)
        .map(|((s, &i), field)| match cx.tree.nodes[i].ty() {
            Some(t) => {
                quote_spanned!(krate_span=> #s: #p::RuntimeGiven<#flow, #nodes_mod::#field, #t>)
            }
            None if matches!(cx.tree.nodes[i].kind, Kind::Dyn { remote: true }) => {
                quote_spanned!(krate_span=> #s: #p::RemoteGiven<#flow, #nodes_mod::#field>)
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
            // Agent types are named in parentheses (see `lower_node`).
            #[allow(unused_parens)]
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
