//! Skill folders named in `#[agent(skills = [...])]` and on `flow!` nodes
//! (`dyn name(skills = [...])`): read and checked when the crate compiles, by the same rules as
//! the runtime's loader (`agentweave_skill`), then embedded in the binary.
//!
//! [`list`] parses the bracketed paths, [`check`] reads each folder (relative to the crate's
//! `CARGO_MANIFEST_DIR`) and reports what is wrong at the path's literal, and [`lower`] emits
//! the `EmbeddedSkill` array with `include_str!`/`include_bytes!`, so cargo rebuilds the crate
//! when a skill's file changes.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{bracketed, Ident, LitStr, Token};

use crate::ctxt::Ctxt;

/// A skill folder that passed every check: what [`lower`] embeds.
pub(crate) struct SkillFolder {
    /// The path as written, relative to the crate's folder, without a trailing `/`.
    pub(crate) path: String,
    /// The literal it was written in (the span generated code points at).
    pub(crate) lit: LitStr,
    /// Its resources, relative to the folder, sorted.
    pub(crate) resources: Vec<String>,
}

/// Parses `[ "path", ... ]` (after `skills =`).
pub(crate) fn list(input: ParseStream) -> syn::Result<Vec<LitStr>> {
    let content;
    bracketed!(content in input);
    let mut out = Vec::new();
    while !content.is_empty() {
        let lit: LitStr = content.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "`skills` takes the paths of skill folders, relative to the crate's \
                 Cargo.toml, as strings: `skills = [\"skills/pdf-forms\"]`",
            )
        })?;
        out.push(lit);
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}

/// Parses `[ name, ... ]` (after `tools =`): the names of the tools the agent will have,
/// as identifiers or strings.
pub(crate) fn tool_names(input: ParseStream) -> syn::Result<Vec<String>> {
    let content;
    bracketed!(content in input);
    let mut out = Vec::new();
    while !content.is_empty() {
        if content.peek(LitStr) {
            out.push(content.parse::<LitStr>()?.value());
        } else {
            let i = content.call(Ident::parse_any).map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`tools` takes the names of the agent's tools: `tools = [read_file, write_file]`",
                )
            })?;
            out.push(i.unraw().to_string());
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}

/// [`list`] of option tokens given as a token stream (`flow!` node options).
pub(crate) fn list_tokens(tokens: TokenStream) -> syn::Result<Vec<LitStr>> {
    list.parse2(tokens)
}

/// [`tool_names`] of option tokens given as a token stream (`flow!` node options).
pub(crate) fn tool_tokens(tokens: TokenStream) -> syn::Result<Vec<String>> {
    tool_names.parse2(tokens)
}

/// Reads and checks each folder of `paths` for agent `agent`: the folder and its `SKILL.md`
/// exist, the front matter follows the format (the runtime's rules, from `agentweave_skill`), the
/// name is the folder's, each resource the instructions link to is there, no two skills share
/// a name, and, when the agent declares its tools (`tools`), `allowed-tools` names only those
/// (or the skill tools). Each problem is an error at the path's literal; the folders that pass
/// are returned.
pub(crate) fn check(
    paths: &[LitStr],
    tools: Option<&[String]>,
    agent: &str,
    cx: &mut Ctxt,
) -> Vec<SkillFolder> {
    let Some(root) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        if let Some(first) = paths.first() {
            cx.error(
                first.span(),
                "skill folders are read relative to the crate's Cargo.toml, but \
                 `CARGO_MANIFEST_DIR` is not set: build the crate with cargo",
            );
        }
        return Vec::new();
    };
    let mut out: Vec<SkillFolder> = Vec::new();
    for lit in paths {
        match check_one(&root, lit, tools, agent) {
            Ok(folder) => {
                let name = folder_name(&folder.path);
                if let Some(other) = out.iter().find(|f| folder_name(&f.path) == name) {
                    cx.error(
                        lit.span(),
                        format!(
                            "skill `{name}` of agent `{agent}` is given twice: `{}` and `{}` are \
                             both named `{name}` (a skill is named by its folder); list each \
                             skill once, or rename one of the folders and its `name`",
                            other.path, folder.path
                        ),
                    );
                } else {
                    out.push(folder);
                }
            }
            Err(message) => cx.error(lit.span(), message),
        }
    }
    out
}

