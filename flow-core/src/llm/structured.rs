//! Structured output: an agent whose final answer is JSON of a declared type.
//!
//! [`ChatModelAgentBuilder::output_type`](crate::ChatModelAgentBuilder::output_type) gives an
//! agent an [`OutputSchema`] made from a Rust type (`serde` + `schemars`). Each request then
//! carries it ([`ChatRequest::output_schema`](crate::ChatRequest::output_schema)), and the
//! OpenAI client asks the server for JSON matching it (`response_format` of type
//! `json_schema`). The agent decodes its final answer (the reply without tool calls) into the
//! type:
//!
//! - decoded, the value is stored as a session value under the agent's output key (its name
//!   unless set), where the caller reads it typed with
//!   [`Session::value`](crate::Session::value);
//! - not decoded, the model is told what was wrong (a user message with the decoding error,
//!   after its reply) and asked again, up to the agent's limit of output retries; after that
//!   the run ends with [`ChatAgentError::Output`](crate::ChatAgentError::Output), which holds
//!   the last reply and the error.
//!
//! ```
//! # futures::executor::block_on(async {
//! use agentweave_runtime::model::{ScriptStep, ScriptedModel};
//! use agentweave_runtime::{ChatModelAgent, FlowAgent, Message, RunRequest, Runner, Session};
//! use futures::StreamExt;
//! use std::sync::Arc;
//!
//! #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
//! struct Verdict {
//!     approved: bool,
//!     amount_eur: f64,
//! }
//!
//! let model = ScriptedModel::new([
//!     ScriptStep::text("Approved, 39 EUR."), // not JSON: sent back with the error
//!     ScriptStep::text(r#"{"approved": true, "amount_eur": 39.0}"#),
//! ]);
//! let agent = ChatModelAgent::builder("refund", model.clone())
//!     .output_type::<Verdict>()
//!     .build()
//!     .unwrap();
//! let session = Session::new();
//! let _: Vec<_> = Runner::new(FlowAgent::new(agent))
//!     .run(RunRequest::new([Message::user("Refund order 42?")]).session(Arc::clone(&session)))
//!     .collect()
//!     .await;
//! let verdict: Verdict = session.value("refund").unwrap().unwrap();
//! assert_eq!(verdict, Verdict { approved: true, amount_eur: 39.0 });
//! let second = &model.requests()[1];
//! assert!(second.messages.last().unwrap().content.contains("did not match"));
//! assert_eq!(second.output_schema.as_ref().unwrap().name, "Verdict");
//! # });
//! ```

use std::sync::Arc;

pub use crate::model::schema::{OutputSchema, DEFAULT_OUTPUT_RETRIES};

/// An agent's declared output: the schema, where the decoded value goes, how many retries.
#[derive(Debug, Clone)]
pub(crate) struct StructuredOutput {
    pub(crate) schema: Arc<OutputSchema>,
    /// The session key of the decoded value (`None`: the agent's name).
    pub(crate) key: Option<Arc<str>>,
    pub(crate) retries: u32,
}
