//! Case conversions for the names of generated items.

/// `refund_desk`, `refund-desk` or `RefundDesk` -> `RefundDesk`.
pub(crate) fn upper_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if c.is_alphanumeric() {
            if upper {
                out.extend(c.to_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'N');
    }
    out
}

/// `RefundDesk` or `refund_desk` -> `refund_desk`.
pub(crate) fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.extend(c.to_lowercase());
            prev_lower = false;
        } else if c.is_alphanumeric() {
            out.push(c);
            prev_lower = true;
        } else {
            out.push('_');
            prev_lower = false;
        }
    }
    out
}

/// The builder setter of a node labelled `label`: its snake-case name, or `build_agent` for a
/// node named `build` (the builder's own `build()` keeps its name).
pub(crate) fn setter(label: &str) -> String {
    let name = snake(label);
    if name == "build" {
        "build_agent".to_owned()
    } else {
        name
    }
}

/// An identifier for `name`, raw (`r#match`) when `name` is a keyword.
pub(crate) fn ident(name: &str, span: proc_macro2::Span) -> syn::Ident {
    if syn::parse_str::<syn::Ident>(name).is_ok() {
        syn::Ident::new(name, span)
    } else {
        syn::Ident::new_raw(name, span)
    }
}

/// The text of doc attributes, as rustdoc reads it: one line per attribute, the single space
/// after `///` dropped, surrounding blank lines trimmed.
pub(crate) fn doc_text(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                let v = s.value();
                for line in v.split('\n') {
                    lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
                }
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

/// A string literal for a long generated doc, as a raw string (`r#"..."#`) the compiler reads
/// as written: `quote`'s literal escapes its text character by character in the macro, which
/// for a flow's docs (its picture included, tens of kilobytes) was a measurable part of the
/// expansion in a debug build of the macro. (Each such literal costs the compiler a parse of
/// its own, so short strings stay `quote`'s.) Falls back to an escaped literal for text a raw
/// string cannot hold (a carriage return).
pub(crate) fn doc_literal(text: &str) -> proc_macro2::Literal {
    if !text.contains('\r') {
        let mut hashes = String::from("#");
        while text.contains(&format!("\"{hashes}")) {
            hashes.push('#');
        }
        if let Ok(lit) = format!("r{hashes}\"{text}\"{hashes}").parse() {
            return lit;
        }
    }
    proc_macro2::Literal::string(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_literals_hold_the_text() {
        for text in [
            "plain",
            "a \"quote\"# and \"##",
            "line\nline",
            "é ü",
            "back\\slash",
            "a\rb",
        ] {
            let lit = doc_literal(text);
            let parsed: syn::LitStr = syn::parse_quote!(#lit);
            assert_eq!(parsed.value(), text);
        }
    }

    #[test]
    fn cases() {
        assert_eq!(upper_camel("refund"), "Refund");
        assert_eq!(upper_camel("refund_desk"), "RefundDesk");
        assert_eq!(upper_camel("refund-desk"), "RefundDesk");
        assert_eq!(upper_camel("Lookup"), "Lookup");
        assert_eq!(upper_camel("2fa"), "N2fa");
        assert_eq!(snake("RefundDesk"), "refund_desk");
        assert_eq!(snake("triage"), "triage");
        assert_eq!(snake("Lookup"), "lookup");
    }
}
