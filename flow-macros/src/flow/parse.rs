//! The syntax of `flow!`, parsed with recovery: a malformed child or option is recorded and
//! parsing goes on with the next one, so one compile reports every syntax error.
//!
//! ```text
//! input    := CRATE ';' FLOW
//! FLOW     := doc-attr* VIS IDENT ':' NODE
//! NODE     := ('dyn' IDENT | PATH) ('(' OPTION (',' OPTION)* ')')? ('=>' '[' NODE (',' NODE)* ']')?
//! OPTION   := IDENT ('=' tokens)?
//! ```

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{bracketed, parenthesized, Attribute, Ident, Token, Visibility};

use crate::ctxt::Ctxt;

/// A parsed flow.
pub(crate) struct FlowAst {
    /// The facade's path, as passed by `agentflow::flow!`.
    pub(crate) krate: TokenStream,
    /// The doc comments (and other attributes) on the flow.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) name: Ident,
    /// The root, unless it failed to parse.
    pub(crate) root: Option<NodeAst>,
}

/// What fills a node.
pub(crate) enum Target {
    /// An agent type (`#[agent]`).
    Type(syn::Path),
    /// An agent given at run time, named by the identifier.
    Dyn(Ident),
}

/// One node as written.
pub(crate) struct NodeAst {
    pub(crate) target: Target,
    pub(crate) options: Vec<OptionAst>,
    pub(crate) children: Option<Children>,
}

impl NodeAst {
    /// The span of the agent's name or path.
    pub(crate) fn span(&self) -> Span {
        match &self.target {
            Target::Type(p) => p.span(),
            Target::Dyn(i) => i.span(),
        }
    }

    /// The node as written: `triage`, `desk::refund` or `dyn billing`.
    pub(crate) fn written(&self) -> String {
        match &self.target {
            Target::Type(p) => path_string(p),
            Target::Dyn(i) => format!("dyn {i}"),
        }
    }

    /// The node's identifier: the last path segment, or the `dyn` node's name.
    pub(crate) fn label(&self) -> Ident {
        match &self.target {
            Target::Type(p) => p.segments.last().map_or_else(
                || Ident::new("agent", Span::call_site()),
                |s| s.ident.clone(),
            ),
            Target::Dyn(i) => i.clone(),
        }
    }
}

/// `=> [ ... ]`.
pub(crate) struct Children {
    pub(crate) bracket: Span,
    pub(crate) nodes: Vec<NodeAst>,
}

/// `key` or `key = value` inside a node's parentheses.
pub(crate) struct OptionAst {
    pub(crate) key: Ident,
    pub(crate) value: Option<TokenStream>,
}

/// `a::b::c` without spaces.
pub(crate) fn path_string(p: &syn::Path) -> String {
    let mut s = String::new();
    if p.leading_colon.is_some() {
        s.push_str("::");
    }
    for (i, seg) in p.segments.iter().enumerate() {
        if i > 0 {
            s.push_str("::");
        }
        s.push_str(&seg.ident.to_string());
    }
    s
}

/// Parses the input of the hidden `__flow` macro.
pub(crate) fn parse(input: TokenStream, cx: &mut Ctxt) -> Option<FlowAst> {
    let mut tokens = input.into_iter();
    let mut krate = TokenStream::new();
    for t in tokens.by_ref() {
        if matches!(&t, TokenTree::Punct(p) if p.as_char() == ';') {
            break;
        }
        krate.extend([t]);
    }
    let rest: TokenStream = tokens.collect();
    let parser = |input: ParseStream| flow(input, krate.clone(), cx);
    match parser.parse2(rest) {
        Ok(ast) => Some(ast),
        Err(e) => {
            cx.push(e);
            None
        }
    }
}

