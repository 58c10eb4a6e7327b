//! One test per eval case inside `cargo test`: [`eval_tests!`](crate::eval_tests) and
//! [`assert_case`].

use std::path::Path;

use crate::report::CaseResult;
use crate::runner::EvalRunner;
use crate::set::EvalSet;

/// Every failure of a case, one per line (empty if it passed).
pub fn failures(case: &CaseResult) -> String {
    let mut lines = Vec::new();
    for (r, run) in case.runs.iter().enumerate() {
        if let Some(e) = &run.error {
            lines.push(format!("run {}: {e}", r + 1));
        }
        for (t, turn) in run.turns.iter().enumerate() {
            for s in turn.scores.iter().filter(|s| !s.passed) {
                lines.push(format!(
                    "run {} turn {}: {} ({:.2}): {}",
                    r + 1,
                    t + 1,
                    s.criterion,
                    s.score,
                    s.reason
                ));
            }
        }
        for s in run.case_scores.iter().filter(|s| !s.passed) {
            lines.push(format!(
                "run {} whole conversation: {} ({:.2}): {}",
                r + 1,
                s.criterion,
                s.score,
                s.reason
            ));
        }
    }
    lines.join("\n")
}

/// Runs case `id` of the eval set at `path` with `runner` and panics, listing every failure,
/// unless it passes (or if the file cannot be read or has no such case).
pub async fn assert_case(runner: &EvalRunner, path: impl AsRef<Path>, id: &str) {
    let path = path.as_ref();
    let set = EvalSet::from_file(path).unwrap_or_else(|e| panic!("{e}"));
    let Some(case) = runner.run_one(&set, id).await else {
        panic!("eval set {} has no case `{id}`", path.display());
    };
    assert!(
        case.passed,
        "eval case `{id}` failed (pass rate {:.2}, threshold {:.2}):\n{}",
        case.pass_rate,
        case.threshold,
        failures(&case)
    );
}

/// One `#[test]` per named case of an eval set: each runs its case with the runner the
/// expression makes and fails with every failing criterion and reason.
///
/// ```ignore
/// agentweave_eval::eval_tests! {
///     runner: EvalRunner::new(desk).cassettes("tests/cassettes"),
///     set: "tests/evals/desk.json",          // relative to the crate's manifest
///     cases: [refund, broken_kettle],
/// }
/// ```
#[macro_export]
macro_rules! eval_tests {
    (runner: $runner:expr, set: $set:expr, cases: [$($case:ident),+ $(,)?] $(,)?) => {
        $(
            #[test]
            fn $case() {
                let runtime = $crate::__private::tokio::runtime::Builder::new_multi_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime");
                let path = ::std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join($set);
                runtime.block_on(async {
                    let runner = $runner;
                    $crate::testing::assert_case(&runner, &path, stringify!($case)).await;
                });
            }
        )+
    };
}
