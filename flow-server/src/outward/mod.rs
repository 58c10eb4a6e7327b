//! The outward form: what a client may see of a run, built in one place and used by every
//! transport (the SSE turns, the JSON endpoints, the console, and the protocol routers beside
//! them). Every type here is an allow-list: it names the fields that go out and copies nothing
//! else, so a field added to a runtime type later stays inside the server until someone adds it
//! here on purpose.
//!
//! Never sent: the agents' saved interrupt state (an interrupt's `state` and every
//! `address[N].state`, which hold system prompts, whole conversations and pending-call
//! bookkeeping), checkpoint internals, store keys (`FLOW.TENANT.THREAD`), the text of internal
//! errors (URLs of model endpoints, OS error text, store messages). An internal error goes out
//! as a [`PublicError`]: a stable code, a short message for an end user and a correlation id;
//! the internal error is logged (`tracing`, target `agentweave_server::outward`) with the same id.
//!
//! # Files
//!
//! - `message`: [`OutwardMessage`] (a message: role, content, tool calls, tool call id and
//!   name, parts, usage) and [`OutwardChunk`] (a piece of a streamed message).
//! - `action`: [`OutwardAction`] and [`OutwardInterrupt`] (`{id, info, address}`: the address
//!   as text, no saved state).
//! - `event`: [`OutwardEvent`], one [`AgentEvent`](agentweave_runtime::AgentEvent) as a client sees it.
//! - `error`: [`PublicError`] and [`PublicCode`]: errors in two faces joined by a correlation id.
//! - `values`: [`OutwardValues`], a run's session values without the framework's own.
//!
//! # Reusing it in a transport
//!
//! A new transport (a run endpoint, a webhook, A2A, AG-UI, the Agent Protocol) maps the
//! runtime's events through these types and nothing else:
//!
//! ```
//! use agentweave_runtime::{AgentEvent, Message};
//! use agentweave_server::outward::OutwardEvent;
//!
//! let event = AgentEvent::message(Message::assistant("hello"));
//! let json = serde_json::to_value(OutwardEvent::of(&event)).unwrap();
//! assert_eq!(json["message"]["content"], "hello");
//! ```
//!
//! [`OutwardEvent::of`] takes the event as it is (a streamed message is left out: send its
//! chunks as [`OutwardChunk`], then [`OutwardEvent::with_message`] with the whole message);
//! an interrupt is [`OutwardInterrupt::of`], an error [`PublicError::of_agent_error`] (or
//! [`PublicError::of_turn_failure`], [`PublicError::of_stream_error`], [`PublicError::internal`]),
//! which logs the internal face. A thread's recorded messages go out as [`OutwardMessage`].

mod action;
mod error;
mod event;
mod message;
mod values;

pub use action::{OutwardAction, OutwardInterrupt};
pub(crate) use error::{code_of_thread_error, correlation_id};
pub use error::{PublicCode, PublicError};
pub use event::OutwardEvent;
pub use message::{OutwardChunk, OutwardMessage};
pub use values::OutwardValues;
