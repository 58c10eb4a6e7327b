#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    checks::tool_arguments(&text);
    checks::chat_agent_tool_call(&text);
});
