//! One test per eval case, made by `eval_tests!` from the fixture set.

use crate::common;

use agentweave_eval::EvalRunner;
use agentweave_runtime::model::{ScriptStep, ScriptedModel};

fn runner() -> EvalRunner {
    EvalRunner::new(common::desk).judge(
        ScriptedModel::rules()
            .otherwise(ScriptStep::text(r#"{"score": 1, "reason": "fine"}"#))
            .named("judge"),
    )
}

agentweave_eval::eval_tests! {
    runner: runner(),
    set: "tests/fixtures/desk.json",
    cases: [refund, complaint_then_thanks, greeting],
}

#[tokio::test]
#[should_panic(expected = "eval set")]
async fn a_case_the_set_lacks_fails_its_test() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/desk.json");
    agentweave_eval::testing::assert_case(&runner(), path, "no_such_case").await;
}
