//! Which wait ran out and which size limit a reply went past, for [`ModelError`](super::ModelError)'s
//! `Timeout` and `LimitExceeded`: the words of the HTTP model clients' limits (`HttpLimits`,
//! in the in-process runtime), kept here so the error type does not depend on an HTTP client.

use std::fmt;

/// Which wait of a call ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutKind {
    /// Opening the connection (`HttpLimits::connect_timeout`).
    Connect,
    /// Waiting for the response head (`HttpLimits::first_byte_timeout`).
    FirstByte,
    /// Silence between two pieces of the body (`HttpLimits::idle_timeout`).
    Idle,
    /// The whole call (`HttpLimits::total_timeout`).
    Total,
}

impl TimeoutKind {
    /// The [`HttpLimits` field that sets this wait.
    pub fn field(self) -> &'static str {
        match self {
            TimeoutKind::Connect => "connect_timeout",
            TimeoutKind::FirstByte => "first_byte_timeout",
            TimeoutKind::Idle => "idle_timeout",
            TimeoutKind::Total => "total_timeout",
        }
    }
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutKind::Connect => "connection",
            TimeoutKind::FirstByte => "response head",
            TimeoutKind::Idle => "next piece of the body",
            TimeoutKind::Total => "end of the call",
        })
    }
}

/// Which size limit a reply went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SizeLimit {
    /// A whole response body (`HttpLimits::max_body_bytes`).
    Body,
    /// One SSE line (`HttpLimits::max_sse_line_bytes`).
    SseLine,
    /// One SSE event (`HttpLimits::max_sse_event_bytes`).
    SseEvent,
}

impl SizeLimit {
    /// The [`HttpLimits` field that sets this limit.
    pub fn field(self) -> &'static str {
        match self {
            SizeLimit::Body => "max_body_bytes",
            SizeLimit::SseLine => "max_sse_line_bytes",
            SizeLimit::SseEvent => "max_sse_event_bytes",
        }
    }
}

impl fmt::Display for SizeLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SizeLimit::Body => "the response body",
            SizeLimit::SseLine => "a server-sent event line",
            SizeLimit::SseEvent => "a server-sent event",
        })
    }
}
