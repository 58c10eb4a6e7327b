//! `flow!`: a tree of agents, checked, lowered to the runtime's `FlowAgent` tree.
//!
//! The stages, in order (errors from every stage are collected in `crate::ctxt`; on any, a stub
//! of the flow type is emitted with them so code naming it does not fail a second time):
//! - `parse`: the syntax, as written.
//! - `tree`: the nodes flattened depth first, each with its checked options and child list.
//! - `attr`: a node's options and doc comments, checked while `tree` flattens.
//! - `validate`: the rules over the whole tree (one place per agent, no cycles, distinct names).
//! - `lower/`: the tokens out (see its guide).
//! - `docs`: the rustdoc of the generated flow type (the tree, a diagram, the transfer table).

mod attr;
mod docs;
mod local_agents;
mod lower;
mod parse;
mod tree;
mod validate;

use proc_macro2::TokenStream;
use quote::quote;

use crate::ctxt::Ctxt;

/// Expands the input of the hidden `__flow` macro: `CRATE ; FLOW`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let Some(ast) = parse::parse(input, &mut cx) else {
        return cx.into_compile_errors();
    };
    let tree = tree::Tree::build(&ast, &mut cx);
    validate::tree(&tree, &ast.name, &mut cx);
    let out = if cx.is_ok() && !tree.nodes.is_empty() {
        let docs = docs::docs(&ast, &tree);
        lower::lower(&ast, &tree, docs)
    } else if ast.named {
        lower::stub(&ast)
    } else {
        TokenStream::new()
    };
    let errors = cx.into_compile_errors();
    quote!(#out #errors)
}
