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
    if !may_hold_facts(&text) {
        // Every agent here would be drawn by its identifier without a description, as if it
        // were not found: skip parsing the file (the macro runs unoptimized in a debug build,
        // and a file of 200 agents took it longer than drawing them).
        return out;
    }
    let Ok(file) = syn::parse_file(&text) else {
        return out;
    };
    items(&file.items, &mut out);
    out
}

/// Whether the source text could give an agent a fact to draw: a doc comment or attribute
/// (a description) or a `name` or `description` option. Without any, scanning it finds nothing.
fn may_hold_facts(text: &str) -> bool {
    ["///", "/**", "doc", "name", "description"]
        .iter()
        .any(|needle| text.contains(needle))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_looked_for_only_where_they_can_be() {
        assert!(!may_hold_facts(
            "#[agent(transfers = [b])]\nasync fn a(_cx: &AgentContext) {}\n"
        ));
        for text in [
            "/// Refunds.\n#[agent]\nasync fn a(_cx: &AgentContext) {}",
            "/** Refunds. */ #[agent] async fn a(_cx: &AgentContext) {}",
            "#[doc = \"Refunds.\"] #[agent] async fn a(_cx: &AgentContext) {}",
            "#[agent(name = \"refund-desk\")] async fn a(_cx: &AgentContext) {}",
            "#[agent(description = \"Refunds.\")] struct A;",
        ] {
            assert!(may_hold_facts(text), "{text}");
        }
    }
}