/// The last part of a folder path as written.
fn folder_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn check_one(
    root: &Path,
    lit: &LitStr,
    tools: Option<&[String]>,
    agent: &str,
) -> Result<SkillFolder, String> {
    let written = lit.value();
    let path = written.trim_end_matches('/').to_owned();
    let name = folder_name(&path).to_owned();
    if path.is_empty() || Path::new(&path).is_absolute() || path.contains('\\') {
        return Err(format!(
            "skill folder `{written}` of agent `{agent}`: write the folder's path relative to \
             the crate's Cargo.toml with `/` between parts, as in `skills = [\"skills/pdf-forms\"]`"
        ));
    }
    let folder = root.join(&path);
    if !folder.is_dir() {
        return Err(format!(
            "skill `{name}` of agent `{agent}`: there is no folder `{path}` (paths in `skills = \
             [...]` are relative to the crate's Cargo.toml): create it with a `SKILL.md`, or \
             correct the path"
        ));
    }
    let skill_md = folder.join("SKILL.md");
    let shown = PathBuf::from(format!("{path}/SKILL.md"));
    if !skill_md.is_file() {
        return Err(format!(
            "skill `{name}` of agent `{agent}`: the folder `{path}` has no `SKILL.md`: add one \
             that opens with its front matter (`name: {name}`, `description: ...`) between two \
             `---` lines, then the skill's instructions"
        ));
    }
    let text = std::fs::read_to_string(&skill_md).map_err(|e| {
        format!(
            "skill `{name}` of agent `{agent}`: cannot read `{}`: {e}",
            shown.display()
        )
    })?;
    let fail = |e: agentweave_skill::SkillError| format!("skill `{name}` of agent `{agent}`: {e}");
    let doc = agentweave_skill::SkillDoc::parse(&text, &name, &shown).map_err(fail)?;
    let resources = agentweave_skill::list_resources(&folder).map_err(fail)?;
    if let Some(resource) = agentweave_skill::missing_links(&doc.instructions, &resources)
        .into_iter()
        .next()
    {
        return Err(fail(agentweave_skill::SkillError::MissingResource {
            path: shown,
            resource,
        }));
    }
    if let (Some(tools), Some(allowed)) = (tools, &doc.allowed_tools) {
        let available: Vec<&str> = tools.iter().map(String::as_str).collect();
        let unknown = agentweave_skill::unknown_tools(allowed, &available);
        if !unknown.is_empty() {
            return Err(format!(
                "skill `{name}` of agent `{agent}`: `{}`: `allowed-tools` names {} that the \
                 agent does not have; its tools are: {} (its `tools = [...]`, and the skill \
                 tools). Remove {} from `allowed-tools`, or add {} to the agent's `tools`",
                shown.display(),
                quoted(&unknown),
                if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                },
                if unknown.len() == 1 { "it" } else { "them" },
                if unknown.len() == 1 { "it" } else { "them" },
            ));
        }
    }
    Ok(SkillFolder {
        path,
        lit: lit.clone(),
        resources,
    })
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The checked folders as a `&'static [EmbeddedSkill]` expression; `p` is the facade's
/// `__private` path. Each file is named `concat!(env!("CARGO_MANIFEST_DIR"), "/", path)`, so
/// the expansion holds no machine path and cargo tracks every file.
pub(crate) fn lower(folders: &[SkillFolder], p: &TokenStream) -> TokenStream {
    let skills = folders.iter().map(|f| {
        let span = f.lit.span();
        let folder = LitStr::new(&f.path, span);
        let skill_md = LitStr::new(&format!("/{}/SKILL.md", f.path), span);
        let resources = f.resources.iter().map(|r| {
            let rel = LitStr::new(r, span);
            let file = LitStr::new(&format!("/{}/{r}", f.path), span);
            quote! {
                (#rel, ::core::include_bytes!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), #file)) as &[u8])
            }
        });
        quote! {
            #p::EmbeddedSkill {
                folder: #folder,
                text: ::core::include_str!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), #skill_md)),
                resources: &[#(#resources),*],
            }
        }
    });
    quote!(&[#(#skills),*])
}
