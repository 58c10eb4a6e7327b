//! Chat models: the [`ChatModel`] contract, what it is asked ([`ChatRequest`]) and how it
//! fails ([`ModelError`]); the scripted model for tests and offline examples
//! ([`ScriptedModel`]); the OpenAI-compatible and Anthropic clients (cargo features `openai`,
//! `anthropic`); retries, structured output ([`OutputSchema`]) and token [`Usage`].

pub use agentweave_runtime::model::*;
