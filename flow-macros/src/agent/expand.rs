//! Tokens out for `#[agent]`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, ItemImpl, ItemStruct, Type, Visibility};

use super::attr::AgentArgs;
use crate::ctxt::Ctxt;
use crate::names::{doc_text, upper_camel};

/// `#[agent] async fn triage(cx: &AgentContext, input: AgentInput) -> R`.
pub(crate) fn agent_fn(args: &AgentArgs, mut f: ItemFn, cx: &mut Ctxt) -> TokenStream {
    let krate = args.krate();
    let p = private_alias();
    let import = import_private(&krate);
    let ident = f.sig.ident.clone();
    let vis = f.vis.clone();

    let sig_ok = check_signature(&f, cx);
    let (docs, others): (Vec<_>, Vec<_>) =
        f.attrs.drain(..).partition(|a| a.path().is_ident("doc"));
    f.attrs = others;
    f.vis = Visibility::Inherited;
    let boxed = sig_ok.then(|| boxed_body(&p, &f)).flatten();
    if boxed.is_none() {
        // The body is async because the macro needs it to be, `.await` or not.
        f.attrs
            .push(syn::parse_quote!(#[allow(clippy::unused_async)]));
    }

    let facts = spec_impl(args, &quote!(#ident), &ident, &docs, cx);
    let (transfers, targets) = transfer_enum(args, &vis, &quote!(#ident), &ident, cx);

    let by_ref = matches!(
        f.sig.inputs.first(),
        Some(FnArg::Typed(t)) if matches!(&*t.ty, Type::Reference(r) if r.mutability.is_none())
    );
    let run_body = if let Some(boxed) = boxed {
        // The common shape, `(cx: &AgentContext[, input]) -> R` with `R` nameable: the body
        // becomes a plain fn returning it boxed, and the runtime's `run_boxed` runs it.
        boxed
    } else if sig_ok && by_ref {
        // `(cx: &AgentContext[, input])` of another shape (a return type that cannot be named
        // here, attributes): the glue around the body is a generic fn of the runtime,
        // type-checked once there rather than once per agent.
        let ret_span = output_span(&f.sig.output);
        // The body's output type, named when the signature spells it out in full: the outcome
        // bound is then checked against one known type, not solved while the output is still
        // unknown (which weighs it against every `IntoOutcome` impl of the crate, per agent).
        let out = match &f.sig.output {
            syn::ReturnType::Default => quote!(()),
            syn::ReturnType::Type(_, ty) if nameable(ty) => quote!(#ty),
            syn::ReturnType::Type(..) => quote!(_),
        };
        let markers = quote_spanned!(ret_span=> #p::PhantomData::<Self>, #p::PhantomData::<#out>,);
        let call = body_call(
            ret_span,
            f.sig.inputs.len() == 2,
            [&quote!(#p::run_body), &quote!(#p::run_body_cx)],
            &markers,
            &ident,
        );
        quote! {
            #f
            #call
        }
    } else if sig_ok {
        let call_args = call_args(f.sig.inputs.iter(), f.sig.inputs.len());
        let ret_span = output_span(&f.sig.output);
        let into = quote_spanned!(ret_span=> <_ as #p::IntoOutcome<Self>>::into_outcome);
        quote! {
            #f
            #p::generate(__agentflow_run, move |__agentflow_cx| async move {
                let __agentflow_cx = #p::AgentContext::__start::<Self>(__agentflow_cx, __agentflow_resume);
                let __agentflow_outcome = #ident(#call_args).await;
                #into(__agentflow_outcome, &__agentflow_cx)
            })
        }
    } else {
        quote! {
            let _ = (__agentflow_run, __agentflow_resume);
            #p::EventStream::empty()
        }
    };

    let agent_impl = agent_trait_impl(&p, &quote!(#ident), &run_body);
    quote! {
        #(#docs)*
        // No derives: an agent is named by its `name()`, and a unit struct is made again by
        // naming it; each impl of a trait the standard library implements widely (`Debug`,
        // `Clone`, `Copy`) costs compile time per agent (W7 in BENCHMARKS.md).
        #[allow(non_camel_case_types)]
        #vis struct #ident;

        #transfers

        const _: () = {
            #import
            #facts
            #targets

            #[automatically_derived]
            impl #p::FlowBuilt for #ident {
                fn instance() -> Self {
                    #ident
                }
            }

            #agent_impl
        };
    }
}

/// `#[agent(...)] struct Lookup { .. }`: the facts; the behaviour comes from `#[agent] impl`.
pub(crate) fn agent_struct(args: &AgentArgs, s: ItemStruct, cx: &mut Ctxt) -> TokenStream {
    let krate = args.krate();
    let ident = s.ident.clone();
    if !s.generics.params.is_empty() {
        cx.error_at(
            &s.generics,
            format!(
                "agent `{ident}` cannot be generic: an agent type has one fixed name and set of \
                 transfers; make a concrete struct (it may hold a generic field's concrete type)"
            ),
        );
        return quote!(#s);
    }
    let facts = spec_impl(args, &quote!(#ident), &ident, &s.attrs, cx);
    let (transfers, targets) = transfer_enum(args, &s.vis, &quote!(#ident), &ident, cx);
    let p = private_alias();
    let import = import_private(&krate);
    let built = match &s.fields {
        syn::Fields::Unit => quote! {
            #[automatically_derived]
            impl #p::FlowBuilt for #ident {
                fn instance() -> Self {
                    #ident
                }
            }
        },
        // No `FlowBuilt` (whose `Agent` supertrait checks the same): say here, once, if the
        // `#[agent] impl` with the body is missing.
        _ => quote! {
            const _: () = {
            #import
                const fn __agentflow_is_agent<T: ?::core::marker::Sized + #p::Agent>() {}
                __agentflow_is_agent::<#ident>()
            };
        },
    };
    quote! {
        #s
        #transfers
        const _: () = {
            #import
            #facts
            #targets
            #built
        };
    }
}

/// The generated `run` of an `#[agent] impl`, or `None` (errors recorded) if the impl block
/// does not hold a usable `async fn run(&self, cx[, input])`.
fn run_body(i: &ItemImpl, self_ty: &Type, p: &TokenStream, cx: &mut Ctxt) -> Option<TokenStream> {
    if let Some((_, path, _)) = &i.trait_ {
        cx.error_at(
            path,
            "#[agent] goes on the inherent impl block of a struct agent (`impl Lookup { async fn \
             run(..) }`), not on a trait impl",
        );
        return None;
    }
    if !i.generics.params.is_empty() {
        cx.error_at(&i.generics, "the impl block of an agent cannot be generic");
        return None;
    }
    let run = i.items.iter().find_map(|item| match item {
        syn::ImplItem::Fn(f) if f.sig.ident == "run" => Some(f),
        _ => None,
    });
    let Some(run) = run else {
        cx.error_at(
            self_ty,
            format!(
                "the #[agent] impl of `{}` has no `run` method; add \
                 `async fn run(&self, cx: &AgentContext, input: AgentInput) -> AgentResult` (or \
                 returning the agent's transfer enum)",
                quote!(#self_ty)
            ),
        );
        return None;
    };
    let mut ok = true;
    if run.sig.asyncness.is_none() {
        cx.error_at(
            run.sig.fn_token,
            "the `run` method of an #[agent] impl must be async: write `async fn run(&self, ...)`",
        );
        ok = false;
    }
    match run.sig.inputs.first() {
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none() => {}
        _ => {
            cx.error_at(
                &run.sig.inputs,
                "the `run` method of an #[agent] impl takes `&self` first: \
                 `async fn run(&self, cx: &AgentContext, input: AgentInput)`",
            );
            ok = false;
        }
    }
    let rest = run.sig.inputs.len().saturating_sub(1);
    if !(1..=2).contains(&rest) {
        cx.error_at(
            &run.sig.inputs,
            "the `run` method of an #[agent] impl takes `&self`, the context and optionally the \
             input: `async fn run(&self, cx: &AgentContext, input: AgentInput)`",
        );
        ok = false;
    }
    if !ok {
        return None;
    }
    let call_args = call_args(run.sig.inputs.iter().skip(1), rest);
    let ret_span = output_span(&run.sig.output);
    let into = quote_spanned!(ret_span=> <_ as #p::IntoOutcome<Self>>::into_outcome);
    Some(quote! {
        #p::generate(__agentflow_run, move |__agentflow_cx| async move {
            let __agentflow_cx = #p::AgentContext::__start::<Self>(__agentflow_cx, __agentflow_resume);
            let __agentflow_outcome = Self::run(&*self, #call_args).await;
            #into(__agentflow_outcome, &__agentflow_cx)
        })
    })
}

/// `#[agent] impl Lookup { async fn run(&self, cx: &AgentContext, input: AgentInput) -> R }`.
pub(crate) fn agent_impl(args: &AgentArgs, mut i: ItemImpl, cx: &mut Ctxt) -> TokenStream {
    for item in &mut i.items {
        if let syn::ImplItem::Fn(f) = item {
            if f.sig.ident == "run" {
                // Async because the macro needs it to be, `.await` or not.
                f.attrs
                    .push(syn::parse_quote!(#[allow(clippy::unused_async)]));
            }
        }
    }
    let krate = args.krate();
    let p = private_alias();
    let import = import_private(&krate);
    let self_ty = &i.self_ty;
    if let Some(span) = args.first_item_option() {
        cx.error(
            span,
            "on an impl block #[agent] takes only `crate = path`; put `name`, `description`, \
             `transfers` and `no_parent` on the struct's #[agent(...)]",
        );
    }
    let body = run_body(&i, self_ty, &p, cx).unwrap_or_else(|| {
        // A stub, so the type still is an agent and later errors stay about real mistakes.
        quote! {
            let _ = (self, __agentflow_run, __agentflow_resume);
            #p::EventStream::empty()
        }
    });
    let agent_impl = agent_trait_impl(&p, &quote!(#self_ty), &body);
    quote! {
        #i
        const _: () = {
            #import
            #agent_impl
        };
    }
}

/// `impl AgentBody for TY`: `body` as the run (the runtime's one `Agent` impl over `AgentBody`
/// reads the name and description from the type's `AgentSpec` and runs `body` for a run and a
/// resume); `body` sees `self`, `__agentflow_run`, `__agentflow_input` and
/// `__agentflow_resume` (empty for a plain run).
fn agent_trait_impl(p: &TokenStream, ty: &TokenStream, body: &TokenStream) -> TokenStream {
    quote! {
        #[automatically_derived]
        impl #p::AgentBody for #ty {
            fn run_body(
                self: #p::Arc<Self>,
                __agentflow_run: #p::RunContext,
                __agentflow_input: #p::AgentInput,
                __agentflow_resume: #p::ResumeInfo,
            ) -> #p::EventStream {
                #body
            }
        }
    }
}

/// The body of an agent fn of the common shape, `async fn NAME(cx: &AgentContext[, input: T])
/// -> R` with `R` and `T` nameable and no attributes but lints, as a plain fn returning its
/// body boxed, then the call of the runtime's `run_boxed` (see its module): `None` for any
/// other shape, which keeps the `async fn`.
fn boxed_body(p: &TokenStream, f: &ItemFn) -> Option<TokenStream> {
    let lints = ["allow", "expect", "warn", "deny", "forbid"];
    if !f
        .attrs
        .iter()
        .all(|a| lints.iter().any(|l| a.path().is_ident(l)))
    {
        return None;
    }
    let out = match &f.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ty) if nameable(ty) => Some(quote!(#ty)),
        syn::ReturnType::Type(..) => return None,
    };
    // The context's lifetime stays elided (the input, nameable, has none), so the body's
    // future borrows it as `'_` and messages show the context as the user wrote it.
    match f.sig.inputs.iter().next() {
        Some(FnArg::Typed(t)) => match &*t.ty {
            Type::Reference(r) if r.mutability.is_none() && r.lifetime.is_none() => {}
            _ => return None,
        },
        _ => return None,
    }
    match f.sig.inputs.iter().nth(1) {
        None => {}
        Some(FnArg::Typed(t)) if nameable(&t.ty) => {}
        Some(_) => return None,
    }
    // Written out as tokens (not a copy of the fn, edited and parsed again): the macro runs
    // unoptimized in a debug build, once per agent.
    let attrs = &f.attrs;
    let ident = &f.sig.ident;
    let inputs = &f.sig.inputs;
    let block = &f.block;
    let ret_span = output_span(&f.sig.output);
    let (alias, decl, body) = match out {
        // A body without a return type returns `()`: no alias to name it once (one item less
        // per agent for rustc, in a crate of many agents); its value is still bound to `()`
        // first, so a body that yields a value is rustc's plain mismatch at the value.
        None => {
            let unit = quote_spanned!(ret_span=> ());
            let body = quote_spanned!(ret_span=> {
                #p::body_future(#p::PhantomData::<()>, async move {
                    let __agentflow_out: () = #block;
                    __agentflow_out
                })
            });
            (unit, TokenStream::new(), body)
        }
        Some(out) => {
            // The return type is written once, as an alias the three uses name: a type that
            // does not resolve (a transfer enum the agent does not declare) is then one error,
            // not three.
            let alias = quote_spanned!(ret_span=> __AgentflowOut);
            // The block's value is bound to the declared type first, so a wrong value (a
            // payload variant written without its payload) is rustc's plain type mismatch at
            // the value, with its fix, not one about the future's output.
            let body = quote_spanned!(ret_span=> {
                #p::body_future(#p::PhantomData::<#alias>, async move {
                    let __agentflow_out: #alias = #block;
                    __agentflow_out
                })
            });
            let decl = quote! {
                type #alias = #out;
            };
            (alias, decl, body)
        }
    };
    let output = quote_spanned!(ret_span=> -> #p::BodyFuture<'_, #alias>);
    let call = body_call(
        ret_span,
        f.sig.inputs.len() == 2,
        [
            &quote!(#p::run_boxed_input::<Self, #alias>),
            &quote!(#p::run_boxed::<Self, #alias>),
        ],
        &TokenStream::new(),
        ident,
    );
    Some(quote! {
        #decl
        #(#attrs)*
        #[allow(clippy::let_and_return, clippy::let_unit_value)]
        fn #ident(#inputs) #output #body
        #call
    })
}

/// The call of the runtime fn that runs an agent fn's body `ident`, spanned at its return type:
/// `callees[0]` when the body takes the input, else `callees[1]` (which gets no input), each
/// given `lead` (markers, or nothing) before the run, the input and the resume info.
fn body_call(
    ret_span: Span,
    takes_input: bool,
    callees: [&TokenStream; 2],
    lead: &TokenStream,
    ident: &Ident,
) -> TokenStream {
    let [with_input, cx_only] = callees;
    if takes_input {
        quote_spanned!(ret_span=> #with_input(
            #lead
            __agentflow_run,
            __agentflow_input,
            __agentflow_resume,
            #ident,
        ))
    } else {
        // The input is dropped by a call, not `let _ = ..`, which `let_underscore_drop` in the
        // user's crate would flag at their return type.
        quote_spanned!(ret_span=> {
            ::core::mem::drop(__agentflow_input);
            #cx_only(#lead __agentflow_run, __agentflow_resume, #ident)
        })
    }
}

/// The facade's `__private` as the generated items name it: `__agentflow`, which
/// [`import_private`] brings into each `const _: () = { .. }` block that holds them. A short
/// path instead of `::agentweave::__private` in every item: fewer tokens for the compiler to
/// take from the macro and parse, 200 times over in a 200-agent flow.
fn private_alias() -> TokenStream {
    quote!(__agentflow)
}

/// `use KRATE::__private as __agentflow;`, at the top of each generated `const _` block.
fn import_private(krate: &impl ToTokens) -> TokenStream {
    quote!(use #krate::__private as __agentflow;)
}

/// Whether a return type can be written outside its fn as it is: no `impl Trait`, no borrowed
/// or elided lifetimes, no `Self`.
fn nameable(ty: &Type) -> bool {
    fn ok(tokens: TokenStream) -> bool {
        tokens.into_iter().all(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i != "impl" && i != "Self",
            proc_macro2::TokenTree::Punct(p) => p.as_char() != '&' && p.as_char() != '\'',
            proc_macro2::TokenTree::Group(g) => ok(g.stream()),
            proc_macro2::TokenTree::Literal(_) => true,
        })
    }
    ok(quote!(#ty))
}

fn output_span(output: &syn::ReturnType) -> Span {
    match output {
        syn::ReturnType::Default => Span::call_site(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    }
}

/// The arguments the generated `run` passes: the context as the parameter takes it
/// (`&cx`, `&mut cx` or a clone), then the input if the body takes it.
fn call_args<'a>(mut params: impl Iterator<Item = &'a FnArg>, count: usize) -> TokenStream {
    let cx_arg = match params.next() {
        Some(FnArg::Typed(t)) => match &*t.ty {
            Type::Reference(r) if r.mutability.is_some() => {
                quote!(&mut { ::core::clone::Clone::clone(&__agentflow_cx) })
            }
            Type::Reference(_) => quote!(&__agentflow_cx),
            _ => quote!(::core::clone::Clone::clone(&__agentflow_cx)),
        },
        _ => quote!(&__agentflow_cx),
    };
    if count == 2 {
        quote!(#cx_arg, __agentflow_input)
    } else {
        quote!(#cx_arg)
    }
}

/// Checks an agent fn's signature; returns whether the body can be called.
fn check_signature(f: &ItemFn, cx: &mut Ctxt) -> bool {
    let ident = &f.sig.ident;
    let mut ok = true;
    if f.sig.asyncness.is_none() {
        cx.error_at(
            f.sig.fn_token,
            format!("agent fn `{ident}` must be async: write `async fn {ident}(...)`"),
        );
        ok = false;
    }
    if !f.sig.generics.params.is_empty() {
        cx.error_at(
            &f.sig.generics,
            format!(
                "agent fn `{ident}` cannot be generic: it becomes one agent type with a fixed \
                 name"
            ),
        );
        ok = false;
    }
    if let Some(FnArg::Receiver(r)) = f.sig.inputs.first() {
        cx.error_at(
            r,
            format!(
                "agent fn `{ident}` takes no `self`; for an agent with state, put #[agent] on a \
                 struct and on its impl block with `async fn run(&self, ...)`"
            ),
        );
        return false;
    }
    if !(1..=2).contains(&f.sig.inputs.len()) {
        let span = if f.sig.inputs.is_empty() {
            f.sig.paren_token.span.join()
        } else {
            f.sig.inputs.span()
        };
        cx.error(
            span,
            format!(
                "agent fn `{ident}` takes the context and optionally the input: \
                 `async fn {ident}(cx: &AgentContext, input: AgentInput)`"
            ),
        );
        ok = false;
    }
    ok
}

/// The `AgentSpec` impl: name, description, declared transfers, `no_parent`.
fn spec_impl(
    args: &AgentArgs,
    ty: &TokenStream,
    ident: &Ident,
    attrs: &[syn::Attribute],
    cx: &mut Ctxt,
) -> TokenStream {
    let p = private_alias();
    let ty_self = ty;
    let name = match &args.name {
        Some(n) => n.value(),
        None => ident.unraw().to_string(),
    };
    let description = match &args.description {
        Some(d) => d.value(),
        None => doc_text(attrs),
    };
    // A transfer to itself is reported by `transfer_enum`; leaving it out here keeps every
    // flow the agent is placed in from reporting it again.
    let targets: Vec<&str> = args
        .transfers
        .iter()
        .flat_map(|(_, t)| t.iter().map(|t| t.name.as_str()))
        .filter(|t| *t != name)
        .collect();
    let no_parent = args.no_parent.is_some();
    let (returns, returns_impl) = match &args.returns {
        Some(out) => {
            let text = quote!(#out).to_string().replace(' ', "");
            (
                quote!(const RETURNS: ::core::option::Option<&'static str> =
                    ::core::option::Option::Some(#text);),
                quote! {
                    #[automatically_derived]
                    impl #p::Returns for #ty {
                        type Output = #out;
                    }
                    #[automatically_derived]
                    impl #p::ResultOf<#ty> for #out {}
                },
            )
        }
        None => (TokenStream::new(), TokenStream::new()),
    };
    let (accepts, accepts_impl) = match &args.accepts {
        Some(ty) => {
            let text = quote!(#ty).to_string().replace(' ', "");
            (
                quote! {
                    const ACCEPTS: ::core::option::Option<&'static str> =
                        ::core::option::Option::Some(#text);
                    const PAYLOAD: ::core::option::Option<fn() -> #p::Payload> =
                        ::core::option::Option::Some(#p::Payload::of::<#ty>);
                },
                quote! {
                    #[automatically_derived]
                    impl #p::Accepts for #ty_self {
                        type Payload = #ty;
                    }
                },
            )
        }
        None => (TokenStream::new(), TokenStream::new()),
    };
    // The payload each declared transfer sends (by its position among `TRANSFERS`), as a type
    // `flow!` compares with the one its target accepts.
    let sends = args
        .transfers
        .iter()
        .flat_map(|(_, t)| t.iter())
        .filter(|t| t.name != name)
        .enumerate()
        .filter_map(|(k, t)| {
            let sent = t.payload.as_ref()?;
            Some(quote! {
                #[automatically_derived]
                impl<__To: ?::core::marker::Sized + #p::AgentTargets> #p::SendsAt<#k, __To> for #ty_self {
                    type Sent = #sent;
                    type Expected = <__To as #p::AgentTargets>::Accepts;
                }
            })
        });
    let sends: TokenStream = sends.collect();
    let payloads: Vec<String> = args
        .transfers
        .iter()
        .flat_map(|(_, t)| t.iter())
        .filter(|t| t.name != name)
        .map(|t| match &t.payload {
            Some(ty) => quote!(#ty).to_string().replace(' ', ""),
            None => String::new(),
        })
        .collect();
    let payloads = if payloads.iter().any(|p| !p.is_empty()) {
        quote!(const TRANSFER_PAYLOADS: &'static [&'static str] = &[#(#payloads),*];)
    } else {
        TokenStream::new()
    };
    let skills = match &args.skills {
        Some((_, paths)) => {
            let tools = args.tools.as_ref().map(|(_, t)| t.as_slice());
            let folders = crate::skills::check(paths, tools, &name, cx);
            let array = crate::skills::lower(&folders, &p);
            quote!(const SKILLS: &'static [#p::EmbeddedSkill] = #array;)
        }
        None => {
            if let Some((span, _)) = &args.tools {
                cx.error(
                    *span,
                    format!(
                        "`tools = [...]` lists the tools the skills of agent `{name}` may allow, \
                         but it has no `skills = [...]`: add its skills, or remove `tools`"
                    ),
                );
            }
            TokenStream::new()
        }
    };
    quote! {
        #[automatically_derived]
        impl #p::AgentSpec for #ty {
            const NAME: &'static str = #name;
            const DESCRIPTION: &'static str = #description;
            const TRANSFERS: &'static [&'static str] = &[#(#targets),*];
            const NO_PARENT: bool = #no_parent;
            #returns
            #accepts
            #payloads
            #skills
        }
        #returns_impl
        #accepts_impl
        #sends
    }
}

/// The transfer enum `{Agent}Transfer`, if the agent declares transfers, and the agent's
/// `AgentTargets` impl (its transfer enum, or `NoTarget`).
fn transfer_enum(
    args: &AgentArgs,
    vis: &Visibility,
    ty: &TokenStream,
    ident: &Ident,
    cx: &mut Ctxt,
) -> (TokenStream, TokenStream) {
    let krate = args.krate();
    let p = private_alias();
    let import = import_private(&krate);
    let accepts = match &args.accepts {
        Some(t) => quote!(#t),
        None => quote!(#p::NoPayload),
    };
    let targets_impl = |target: TokenStream| {
        quote! {
            #[automatically_derived]
            impl #p::AgentTargets for #ty {
                type Targets = #target;
                type Accepts = #accepts;
            }
        }
    };
    let none = || targets_impl(quote!(#p::NoTarget));
    let Some((span, targets)) = &args.transfers else {
        return (TokenStream::new(), none());
    };
    let agent_name = args
        .name
        .as_ref()
        .map_or_else(|| ident.unraw().to_string(), |n| n.value());
    let enum_ident = format_ident!("{}Transfer", upper_camel(&ident.unraw().to_string()));
    if targets.is_empty() {
        cx.error(
            *span,
            format!(
                "agent `{agent_name}` declares an empty `transfers` list; name its targets, as \
                 in `transfers = [refund]`, or remove the option"
            ),
        );
        return (TokenStream::new(), none());
    }
    let mut variants: Vec<Ident> = Vec::new();
    let mut kept: Vec<&str> = Vec::new();
    for t in targets {
        if t.name == agent_name {
            cx.error(
                t.span,
                format!(
                    "agent `{agent_name}` declares a transfer to itself; an agent transfers to a \
                     sub-agent or its parent: remove `{}` from `transfers`",
                    t.name
                ),
            );
        }
        let v = Ident::new(&upper_camel(&t.name), t.span);
        if let Some(prev) = variants.iter().position(|p| *p == v) {
            cx.error(
                t.span,
                format!(
                    "transfer targets `{}` and `{}` of agent `{agent_name}` would both be the \
                     variant `{enum_ident}::{v}`; rename one of the agents",
                    kept[prev], t.name
                ),
            );
            // Left out, so the enum stays valid and this is the only error.
            continue;
        }
        variants.push(v);
        kept.push(&t.name);
    }
    let names: Vec<&str> = kept;
    let payload_types: Vec<Option<&syn::Type>> = targets
        .iter()
        .filter(|t| names.contains(&t.name.as_str()))
        .map(|t| t.payload.as_ref())
        .collect();
    if payload_types.iter().any(Option::is_some) {
        // The payload enum is no `TransferTarget` (it holds values); the agent's targets, as a
        // typed trajectory names them, are a plain enum beside it.
        let plain_ident = format_ident!("{}Target", enum_ident);
        let plain_doc = format!(
            "The agents `{agent_name}` may transfer to, without the payloads of \
             [`{enum_ident}`]: the target type of a `flow!` node filled by `{agent_name}` (its \
             `{{Flow}}{{Node}}Target`), which an expected trajectory names."
        );
        let plain = plain_enum(
            &p,
            &import,
            vis,
            ty,
            &plain_ident,
            &plain_doc,
            &variants,
            &names,
            false,
        );
        let payload = payload_enum(
            &p,
            &import,
            vis,
            ty,
            &enum_ident,
            &agent_name,
            &variants,
            &names,
            &payload_types,
        );
        return (quote!(#payload #plain), targets_impl(quote!(#plain_ident)));
    }
    let enum_doc = format!(
        "The agents `{agent_name}` may transfer to, as declared with \
         `#[agent(transfers = [...])]`.\n\nReturn a variant from the agent's body to transfer; \
         `flow!` checks at compile time that each target is a sub-agent or the parent of \
         `{agent_name}` in every flow it is placed in. A node of a flow filled by \
         `{agent_name}` has it as its target type (`{{Flow}}{{Node}}Target` is an alias of it)."
    );
    let tokens = plain_enum(
        &p,
        &import,
        vis,
        ty,
        &enum_ident,
        &enum_doc,
        &variants,
        &names,
        true,
    );
    (tokens, targets_impl(quote!(#enum_ident)))
}

/// A payload-less enum of an agent's transfer targets (its transfer enum, or the targets of a
/// payload enum): variants, `ALL`, `as_str`, `Display`, `TransferTarget`, `AgentTransfer`, and
/// (if `outcome`) `IntoOutcome`, so a body returns it to transfer.
#[allow(clippy::too_many_arguments)]
fn plain_enum(
    p: &TokenStream,
    import: &TokenStream,
    vis: &Visibility,
    ty: &TokenStream,
    enum_ident: &Ident,
    enum_doc: &str,
    variants: &[Ident],
    names: &[&str],
    outcome: bool,
) -> TokenStream {
    let variant_docs = names.iter().map(|n| format!("Transfer to agent `{n}`."));
    // `TransferTarget` and `AgentTransfer` come from the runtime's impls over `TargetTable`
    // (checked once there). `IntoOutcome` stays one impl per enum: through a blanket impl, a
    // body returning another agent's enum would get rustc's type-mismatch words instead of the
    // trait's message.
    let outcome = outcome.then(|| {
        quote! {
            #[automatically_derived]
            impl #p::IntoOutcome<#ty> for #enum_ident {
                fn into_outcome(self, __cx: &#p::AgentContext) -> #p::AgentResult {
                    #p::transfer(__cx, self)
                }
            }
        }
    });
    quote! {
        #[doc = #enum_doc]
        #[derive(::core::fmt::Debug, ::core::marker::Copy, ::core::cmp::PartialEq)]
        // The variants are the targets' names, which may share a prefix.
        #[allow(clippy::enum_variant_names)]
        #vis enum #enum_ident {
            #( #[doc = #variant_docs] #variants, )*
        }

        #[allow(dead_code)]
        impl #enum_ident {
            /// Every target, in declaration order.
            pub const ALL: &'static [Self] = &[#(#enum_ident::#variants),*];

            /// The name of the agent this target transfers to.
            pub const fn as_str(self) -> &'static str {
                match self {
                    #( #enum_ident::#variants => #names, )*
                }
            }
        }

        const _: () = {
            #import
            // `Clone` and `Eq` by hand, as the derives write them for a fieldless `Copy` enum
            // but without the `Clone` derive's second impl and `Eq`'s body: fewer items per
            // agent to check.
            #[automatically_derived]
            impl ::core::clone::Clone for #enum_ident {
                #[inline]
                fn clone(&self) -> Self {
                    *self
                }
            }

            #[automatically_derived]
            impl ::core::cmp::Eq for #enum_ident {}

            #[automatically_derived]
            impl ::core::fmt::Display for #enum_ident {
                fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    __f.write_str(self.as_str())
                }
            }

            #[automatically_derived]
            impl #p::TargetTable for #enum_ident {
                type Agent = #ty;
                const ALL: &'static [Self] = #enum_ident::ALL;
                fn name(self) -> &'static str {
                    self.as_str()
                }
            }

            #outcome
        };
    }
}

/// The transfer enum of an agent some of whose transfers carry a payload
/// (`transfers = [refund(RefundRequest)]`): a variant per target, holding its payload.
#[allow(clippy::too_many_arguments)]
fn payload_enum(
    p: &TokenStream,
    import: &TokenStream,
    vis: &Visibility,
    ty: &TokenStream,
    enum_ident: &Ident,
    agent_name: &str,
    variants: &[Ident],
    names: &[&str],
    payloads: &[Option<&syn::Type>],
) -> TokenStream {
    let enum_doc = format!(
        "The agents `{agent_name}` may transfer to, as declared with \
         `#[agent(transfers = [...])]`, each with the payload its transfer carries.\n\nReturn \
         a variant from the agent's body to transfer; `flow!` checks at compile time that each \
         target is a neighbour of `{agent_name}` and declares the payload \
         (`#[agent(accepts = ...)]`)."
    );
    let defs = variants
        .iter()
        .zip(payloads)
        .zip(names)
        .map(|((v, ty), n)| {
            let doc = format!("Transfer to agent `{n}`.");
            match ty {
                Some(ty) => quote!(#[doc = #doc] #v(#ty)),
                None => quote!(#[doc = #doc] #v),
            }
        });
    let as_str = variants
        .iter()
        .zip(payloads)
        .zip(names)
        .map(|((v, ty), n)| match ty {
            Some(_) => quote!(#enum_ident::#v(_) => #n),
            None => quote!(#enum_ident::#v => #n),
        });
    let arms = variants
        .iter()
        .zip(payloads)
        .zip(names)
        .map(|((v, ty), n)| match ty {
            Some(_) => {
                quote!(#enum_ident::#v(__payload) => #p::transfer_with(__cx, #n, &__payload))
            }
            None => quote!(#enum_ident::#v => #p::transfer_named(__cx, #n)),
        });
    quote! {
        #[doc = #enum_doc]
        // The variants are the targets' names, which may share a prefix.
        #[allow(clippy::enum_variant_names)]
        #vis enum #enum_ident {
            #( #defs, )*
        }

        #[allow(dead_code)]
        impl #enum_ident {
            /// The name of the agent this target transfers to.
            pub fn as_str(&self) -> &'static str {
                match self {
                    #( #as_str, )*
                }
            }
        }

        const _: () = {
            #import
            #[automatically_derived]
            impl #p::IntoOutcome<#ty> for #enum_ident {
                fn into_outcome(self, __cx: &#p::AgentContext) -> #p::AgentResult {
                    match self {
                        #( #arms, )*
                    }
                }
            }
        };
    }
}
