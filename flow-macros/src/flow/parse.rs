//! The syntax of `flow!`, parsed with recovery: a malformed child or option is recorded and
//! parsing goes on with the next one, so one compile reports every syntax error.
//!
//! ```text
//! input    := CRATE ';' FLOW
//! FLOW     := doc-attr* VIS IDENT ':' NODE
//! NODE     := ('dyn' IDENT | 'remote' IDENT | PATH) OPTIONS? ('=>' '[' NODE (',' NODE)* ']')?
//!           | doc-attr* IDENT OPTIONS? '=' WORKFLOW '[' NODE (',' NODE)* ']'
//! WORKFLOW := 'sequential' | 'parallel' | 'loop' '(' ('max' '=' INT | 'unbounded') ')'
//!           | 'map' '(' MAP_ARG (',' MAP_ARG)* ')'
//! MAP_ARG  := 'value' '=' STRING | 'last_output' | 'payload' | 'concurrency' '=' INT
//!           | 'on_failure' '=' ('fail_fast' | 'collect_errors' | 'at_least' '(' INT ')')
//! OPTIONS  := '(' OPTION (',' OPTION)* ')'
//! OPTION   := IDENT ('=' tokens)?
//! ```

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{bracketed, parenthesized, Attribute, Ident, Token, Visibility};

use crate::ctxt::Ctxt;

/// A parsed flow.
pub(crate) struct FlowAst {
    /// The facade's path, as passed by `agentweave::flow!`.
    pub(crate) krate: TokenStream,
    /// The doc comments (and other attributes) on the flow.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) name: Ident,
    /// The root, unless it failed to parse.
    pub(crate) root: Option<NodeAst>,
    /// Whether `name` really is the flow's name (not the root agent of a flow written without
    /// one), so that a stub of the flow type may be emitted on errors.
    pub(crate) named: bool,
}

/// What fills a node.
pub(crate) enum Target {
    /// An agent type (`#[agent]`).
    Type(syn::Path),
    /// An agent given at run time, named by the identifier.
    /// `dyn NAME`, or `remote NAME` (`true`: a remote A2A agent, given as a `dyn` one is).
    Dyn(Ident, bool),
    /// A workflow agent the flow builds, named by the identifier.
    Workflow(Ident, WorkflowKind),
}

/// What a workflow node runs.
#[derive(Clone)]
pub(crate) enum WorkflowKind {
    Sequential,
    Parallel,
    /// `loop(max = N)` (`Some`, N >= 1) or `loop(unbounded)` (`None`).
    Loop(Option<syn::LitInt>),
    /// `map(...)`: one sub-agent run per item.
    Map(MapAst),
}

/// The arguments of a `map(...)` workflow.
#[derive(Clone)]
pub(crate) struct MapAst {
    /// Where the items are.
    pub(crate) items: MapItemsAst,
    /// `concurrency = N` (N >= 1).
    pub(crate) concurrency: Option<syn::LitInt>,
    /// `on_failure = ...`.
    pub(crate) on_failure: Option<MapPolicyAst>,
}

/// `value = "KEY"`, `last_output` or `payload`.
#[derive(Clone)]
pub(crate) enum MapItemsAst {
    Value(syn::LitStr),
    LastOutput,
    /// `payload`: the transfer's payload, a list of the items the map's agent declares it takes.
    Payload(Span),
}

/// `fail_fast`, `collect_errors` or `at_least(N)`.
#[derive(Clone)]
pub(crate) enum MapPolicyAst {
    FailFast,
    CollectErrors,
    AtLeast(syn::LitInt),
}

impl WorkflowKind {
    /// The keyword as written: `sequential`, `parallel` or `loop`.
    pub(crate) fn keyword(&self) -> &'static str {
        match self {
            WorkflowKind::Sequential => "sequential",
            WorkflowKind::Parallel => "parallel",
            WorkflowKind::Loop(_) => "loop",
            WorkflowKind::Map(_) => "map",
        }
    }
}

/// One node as written.
pub(crate) struct NodeAst {
    /// Attributes before the node: doc comments describe a workflow node.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) target: Target,
    pub(crate) options: Vec<OptionAst>,
    pub(crate) children: Option<Children>,
}