fn flow(input: ParseStream, krate: TokenStream, cx: &mut Ctxt) -> syn::Result<FlowAst> {
    let attrs = input.call(Attribute::parse_outer)?;
    let vis: Visibility = input.parse()?;
    let name: Ident = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected the flow's name, as in `flow! { pub CustomerService: triage => [refund] }`",
        )
    })?;
    if !input.peek(Token![:]) {
        cx.error(
            input.span(),
            format!(
                "expected `:` after the flow name `{name}`, then its root agent: \
                 `{name}: triage => [refund]`"
            ),
        );
        skip_rest(input);
        return Ok(FlowAst {
            krate,
            attrs,
            vis,
            name,
            root: None,
        });
    }
    input.parse::<Token![:]>()?;
    if input.is_empty() {
        cx.error(
            name.span(),
            format!("flow `{name}` has no agents: write its root agent after `{name}:`"),
        );
        return Ok(FlowAst {
            krate,
            attrs,
            vis,
            name,
            root: None,
        });
    }
    let root = match parse_node(input, cx) {
        Ok(n) => Some(n),
        Err(e) => {
            cx.push(e);
            skip_rest(input);
            None
        }
    };
    // A trailing comma after the tree is fine.
    let fork = input.fork();
    if fork.parse::<Token![,]>().is_ok() && fork.is_empty() {
        input.parse::<Token![,]>()?;
    }
    if !input.is_empty() {
        let span = input.span();
        let msg = if input.peek(Token![,]) {
            format!(
                "flow `{name}` has one root: put the other agents in the root's child list, as \
                 in `{name}: root => [a, b]`"
            )
        } else {
            format!("unexpected tokens after the tree of flow `{name}`")
        };
        cx.error(span, msg);
        skip_rest(input);
    }
    Ok(FlowAst {
        krate,
        attrs,
        vis,
        name,
        root,
    })
}

fn skip_rest(input: ParseStream) {
    while !input.is_empty() {
        if input.parse::<TokenTree>().is_err() {
            break;
        }
    }
}

fn parse_node(input: ParseStream, cx: &mut Ctxt) -> syn::Result<NodeAst> {
    let target = if input.peek(Token![dyn]) {
        let dyn_token: Token![dyn] = input.parse()?;
        let ident: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span().join(dyn_token.span).unwrap_or(e.span()),
                "expected the name of the `dyn` node, as in `dyn refund`",
            )
        })?;
        Target::Dyn(ident)
    } else {
        let path = input.call(syn::Path::parse_mod_style).map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected an agent: the path of an #[agent] type, or `dyn NAME` for an agent \
                 given at run time",
            )
        })?;
        Target::Type(path)
    };
    let mut node = NodeAst {
        target,
        options: Vec::new(),
        children: None,
    };
    if input.peek(syn::token::Paren) {
        let content;
        parenthesized!(content in input);
        while !content.is_empty() {
            match option(&content) {
                Ok(o) => node.options.push(o),
                Err(e) => {
                    cx.push(e);
                    skip_to_comma(&content);
                }
            }
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
    }
    let arrow = input.peek(Token![=>]);
    if arrow {
        input.parse::<Token![=>]>()?;
        if !input.peek(syn::token::Bracket) {
            return Err(syn::Error::new(
                input.span(),
                format!(
                    "expected `[` after `{} =>`: the sub-agents go in brackets, as in \
                     `{} => [refund, complaint]`",
                    node.written(),
                    node.written()
                ),
            ));
        }
    } else if input.peek(syn::token::Bracket) {
        let written = node.written();
        cx.error(
            input.span(),
            format!(
                "expected `=>` between `{written}` and its sub-agents: write \
                 `{written} => [...]`"
            ),
        );
    }
    if input.peek(syn::token::Bracket) {
        let content;
        let bracket = bracketed!(content in input);
        let mut nodes = Vec::new();
        while !content.is_empty() {
            match parse_node(&content, cx) {
                Ok(n) => nodes.push(n),
                Err(e) => {
                    cx.push(e);
                    skip_to_comma(&content);
                }
            }
            if !content.is_empty() {
                if let Err(e) = content.parse::<Token![,]>() {
                    cx.push(syn::Error::new(
                        e.span(),
                        format!(
                            "expected `,` between the sub-agents of `{}`",
                            node.written()
                        ),
                    ));
                    skip_to_comma(&content);
                    let _ = content.parse::<Token![,]>();
                }
            }
        }
        node.children = Some(Children {
            bracket: bracket.span.join(),
            nodes,
        });
    } else if input.peek(syn::token::Brace) || input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            input.span(),
            format!(
                "sub-agents of `{}` go in square brackets: `{} => [...]`",
                node.written(),
                node.written()
            ),
        ));
    }
    Ok(node)
}

fn skip_to_comma(input: ParseStream) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<TokenTree>().is_err() {
            break;
        }
    }
}

fn option(input: ParseStream) -> syn::Result<OptionAst> {
    let key: Ident = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected a node option such as `no_parent` or `context = user_input_only`",
        )
    })?;
    let value = if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        let mut value = TokenStream::new();
        while !input.is_empty() && !input.peek(Token![,]) {
            value.extend([input.parse::<TokenTree>()?]);
        }
        Some(value)
    } else {
        None
    };
    Ok(OptionAst { key, value })
}
