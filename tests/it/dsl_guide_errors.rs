//! The claims of `flow!`'s rustdoc (its "Compile errors" section, in `src/dsl.rs`) about how
//! many errors a misuse gives hold: the section ends with a table of the `tests/ui/fail` cases it
//! cites and the number of errors each gives, and this test counts the errors in each case's
//! `.stderr` (which `tests/it/ui.rs` holds to what rustc prints). A case whose errors change in
//! number fails here until the docs say so.

use std::path::Path;

/// The `(case, errors)` rows of the docs' table of cases (doc-comment lines, `///` or not).
fn cited_cases(docs: &str) -> Vec<(String, usize)> {
    let table = docs
        .split("## The cases behind these errors")
        .nth(1)
        .expect("src/dsl.rs has the section `The cases behind these errors`");
    table
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let cells: Vec<&str> = line
                .strip_prefix("///")
                .unwrap_or(line)
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let [case, count] = cells.as_slice() else {
                return None;
            };
            let case = case.strip_prefix('`')?.strip_suffix('`')?;
            Some((case.to_owned(), count.parse().ok()?))
        })
        .collect()
}

/// The errors of a `.stderr`: its diagnostics that are errors (not warnings or notes).
fn errors(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| (l.starts_with("error[") || l.starts_with("error:")) && !l.contains("aborting"))
        .count()
}

#[test]
fn the_guide_counts_each_cited_case_right() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("src/dsl.rs")).unwrap();
    let cases = cited_cases(&docs);
    assert!(cases.len() >= 30, "the table lists {} cases", cases.len());
    let mut wrong = Vec::new();
    for (case, claimed) in &cases {
        let path = root.join(format!("tests/ui/fail/{case}.stderr"));
        let stderr = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("src/dsl.rs cites `{case}`, which has no .stderr: {e}"));
        let found = errors(&stderr);
        if found != *claimed {
            wrong.push(format!(
                "{case}: src/dsl.rs says {claimed}, the case gives {found}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn counting_sees_errors_only() {
    let stderr = "error[E0080]: a\n  --> x\nwarning: w\nerror: b\nerror: aborting due to 2 \
                  previous errors\n   = note: error: not a diagnostic\n";
    assert_eq!(errors(stderr), 2);
    let rows = cited_cases(
        "x\n/// ## The cases behind these errors\n/// | case | errors |\n/// | --- | --- |\n/// | `cycle` | 1 |\n",
    );
    assert_eq!(rows, [("cycle".to_owned(), 1)]);
}
