//! [`Limits`]: how much a request or a streamed event may weigh.

use std::time::Duration;

/// Sizes the server accepts and sends. Each has a safe default; a request over a limit is
/// refused with 413 (body) or 400 (message), an event over the event limit is replaced on the
/// wire by an `error` event naming the limit (the thread still records it whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes (default 64 KiB).
    pub max_body_bytes: usize,
    /// Largest user message of a turn, in bytes (default 16 KiB).
    pub max_message_bytes: usize,
    /// Largest `data:` payload of one Server-Sent Event, in bytes (default 1 MiB).
    pub max_event_bytes: usize,
    /// How often an idle event stream sends an SSE comment, so proxies keep it open and a
    /// client that went away is noticed (default 15 s).
    pub sse_keep_alive: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 * 1024,
            max_message_bytes: 16 * 1024,
            max_event_bytes: 1024 * 1024,
            sse_keep_alive: Duration::from_secs(15),
        }
    }
}
