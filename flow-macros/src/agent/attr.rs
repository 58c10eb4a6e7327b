//! The arguments of `#[agent(...)]`.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{bracketed, Ident, LitStr, Token};

use crate::ctxt::Ctxt;

/// One declared transfer target: an agent name, written as an identifier or a string.
pub(crate) struct Target {
    pub(crate) name: String,
    pub(crate) span: Span,
    /// `refund(RefundRequest)`: the payload the transfer carries.
    pub(crate) payload: Option<syn::Type>,
}

/// The parsed `#[agent(...)]` arguments.
#[derive(Default)]
pub(crate) struct AgentArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) transfers: Option<(Span, Vec<Target>)>,
    pub(crate) no_parent: Option<Span>,
    /// `returns = T`: the result type of a task it finishes.
    pub(crate) returns: Option<syn::Type>,
    /// `accepts = T`: the payload it receives with a transfer to it.
    pub(crate) accepts: Option<syn::Type>,
    pub(crate) krate: Option<syn::Path>,
    /// `skills = ["path", ...]`: skill folders, checked and embedded (`crate::skills`).
    pub(crate) skills: Option<(Span, Vec<LitStr>)>,
    /// `tools = [name, ...]`: the tools the agent will have, which its skills' `allowed-tools`
    /// are checked against.
    pub(crate) tools: Option<(Span, Vec<String>)>,
}

