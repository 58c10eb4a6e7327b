//! The JSON the server streams: one object per Server-Sent Event. Every object is built by the
//! [outward form](crate::outward), the one allow-listed serialisation every transport uses.
//!
//! | SSE `event:` | `data:` |
//! | --- | --- |
//! | `turn` | `{"flow", "thread", "turn", "started_at", "resumed"}`: first, once; `turn` counts from 0, `started_at` is the run path the turn started at |
//! | `chunk` | [`OutwardChunk`](crate::outward::OutwardChunk) `{"agent_name", "run_path", "content", "tool_calls"?}`: a piece of a streamed message, as it comes |
//! | `event` | [`OutwardEvent`](crate::outward::OutwardEvent) `{"agent_name", "run_path", "message"?, "streamed"?, "custom"?, "action"?, "error"?}`; a streamed message arrives here whole after its chunks, with `"streamed": true` |
//! | `error` | a [`PublicError`](crate::outward::PublicError) `{"code", "message", "correlation_id"}`: the server could not send something (an event over the size limit), the turn ran too long, or the turn failed and was not recorded |
//! | `done` | `{"output", "answered_by"?, "interrupted", "interrupts", "failed"?}`: last, once; `output` is the turn's answer, `interrupts` (`{"id", "info", "address"}`) what it waits on |
//!
//! `run_path` is the list of agent names from the root to the event's source. `action` is
//! `"exit"`, `{"transfer_to_agent": NAME}`, `{"interrupted": {"id", "info", "address"}}` (the
//! address as text; no saved state of the agent or of any frame is sent), `{"break_loop": NAME}`
//! or `{"custom": VALUE}`; `error` is a [`PublicError`](crate::outward::PublicError) `{"code",
//! "message", "correlation_id", "agent"?}`, whose internal side is in the server's log under the
//! same correlation id. A client that disconnects cancels the run.

/// The `data` of a `chunk` event (the outward chunk under its SSE name).
pub use crate::outward::OutwardChunk as ChunkData;
/// The `data` of an `event` event (the outward event under its SSE name).
pub use crate::outward::OutwardEvent as EventData;
/// What a client sees of an interrupt (the outward interrupt under its former name).
pub use crate::outward::OutwardInterrupt as PublicInterrupt;
