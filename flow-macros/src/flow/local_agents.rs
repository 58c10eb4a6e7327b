//! What the rustdoc picture of a flow knows of agents declared in the same source file as the
//! `flow!`: the name a model uses (`#[agent(name = "...")]`) and the description (the doc
//! comment or `description = "..."`). The expansion cannot see other items, so it reads the
//! file; agents declared elsewhere are drawn by their identifier, without a description (the
//! flow's `svg()` draws every agent's real name and description at run time).

use std::collections::HashMap;

use crate::names::doc_text;

/// The facts of one `#[agent]` item found in the file.
#[derive(Default, Clone)]
pub(crate) struct LocalAgent {
    /// The agent's name, if renamed.
    pub(crate) name: Option<String>,
    /// The agent's description.
    pub(crate) description: String,
}

/// The `#[agent]` fns and structs of the file holding `span`, by identifier; empty when the
/// file cannot be read or parsed.
pub(crate) fn scan(span: proc_macro2::Span) -> HashMap<String, LocalAgent> {
    let mut out = HashMap::new();
    let Some(path) = source_file(span) else {
        return out;
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    let Ok(file) = syn::parse_file(&text) else {
        return out;
    };
    items(&file.items, &mut out);
    out
}

/// The file `span` is in: known to a compiler with `Span::local_file` (Rust 1.88, detected by
/// `build.rs`), and only inside a macro expansion (not in unit tests).
#[cfg(agentflow_local_file)]
#[allow(clippy::incompatible_msrv)] // compiled only where the compiler has it
fn source_file(span: proc_macro2::Span) -> Option<std::path::PathBuf> {
    if !proc_macro::is_available() {
        return None;
    }
    span.unwrap().local_file()
}

#[cfg(not(agentflow_local_file))]
fn source_file(_span: proc_macro2::Span) -> Option<std::path::PathBuf> {
    None
}

fn items(items: &[syn::Item], out: &mut HashMap<String, LocalAgent>) {
    for item in items {
        let (ident, attrs) = match item {
            syn::Item::Fn(f) => (&f.sig.ident, &f.attrs),
            syn::Item::Struct(s) => (&s.ident, &s.attrs),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    self::items(inner, out);
                }
                continue;
            }
            _ => continue,
        };
        let Some(agent) = attrs.iter().find(|a| a.path().is_ident("agent")) else {
            continue;
        };
        let mut facts = LocalAgent {
            name: None,
            description: doc_text(attrs),
        };
        if let syn::Meta::List(list) = &agent.meta {
            let _ = list.parse_nested_meta(|meta| {
                if meta.path.is_ident("name") || meta.path.is_ident("description") {
                    let value: syn::LitStr = meta.value()?.parse()?;
                    if meta.path.is_ident("name") {
                        facts.name = Some(value.value());
                    } else {
                        facts.description = value.value();
                    }
                } else if meta.input.peek(syn::Token![=]) {
                    // Any other `key = value`: skip the value, up to the next comma.
                    let input = meta.value()?;
                    while !input.is_empty() && !input.peek(syn::Token![,]) {
                        let _: proc_macro2::TokenTree = input.parse()?;
                    }
                }
                Ok(())
            });
        }
        out.insert(ident.to_string(), facts);
    }
}
