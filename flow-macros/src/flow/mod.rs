//! `flow!`: a tree of agents, checked, lowered to the runtime's `FlowAgent` tree.
//!
//! `parse` reads the syntax, `tree` flattens it (checking node options on the way),
//! `validate` checks the tree's rules, `lower` writes the tokens and `docs` the rustdoc of the
//! generated flow type. Errors from every stage are collected; on any, a stub of the flow type
//! is emitted with them so code naming it does not fail a second time.

mod attr;
mod docs;
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
