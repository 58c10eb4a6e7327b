//! Chat models: the contract ([`ChatModel`], [`ChatRequest`], [`ModelError`], from `agentweave-core`)
//! and the clients this runtime ships for it.
//!
//! - [`ScriptedModel`]: deterministic, offline, answers from a script or from rules;
//! - `OpenAiChatModel` (cargo feature `openai`): any OpenAI-compatible `/v1/chat/completions`
//!   server (OpenAI, Ollama, vLLM, llama.cpp);
//! - `AnthropicChatModel` (cargo feature `anthropic`): Anthropic's Messages API
//!   (`/v1/messages`), or a proxy serving it;
//! - `HttpCall` and `HttpLimits` (cargo feature `http`): the bounded HTTP both clients use.
//!
//! Capacity and failover: [`CapacityModel`] caps a model's concurrent calls and rate-limits
//! them (shared by every agent given the same `Arc`); [`FailoverModel`] tries an ordered list of
//! models, each call with a time limit and each model behind a circuit breaker.
//!
//! [`EnvModels`] picks each agent's model from the environment (`OPENAI_MODEL_<AGENT>` over
//! `OPENAI_MODEL`) and falls back to the agent's script offline.

pub use agentweave_core::model::*;

#[cfg(feature = "anthropic")]
mod anthropic;
mod capacity;
mod env;
#[cfg(feature = "http")]
mod http;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod http_model;
#[cfg(feature = "openai")]
mod openai;

#[cfg(feature = "anthropic")]
pub use anthropic::{AnthropicChatModel, AnthropicConfig, AnthropicUsage};
pub use capacity::CapacityModel;
pub use env::EnvModels;
/// The rate quota of a [`CapacityModel`] (from the `governor` crate).
pub use governor::Quota;
#[cfg(feature = "http")]
pub use http::{HttpCall, HttpError, HttpLimits, SseEvent};
#[cfg(feature = "openai")]
pub use openai::{OpenAiChatModel, OpenAiConfig};
