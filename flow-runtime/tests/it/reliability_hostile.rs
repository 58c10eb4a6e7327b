//! Hostile input, on stable: the fuzz targets' checks (`fuzz/checks.rs`) driven by proptest,
//! plus the inputs worth keeping as regression cases. The same checks run under libFuzzer with
//! `cargo +nightly fuzz run <target>` in `fuzz/`.

#[path = "../../../fuzz/checks.rs"]
mod checks;

use agentweave_runtime::{Checkpoint, CheckpointError};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn checkpoint_decoding_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        checks::checkpoint_decode(&data);
    }

    #[test]
    fn checkpoint_decoding_of_json_like_bodies_never_panics(body in "[{}\\[\\]\":,a-z0-9 ]{0,80}") {
        checks::checkpoint_decode(body.as_bytes());
    }

    #[test]
    fn tool_arguments_parse_exactly_as_serde_json_does(text in "\\PC{0,40}") {
        checks::tool_arguments(&text);
    }

    #[test]
    fn tool_arguments_of_the_right_shape_parse(a in any::<i64>(), b in any::<i64>(), junk in "[ a-z\"{}:,]{0,10}") {
        checks::tool_arguments(&format!(r#"{{"a":{a},"b":{b}}}"#));
        checks::tool_arguments(&format!(r#"{{"a":{a},"b":{b}{junk}"#));
    }

    #[test]
    fn any_tool_arguments_get_the_model_an_answer(text in "[ a-z0-9\"{}:,\\-]{0,30}") {
        checks::chat_agent_tool_call(&text);
    }

    #[test]
    fn context_policies_keep_their_promises(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        checks::history(&data);
    }
}

/// Inputs kept from fuzzing and from the proptest runs above.
#[test]
fn regression_inputs() {
    for data in [
        &b""[..],
        b"agentflow-checkpoint",
        b"agentflow-checkpoint ",
        b"agentflow-checkpoint 1",
        b"agentflow-checkpoint 1\n",
        b"agentflow-checkpoint 1\n0000000000000000",
        b"agentflow-checkpoint 1\nzzzzzzzzzzzzzzzz\n{}",
        b"agentflow-checkpoint \xff\n",
        b"{}",
        b"null",
        br#"{"status":"interrupted"}"#,
    ] {
        checks::checkpoint_decode(data);
    }
    for text in [
        "",
        " ",
        "\n",
        "{}",
        "null",
        "[]",
        r#"{"a":1}"#,
        r#"{"a":1,"b":2}"#,
        "{\"a\":1,\"b\":2}x",
        "\u{feff}{}",
    ] {
        checks::tool_arguments(text);
        checks::chat_agent_tool_call(text);
    }
    for data in [
        &b""[..],
        b"\x00\x01\x05",
        b"\xff\xfe\xfd\xfc",
        b"\x02\x02\x0b\x01\x02\x00",
    ] {
        checks::history(data);
    }
}

#[test]
fn a_foreign_or_damaged_checkpoint_is_a_typed_error() {
    assert!(matches!(
        Checkpoint::decode("x", b"{}"),
        Err(CheckpointError::Foreign { .. })
    ));
    assert!(matches!(
        Checkpoint::decode("x", b"agentflow-checkpoint 3\n"),
        Err(CheckpointError::UnsupportedVersion { .. })
    ));
    let body = b"{}";
    let mut framed = format!("agentflow-checkpoint 1\n{:016x}\n", fnv1a(body)).into_bytes();
    framed.extend_from_slice(body);
    let e = Checkpoint::decode("x", &framed).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("checkpoint 'x' is corrupt: its body does not decode: missing field"),
        "{e}"
    );
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
