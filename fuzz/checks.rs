//! The checks the fuzz targets run on each input. Shared, by `#[path]`, with the plain tests in
//! `flow-runtime/tests/it/reliability_hostile.rs`, which drive them with proptest inputs on stable.

#![allow(dead_code)]

use std::sync::Arc;

use agentweave_runtime::model::{ScriptStep, ScriptedModel};
use agentweave_runtime::tool::parse_arguments;
use agentweave_runtime::{
    rewrite_for_context, tool_fn, ChatModelAgent, Checkpoint, ContextPolicy, FlowAgent,
    HistoryEntry, Message, Role, Runner, ToolCall, ToolError,
};
use futures::StreamExt;

/// `Checkpoint::decode` never panics; whatever it accepts encodes back to the same checkpoint.
/// The input is tried as it is, and as the body of a well-formed header (so the JSON decoder is
/// reached, not only the checksum check).
pub fn checkpoint_decode(data: &[u8]) {
    let mut framed = format!("agentflow-checkpoint 1\n{:016x}\n", fnv1a(data)).into_bytes();
    framed.extend_from_slice(data);
    for bytes in [data, &framed[..]] {
        if let Ok(c) = Checkpoint::decode("fuzz", bytes) {
            let again =
                Checkpoint::decode("fuzz", &c.encode()).expect("an encoded checkpoint decodes");
            assert_eq!(again, c);
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[derive(serde::Deserialize, schemars::JsonSchema, Debug)]
pub struct Add {
    pub a: i64,
    pub b: i64,
}

/// `parse_arguments` never panics; it accepts exactly the JSON objects serde_json decodes (empty
/// text as `{}`), and its errors name the tool.
pub fn tool_arguments(text: &str) {
    let effective = if text.trim().is_empty() { "{}" } else { text };
    let typed = parse_arguments::<Add>("add", text);
    let serde = serde_json::from_str::<Add>(effective)
        .ok()
        .filter(|_| effective.trim_start().starts_with('{'))
        .ok_or(());
    match (&typed, serde) {
        (Ok(a), Ok(b)) => assert_eq!((a.a, a.b), (b.a, b.b)),
        (Err(e), Err(_)) => assert!(
            e.to_string()
                .starts_with("invalid arguments for tool 'add': the arguments "),
            "{e}"
        ),
        (a, b) => panic!("parse_arguments disagrees with serde_json: {a:?} vs {b:?}"),
    }
    // Anything else than an object is refused, as every tool schema says.
    let untyped = parse_arguments::<serde_json::Value>("any", text);
    let object = serde_json::from_str::<serde_json::Value>(effective).is_ok_and(|v| v.is_object());
    assert_eq!(untyped.is_ok(), object, "{text:?}");
}

/// A `ChatModelAgent` whose model calls `add` with `text` as the arguments: the run never
/// panics, the tool runs only on arguments that decode, and the model is answered either way.
pub fn chat_agent_tool_call(text: &str) {
    let model = ScriptedModel::new([
        ScriptStep::raw_tool_call("add", text),
        ScriptStep::text("ok"),
    ]);
    let add = tool_fn("add", "Adds.", |args: Add| async move {
        Ok::<_, ToolError>(args.a.wrapping_add(args.b).to_string())
    });
    let agent = ChatModelAgent::builder("calc", model.clone())
        .tool(add)
        .build()
        .unwrap();
    let events: Vec<_> =
        futures::executor::block_on(Runner::new(FlowAgent::new(agent)).run("add").collect());
    assert_eq!(events.len(), 3, "{events:?}");
    let result = events[1].message_output().expect("a tool result");
    assert_eq!(result.role, Role::Tool);
    match parse_arguments::<Add>("add", text) {
        Ok(args) => assert_eq!(result.content, args.a.wrapping_add(args.b).to_string()),
        Err(e) => assert_eq!(result.content, e.to_model_text()),
    }
    assert_eq!(events[2].message_output().unwrap().content, "ok");
    assert_eq!(model.calls(), 2);
}

/// Entries built from bytes: each 3-byte group picks who speaks, what kind of message it is,
/// and how long its text is (taken from the rest of the input).
pub fn entries_from(data: &[u8]) -> Vec<HistoryEntry> {
    const AGENTS: [&str; 3] = ["me", "other", "third"];
    let text = String::from_utf8_lossy(data).into_owned();
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    for (at, group) in data.chunks(3).enumerate() {
        let pick = |k: usize| group.get(k).copied().unwrap_or(0) as usize;
        let len = pick(2) % 12;
        let content: String = chars
            .iter()
            .cycle()
            .skip(at)
            .take(len.min(chars.len()))
            .collect();
        let agent = AGENTS[pick(0) % 3];
        let (is_user_input, message) = match pick(1) % 5 {
            0 => (true, Message::user(content)),
            1 => (false, Message::assistant(content)),
            2 => (
                false,
                Message::assistant_tool_calls(
                    content.clone(),
                    vec![ToolCall::new("c1", content.clone(), content)],
                ),
            ),
            3 => (false, Message::tool(content, "c1", agent)),
            _ => (false, Message::system(content)),
        };
        out.push(HistoryEntry {
            is_user_input,
            agent_name: if is_user_input {
                Arc::from("")
            } else {
                Arc::from(agent)
            },
            message: Arc::new(message),
            turn: 0,
        });
    }
    out
}

/// The built-in context policies never panic and keep their promises: user input and the
/// agent's own messages pass unchanged (the same `Arc`), everything else becomes one
/// `For context:` user message; `UserInputOnly` keeps only user input; `LastN(n)` keeps the user
/// input and the last `n` other entries, in order.
pub fn history(data: &[u8]) {
    let entries = entries_from(data);
    let n = data.first().copied().unwrap_or(0) as usize % 5;
    let check = |kept: &[&HistoryEntry], out: &[Arc<Message>]| {
        assert_eq!(kept.len(), out.len());
        for (e, m) in kept.iter().zip(out) {
            if e.is_user_input || &*e.agent_name == "me" {
                assert!(Arc::ptr_eq(&e.message, m));
            } else {
                assert_eq!(m.role, Role::User);
                assert!(m.content.starts_with("For context:"));
                assert_eq!(**m, rewrite_for_context(&e.agent_name, &e.message));
            }
        }
    };
    let all: Vec<&HistoryEntry> = entries.iter().collect();
    check(&all, &ContextPolicy::Rewrite.apply("me", &entries).unwrap());

    let users: Vec<&HistoryEntry> = entries.iter().filter(|e| e.is_user_input).collect();
    let only = ContextPolicy::UserInputOnly.apply("me", &entries).unwrap();
    check(&users, &only);

    let others: Vec<&HistoryEntry> = entries.iter().filter(|e| !e.is_user_input).collect();
    let mut kept = users.clone();
    kept.extend(&others[others.len().saturating_sub(n)..]);
    check(
        &kept,
        &ContextPolicy::LastN(n).apply("me", &entries).unwrap(),
    );
}