impl NodeAst {
    /// The span of the agent's name or path.
    pub(crate) fn span(&self) -> Span {
        match &self.target {
            Target::Type(p) => p.span(),
            Target::Dyn(i, _) | Target::Workflow(i, _) => i.span(),
        }
    }

    /// The node as written: `triage`, `desk::refund` or `dyn billing`.
    pub(crate) fn written(&self) -> String {
        match &self.target {
            Target::Type(p) => path_string(p),
            Target::Dyn(i, false) => format!("dyn {i}"),
            Target::Dyn(i, true) => format!("remote {i}"),
            Target::Workflow(i, _) => i.to_string(),
        }
    }

    /// The node's identifier without a raw prefix (`r#match` is `match`): the last path
    /// segment, or the `dyn` or workflow node's name.
    pub(crate) fn label(&self) -> Ident {
        match &self.target {
            Target::Type(p) => p.segments.last().map_or_else(
                || Ident::new("agent", Span::call_site()),
                |s| s.ident.unraw(),
            ),
            Target::Dyn(i, _) | Target::Workflow(i, _) => i.unraw(),
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
    let (root, named) = tree(input, &name, cx)?;
    Ok(FlowAst {
        krate,
        attrs,
        vis,
        name,
        root,
        named,
    })
}

/// What follows the flow's name: `:` and the tree, with recovery. Returns the root (unless it
/// failed to parse) and whether `name` really is the flow's name.
fn tree(input: ParseStream, name: &Ident, cx: &mut Ctxt) -> syn::Result<(Option<NodeAst>, bool)> {
    if input.peek(Token![=>]) || input.peek(syn::token::Bracket) || input.peek(Token![::]) {
        cx.error(
            name.span(),
            format!(
                "`flow!` starts with the flow's name, then `:` and the root agent: write \
                 `flow! {{ Desk: {name} => [...] }}`"
            ),
        );
        skip_rest(input);
        return Ok((None, false));
    }
    if !input.peek(Token![:]) {
        cx.error(
            input.span(),
            format!(
                "expected `:` after the flow name `{name}`, then its root agent: \
                 `{name}: triage => [refund]`"
            ),
        );
        skip_rest(input);
        return Ok((None, true));
    }
    input.parse::<Token![:]>()?;
    if input.is_empty() {
        cx.error(
            name.span(),
            format!("flow `{name}` has no agents: write its root agent after `{name}:`"),
        );
        return Ok((None, true));
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
    Ok((root, true))
}

/// `remote billing = "http://..."` or `remote billing("http://...")`: a URL written in the
/// flow, where the builder takes it. One error at the URL, which is skipped, so the node parses
/// on as `remote billing`.
fn remote_url(input: ParseStream, name: &Ident, cx: &mut Ctxt) -> syn::Result<()> {
    let url_span = if input.peek(Token![=]) && input.peek2(syn::LitStr) {
        input.parse::<Token![=]>()?;
        Some(input.parse::<syn::LitStr>()?.span())
    } else if input.peek(syn::token::Paren) && {
        let fork = input.fork();
        let content;
        parenthesized!(content in fork);
        content.peek(syn::LitStr)
    } {
        let content;
        parenthesized!(content in input);
        let span = content.span();
        skip_rest(&content);
        Some(span)
    } else {
        None
    };
    if let Some(span) = url_span {
        cx.error(
            span,
            format!(
                "a `remote` node takes no URL in `flow!`: write `remote {name}`, and give the \
                 builder its agent with its client: `.{name}(|node| A2aAgent::new(node, \
                 client))`, the client made from the URL beforehand \
                 (`A2aClient::new(url)?`)"
            ),
        );
    }
    Ok(())
}

fn skip_rest(input: ParseStream) {
    while !input.is_empty() {
        if input.parse::<TokenTree>().is_err() {
            break;
        }
    }
}

fn parse_node(input: ParseStream, cx: &mut Ctxt) -> syn::Result<NodeAst> {
    let attrs = input.call(Attribute::parse_outer)?;
    let target = if input.peek(Token![dyn]) {
        let dyn_token: Token![dyn] = input.parse()?;
        let ident: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span().join(dyn_token.span).unwrap_or(e.span()),
                "expected the name of the `dyn` node, as in `dyn refund`",
            )
        })?;
        Target::Dyn(ident, false)
    } else if input.peek(Ident) && input.peek2(Ident) && input.fork().parse::<Ident>()? == "remote"
    {
        // `remote billing`: a remote agent (an A2A `A2aAgent`) given at run time, as a `dyn`
        // node is: `remote NAME` is not a path, so it cannot name an agent type.
        input.parse::<Ident>()?;
        let name: Ident = input.parse()?;
        remote_url(input, &name, cx)?;
        Target::Dyn(name, true)
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
        attrs,
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
    if input.peek(Token![->]) {
        let thin: Token![->] = input.parse()?;
        let written = node.written();
        cx.error(
            thin.spans[0].join(thin.spans[1]).unwrap_or(thin.spans[0]),
            format!(
                "sub-agents follow a fat arrow: write `{written} => [...]`, not `{written} -> [...]`"
            ),
        );
        if input.peek(syn::token::Bracket) {
            node.children = Some(children(input, &written, cx)?);
        }
        return Ok(node);
    }
    let arrow = input.peek(Token![=>]);
    if !arrow && input.peek(Token![=]) {
        return workflow(input, node, cx);
    }
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
        node.children = Some(children(input, &node.written(), cx)?);
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

const WORKFLOWS: &str = "`sequential [...]`, `parallel [...]`, `loop(max = N) [...]`, \
                         `loop(unbounded) [...]` or `map(value = \"KEY\") [agent]`";

/// The rest of a workflow node, from its `=`: `NAME = KIND [children]`.
fn workflow(input: ParseStream, mut node: NodeAst, cx: &mut Ctxt) -> syn::Result<NodeAst> {
    let eq: Token![=] = input.parse()?;
    let name = match &node.target {
        Target::Type(p) if p.leading_colon.is_none() && p.segments.len() == 1 => {
            p.segments[0].ident.clone()
        }
        _ => {
            return Err(syn::Error::new(
                node.span(),
                format!(
                    "a workflow node is named by an identifier, as in `pipeline = sequential \
                     [...]`; `{}` is not one",
                    node.written()
                ),
            ))
        }
    };
    let kind_span = input.span();
    let kind = if input.peek(Token![loop]) {
        let loop_token: Token![loop] = input.parse()?;
        let bound = if input.peek(syn::token::Paren) {
            let content;
            parenthesized!(content in input);
            loop_bound(&content, &name)?
        } else {
            None
        };
        match bound {
            Some(b) => WorkflowKind::Loop(b),
            None => {
                cx.error(
                    loop_token.span,
                    format!(
                        "loop workflow `{name}` needs a bound: write `{name} = loop(max = N) \
                         [...]` to run its sub-agents at most N times (N >= 1), or `{name} = \
                         loop(unbounded) [...]` for a loop that only BreakLoop or Exit ends"
                    ),
                );
                WorkflowKind::Loop(None)
            }
        }
    } else {
        let kw: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span().join(eq.span).unwrap_or(e.span()),
                format!("expected the kind of workflow `{name}` after `=`: {WORKFLOWS}"),
            )
        })?;
        match kw.to_string().as_str() {
            "sequential" => WorkflowKind::Sequential,
            "parallel" => WorkflowKind::Parallel,
            "map" => WorkflowKind::Map(map_args(input, &kw, &name, cx)?),
            other => {
                return Err(syn::Error::new(
                    kw.span(),
                    format!(
                        "unknown workflow kind `{other}` for node `{name}`; write `{name} = ` \
                         then {WORKFLOWS}"
                    ),
                ))
            }
        }
    };
    if !matches!(kind, WorkflowKind::Loop(_) | WorkflowKind::Map(_))
        && input.peek(syn::token::Paren)
    {
        let content;
        let paren = parenthesized!(content in input);
        let _: TokenStream = content.parse()?;
        cx.error(
            paren.span.join(),
            format!(
                "a {} workflow takes no arguments: write `{name} = {} [...]`",
                kind.keyword(),
                kind.keyword()
            ),
        );
    }
    if !input.peek(syn::token::Bracket) {
        return Err(syn::Error::new(
            if input.is_empty() {
                kind_span
            } else {
                input.span()
            },
            format!(
                "expected the sub-agents of workflow `{name}` in brackets, as in `{name} = {} \
                 [a, b]`",
                kind.keyword()
            ),
        ));
    }
    let is_map = matches!(kind, WorkflowKind::Map(_));
    node.target = Target::Workflow(name.clone(), kind);
    let children = children(input, &name.to_string(), cx)?;
    if is_map && children.nodes.len() > 1 {
        cx.error(
            children.bracket,
            format!(
                "map workflow `{name}` runs one agent per item, but {} sub-agents are listed; \
                 give it one, as in `{name} = map(value = \"tickets\") [refund]` (a \
                 `sequential [...]` node if each item needs several agents)",
                children.nodes.len()
            ),
        );
    }
    node.children = Some(children);
    Ok(node)
}