impl AgentArgs {
    /// The path generated code reaches the facade through.
    pub(crate) fn krate(&self) -> TokenStream {
        match &self.krate {
            Some(p) => quote!(#p),
            None => quote!(::agentweave),
        }
    }

    /// Whether any option besides `crate` was given (those belong on the struct, not its impl).
    pub(crate) fn first_item_option(&self) -> Option<Span> {
        self.name
            .as_ref()
            .map(LitStr::span)
            .or(self.description.as_ref().map(LitStr::span))
            .or(self.transfers.as_ref().map(|t| t.0))
            .or(self.no_parent)
            .or(self.returns.as_ref().map(syn::spanned::Spanned::span))
            .or(self.accepts.as_ref().map(syn::spanned::Spanned::span))
            .or(self.skills.as_ref().map(|s| s.0))
            .or(self.tools.as_ref().map(|t| t.0))
    }
}

const OPTIONS: &str = "`name = \"...\"`, `description = \"...\"`, `transfers = [a, b]`, \
                       `no_parent`, `returns = Type`, `accepts = Type`, \
                       `skills = [\"path/to/skill\"]`, `tools = [tool_a, tool_b]`, `crate = path`";

/// Parses the attribute's tokens, recording every error and going on with the next option.
pub(crate) fn parse(tokens: TokenStream, cx: &mut Ctxt) -> AgentArgs {
    let mut args = AgentArgs::default();
    let mut parser = |input: ParseStream| {
        while !input.is_empty() {
            if let Err(e) = option(input, &mut args, cx) {
                cx.push(e);
                // Skip to the next option.
                while !input.is_empty() && !input.peek(Token![,]) {
                    input.parse::<proc_macro2::TokenTree>()?;
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(())
    };
    let result = (&mut parser).parse2(tokens);
    if let Err(e) = result {
        cx.push(e);
    }
    args
}

fn duplicate(span: Span, what: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!("`{what}` is given twice in #[agent(...)]; give it once"),
    )
}

fn option(input: ParseStream, args: &mut AgentArgs, cx: &mut Ctxt) -> syn::Result<()> {
    let key: Ident = if input.peek(Token![crate]) {
        let k: Token![crate] = input.parse()?;
        Ident::new("crate", k.span)
    } else {
        input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected an option of #[agent(...)]: {OPTIONS}"),
            )
        })?
    };
    let span = key.span();
    match key.to_string().as_str() {
        "name" | "description" => {
            input.parse::<Token![=]>()?;
            let value: LitStr = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("`{key}` takes a string: `{key} = \"...\"`"),
                )
            })?;
            if key == "name" && value.value().trim().is_empty() {
                return Err(syn::Error::new(
                    value.span(),
                    "an agent name cannot be empty: give a name, as in `name = \"refund\"`",
                ));
            }
            let slot = if key == "name" {
                &mut args.name
            } else {
                &mut args.description
            };
            if slot.is_some() {
                return Err(duplicate(span, &key.to_string()));
            }
            *slot = Some(value);
        }
        "transfers" => {
            input.parse::<Token![=]>()?;
            let content;
            let bracket = bracketed!(content in input);
            let mut targets: Vec<Target> = Vec::new();
            let mut empty_names = false;
            while !content.is_empty() {
                let target = if content.peek(LitStr) {
                    let s: LitStr = content.parse()?;
                    if s.value().trim().is_empty() {
                        cx.error(
                            s.span(),
                            "a transfer target cannot be an empty name: write the target \
                             agent's name, as in `transfers = [\"refund\"]`",
                        );
                        empty_names = true;
                        if !content.is_empty() {
                            content.parse::<Token![,]>()?;
                        }
                        continue;
                    }
                    Target {
                        name: s.value(),
                        span: s.span(),
                        payload: None,
                    }
                } else {
                    let i: Ident = content.parse().map_err(|e| {
                        syn::Error::new(
                            e.span(),
                            "expected an agent name (an identifier or a string) in \
                             `transfers = [...]`",
                        )
                    })?;
                    Target {
                        name: i.unraw().to_string(),
                        span: i.span(),
                        payload: None,
                    }
                };
                let mut target = target;
                if content.peek(syn::token::Paren) {
                    let inner;
                    syn::parenthesized!(inner in content);
                    let ty: syn::Type = inner.parse().map_err(|e| {
                        syn::Error::new(
                            e.span(),
                            "a transfer's payload is a type: `transfers = [refund(RefundRequest)]`",
                        )
                    })?;
                    if !inner.is_empty() {
                        let rest: TokenStream = inner.parse()?;
                        return Err(syn::Error::new_spanned(
                            rest,
                            format!(
                                "a transfer carries one payload type: write `{}({})`; to send \
                                 more than one value, send one type holding them (a struct, or \
                                 a tuple as in `{}((A, B))`)",
                                target.name,
                                quote!(#ty),
                                target.name
                            ),
                        ));
                    }
                    target.payload = Some(ty);
                }
                if targets.iter().any(|t| t.name == target.name) {
                    cx.error(
                        target.span,
                        format!(
                            "`{}` is listed twice in `transfers`; list each target once",
                            target.name
                        ),
                    );
                } else {
                    targets.push(target);
                }
                if !content.is_empty() {
                    content.parse::<Token![,]>()?;
                }
            }
            if args.transfers.is_some() {
                return Err(duplicate(span, "transfers"));
            }
            if !(empty_names && targets.is_empty()) {
                // (A list of only empty names was reported above, not as an empty list.)
                args.transfers = Some((bracket.span.join(), targets));
            }
        }
        "no_parent" => {
            if args.no_parent.is_some() {
                return Err(duplicate(span, "no_parent"));
            }
            args.no_parent = Some(span);
        }
        "returns" => {
            input.parse::<Token![=]>()?;
            let ty: syn::Type = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`returns` takes the type of the agent's result: `returns = RefundOutcome`",
                )
            })?;
            if args.returns.is_some() {
                return Err(duplicate(span, "returns"));
            }
            args.returns = Some(ty);
        }
        "accepts" => {
            input.parse::<Token![=]>()?;
            let ty: syn::Type = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`accepts` takes the type of the payload the agent receives: \
                     `accepts = RefundRequest`",
                )
            })?;
            if args.accepts.is_some() {
                return Err(duplicate(span, "accepts"));
            }
            args.accepts = Some(ty);
        }
        "skills" => {
            input.parse::<Token![=]>()?;
            let paths = crate::skills::list(input)?;
            if args.skills.is_some() {
                return Err(duplicate(span, "skills"));
            }
            args.skills = Some((span, paths));
        }
        "tools" => {
            input.parse::<Token![=]>()?;
            let names = crate::skills::tool_names(input)?;
            if args.tools.is_some() {
                return Err(duplicate(span, "tools"));
            }
            args.tools = Some((span, names));
        }
        "crate" => {
            input.parse::<Token![=]>()?;
            args.krate = Some(input.call(syn::Path::parse_mod_style)?);
        }
        other => {
            return Err(syn::Error::new(
                span,
                format!("unknown option `{other}` of #[agent(...)]; the options are: {OPTIONS}"),
            ))
        }
    }
    Ok(())
}
