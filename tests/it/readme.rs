//! The README shows what the code does: its Mermaid diagram is the example flow's `mermaid()`.

use crate::customer_service;

#[test]
fn readme_mermaid_block_is_the_example_flows_diagram() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("```mermaid\n")
        .expect("the README has a mermaid block")
        + "```mermaid\n".len();
    let end = start + readme[start..].find("```").expect("the block is closed");
    assert_eq!(
        readme[start..end].trim_end(),
        customer_service::CustomerService::mermaid().trim_end(),
        "paste CustomerService::mermaid() into the README's mermaid block"
    );
}

/// The guide shows the example flow as a picture: `docs/src/images/customer_service.svg` is
/// `CustomerService::svg()`. `AGENTFLOW_UPDATE_DOCS=1 cargo test --test it -- readme::` rewrites it.
#[test]
fn the_guides_picture_is_the_example_flows_svg() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/images/customer_service.svg"
    );
    let svg = customer_service::CustomerService::svg();
    if std::env::var_os("AGENTFLOW_UPDATE_DOCS").is_some() {
        std::fs::write(path, &svg).unwrap();
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        on_disk, svg,
        "rewrite the picture: AGENTFLOW_UPDATE_DOCS=1 cargo test --test it -- readme::"
    );
}

/// Every chapter the guide lists exists and runs as doctests (`src/guide.rs` includes it).
#[test]
fn every_chapter_of_the_guide_exists_and_is_a_doctest() {
    let root = env!("CARGO_MANIFEST_DIR");
    let summary = std::fs::read_to_string(format!("{root}/docs/src/SUMMARY.md")).unwrap();
    let guide = std::fs::read_to_string(format!("{root}/src/guide.rs")).unwrap();
    let mut chapters = 0;
    for line in summary.lines() {
        let Some(start) = line.find("](") else {
            continue;
        };
        let file = &line[start + 2..line.rfind(')').unwrap()];
        if file.is_empty() {
            continue; // a draft chapter, waiting for its file
        }
        chapters += 1;
        assert!(
            std::path::Path::new(&format!("{root}/docs/src/{file}")).is_file(),
            "SUMMARY.md lists {file}, which does not exist"
        );
        assert!(
            guide.contains(&format!("docs/src/{file}\"")),
            "add docs/src/{file} to src/guide.rs, so its code blocks run as doctests"
        );
    }
    assert!(
        chapters >= 8,
        "the guide lists its chapters ({chapters} found)"
    );
}

/// The README is a front door: short, and every relative link in it (into the guide, the
/// benchmarks) reaches a file of the repository. Its layout names every member crate.
#[test]
fn the_readme_is_a_front_door_whose_links_resolve() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = include_str!("../../README.md");
    assert!(
        readme.lines().count() < 300,
        "the README stays well under 300 lines: move reference text into the guide (docs/src)"
    );
    let mut links = 0;
    for (at, _) in readme.match_indices("](") {
        let rest = &readme[at + 2..];
        let target = &rest[..rest.find(')').expect("a link is closed")];
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        let file = target.split('#').next().unwrap();
        links += 1;
        assert!(
            std::path::Path::new(&format!("{root}/{file}")).exists(),
            "the README links to {target}, which does not exist"
        );
    }
    assert!(
        links >= 10,
        "the README links into the guide ({links} links)"
    );
    let manifest = std::fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find(|l| l.starts_with("members"))
        .expect("the workspace lists its members");
    for member in members.split('"').skip(1).step_by(2) {
        assert!(
            readme.contains(&format!("`{member}/`")),
            "the README's layout names the member `{member}/`"
        );
    }
}

/// The words of the guide's chapters (`docs/src/*.md`), counted as `wc -w` counts them, the
/// longest chapter first.
fn chapter_words() -> Vec<(String, usize)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src");
    let mut chapters: Vec<(String, usize)> = std::fs::read_dir(dir)
        .expect("the guide's folder")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, text.split_whitespace().count())
        })
        .collect();
    chapters.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    chapters
}

/// The guide is read in an hour: under 12,000 words in all (about 200 a minute). Reference
/// detail (tables of options, every limit, protocol corner cases) belongs in the rustdoc of
/// the item it describes, which the chapter names.
#[test]
fn the_guide_is_read_in_an_hour() {
    const MAX_WORDS: usize = 12_000;
    let chapters = chapter_words();
    assert!(chapters.len() >= 8, "the guide's chapters are in docs/src");
    let total: usize = chapters.iter().map(|(_, words)| words).sum();
    let longest: Vec<String> = chapters
        .iter()
        .take(5)
        .map(|(name, words)| format!("{name} ({words})"))
        .collect();
    assert!(
        total <= MAX_WORDS,
        "the guide (docs/src/*.md) has {total} words, over {MAX_WORDS}: a newcomer no longer reads \
         it in an hour. Its longest chapters: {}. Move reference detail (tables of options, every \
         knob, protocol corner cases) into the rustdoc of the item it describes and name that \
         item in the chapter, and say each thing in one chapter only",
        longest.join(", ")
    );
}