/// One argument of `map(...)` of the map node `name`, into the slot it sets.
fn map_arg(
    content: ParseStream,
    name: &Ident,
    items: &mut Option<MapItemsAst>,
    concurrency: &mut Option<syn::LitInt>,
    on_failure: &mut Option<MapPolicyAst>,
    cx: &mut Ctxt,
) -> syn::Result<()> {
    let key: Ident = content.call(Ident::parse_any)?;
    let mut set_items = |found: MapItemsAst, cx: &mut Ctxt| {
        if items.is_some() {
            cx.error(
                key.span(),
                format!("map workflow `{name}` is given its items twice; keep one source"),
            );
        }
        *items = Some(found);
    };
    match key.to_string().as_str() {
        "value" => {
            content.parse::<Token![=]>()?;
            let lit: syn::LitStr = content.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!(
                        "the items of map workflow `{name}` are named by a string: \
                         `value = \"tickets\"`"
                    ),
                )
            })?;
            set_items(MapItemsAst::Value(lit), cx);
        }
        "last_output" => set_items(MapItemsAst::LastOutput, cx),
        "payload" => set_items(MapItemsAst::Payload(key.span()), cx),
        "concurrency" => {
            content.parse::<Token![=]>()?;
            let n: syn::LitInt = content.parse()?;
            if n.base10_parse::<usize>()? == 0 {
                cx.error(
                    n.span(),
                    format!(
                        "map workflow `{name}` has `concurrency = 0`, so no item would ever run; \
                         use 1 or more"
                    ),
                );
            }
            *concurrency = Some(n);
        }
        "on_failure" => {
            content.parse::<Token![=]>()?;
            let policy: Ident = content.call(Ident::parse_any)?;
            *on_failure = Some(match policy.to_string().as_str() {
                "fail_fast" => MapPolicyAst::FailFast,
                "collect_errors" => MapPolicyAst::CollectErrors,
                "at_least" => {
                    let inner;
                    parenthesized!(inner in content);
                    MapPolicyAst::AtLeast(inner.parse()?)
                }
                other => {
                    return Err(syn::Error::new(
                        policy.span(),
                        format!(
                            "unknown failure policy `{other}` for map workflow `{name}`; write \
                             `fail_fast`, `collect_errors` or `at_least(N)`"
                        ),
                    ))
                }
            });
        }
        other => {
            return Err(syn::Error::new(
                key.span(),
                format!("unknown argument `{other}` of map workflow `{name}`; it takes {MAP_ARGS}"),
            ))
        }
    }
    Ok(())
}

