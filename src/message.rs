//! The parts of a [`Message`](crate::Message) and of a streamed one
//! ([`MessageStream`](crate::MessageStream)): content parts, images, tool calls, shared
//! references ([`MessageRef`]), the sender side of a stream and its errors, and the
//! [`Messages`] an agent's input holds.

pub use agentweave_runtime::{
    ContentPart, ImageSource, MessageRef, MessageStreamSender, Messages, StreamError, StreamRecord,
    ToolCall,
};