const MAP_ARGS: &str = "`value = \"KEY\"`, `last_output` or `payload` (where the items are), \
                        `concurrency = N`, `on_failure = fail_fast | collect_errors | \
                        at_least(N)`";

/// The arguments of `map(...)`, after the keyword `kw` of the map node `name`.
fn map_args(input: ParseStream, kw: &Ident, name: &Ident, cx: &mut Ctxt) -> syn::Result<MapAst> {
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            kw.span(),
            format!(
                "map workflow `{name}` needs to know where its items are: write `{name} = \
                 map(value = \"KEY\") [agent]` (a session value holding a JSON array), \
                 `{name} = map(last_output) [agent]` (the previous agent's answer) or \
                 `{name} = map(payload) [agent]` (the payload of the transfer to it)"
            ),
        ));
    }
    let content;
    let paren = parenthesized!(content in input);
    let mut items: Option<MapItemsAst> = None;
    let mut concurrency = None;
    let mut on_failure = None;
    while !content.is_empty() {
        // A bad argument is recorded and parsing goes on with the next one.
        if let Err(e) = map_arg(
            &content,
            name,
            &mut items,
            &mut concurrency,
            &mut on_failure,
            cx,
        ) {
            cx.push(e);
            skip_to_comma(&content);
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    let Some(items) = items else {
        return Err(syn::Error::new(
            paren.span.join(),
            format!(
                "map workflow `{name}` needs to know where its items are: add `value = \
                 \"KEY\"` (a session value holding a JSON array), `last_output` (the \
                 previous agent's answer) or `payload` (the payload of the transfer to it)"
            ),
        ));
    };
    Ok(MapAst {
        items,
        concurrency,
        on_failure,
    })
}

/// Inside `loop( ... )`: `max = N` (`Some(Some(N))`), `unbounded` (`Some(None)`), or an error
/// that is recorded (`None`).
#[allow(clippy::option_option)]
fn loop_bound(content: ParseStream, name: &Ident) -> syn::Result<Option<Option<syn::LitInt>>> {
    let bad = |span: Span| {
        syn::Error::new(
            span,
            format!(
                "the bound of loop workflow `{name}` is `max = N` (N >= 1) or `unbounded`, as in \
                 `{name} = loop(max = 3) [...]`"
            ),
        )
    };
    let key: Ident = content.parse().map_err(|e| bad(e.span()))?;
    let out = match key.to_string().as_str() {
        "unbounded" => None,
        "max" => {
            content.parse::<Token![=]>().map_err(|e| bad(e.span()))?;
            let n: syn::LitInt = content.parse().map_err(|e| bad(e.span()))?;
            if n.base10_parse::<usize>()? == 0 {
                return Err(syn::Error::new(
                    n.span(),
                    format!(
                        "loop workflow `{name}` has `max = 0`, so it would never run its \
                         sub-agents; use `max = 1` or more, or `loop(unbounded)` for a loop \
                         that only BreakLoop or Exit ends"
                    ),
                ));
            }
            Some(n)
        }
        _ => return Err(bad(key.span())),
    };
    if !content.is_empty() {
        return Err(bad(content.span()));
    }
    Ok(Some(out))
}

/// `[ NODE, ... ]`.
fn children(input: ParseStream, written: &str, cx: &mut Ctxt) -> syn::Result<Children> {
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
                    format!("expected `,` between the sub-agents of `{written}`"),
                ));
                skip_to_comma(&content);
                let _ = content.parse::<Token![,]>();
            }
        }
    }
    Ok(Children {
        bracket: bracket.span.join(),
        nodes,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_node_is_given_at_run_time() {
        let mut cx = Ctxt::default();
        let ast = parse(
            quote::quote!(agentweave; Remote: front => [remote desk, dyn audit]),
            &mut cx,
        )
        .expect("parses");
        assert!(cx.is_ok(), "{}", cx.into_compile_errors());
        let root = ast.root.expect("a root");
        let children = root.children.expect("children");
        let written: Vec<String> = children.nodes.iter().map(NodeAst::written).collect();
        assert_eq!(written, ["remote desk", "dyn audit"]);
        assert!(matches!(children.nodes[0].target, Target::Dyn(_, true)));
        assert!(matches!(children.nodes[1].target, Target::Dyn(_, false)));
    }

    #[test]
    fn a_url_on_a_remote_node_is_one_error() {
        for flow in [
            quote::quote!(agentweave; Remote: front => [remote desk = "http://desk", dyn audit]),
            quote::quote!(agentweave; Remote: front => [remote desk("http://desk"), dyn audit]),
        ] {
            let mut cx = Ctxt::default();
            let ast = parse(flow, &mut cx).expect("parses");
            let errors = cx.into_compile_errors().to_string();
            assert_eq!(errors.matches("compile_error").count(), 1, "{errors}");
            assert!(errors.contains("takes no URL"), "{errors}");
            let children = ast.root.and_then(|r| r.children).expect("children");
            assert_eq!(children.nodes.len(), 2);
        }
    }
}
