//! Bounded HTTP for model clients: timeouts that hold, bodies read with a size limit, and
//! server-sent events decoded in linear time with line and event size limits.
//!
//! Protocol-independent: an OpenAI, Anthropic or any other HTTP model client sends its
//! request through an [`HttpCall`] and reads the answer through it, and gets every bound of
//! [`HttpLimits`] for free:
//!
//! - **connect**: [`HttpLimits::connect_timeout`], set on the client by [`HttpLimits::client`];
//! - **time to first byte**: [`HttpLimits::first_byte_timeout`], from sending the request to
//!   the response head;
//! - **idle**: [`HttpLimits::idle_timeout`], the longest silence between two pieces of a body
//!   (a streamed reply's chunks, or a whole reply arriving slowly);
//! - **total**: [`HttpLimits::total_timeout`], one deadline for the whole call, streamed or
//!   not, from the request to the last byte;
//! - **sizes**: a whole body ([`HttpLimits::max_body_bytes`]), an error body (cut at
//!   [`HttpLimits::max_error_body_bytes`]), one SSE line ([`HttpLimits::max_sse_line_bytes`])
//!   and one SSE event ([`HttpLimits::max_sse_event_bytes`]).
//!
//! SSE decoding uses the `eventsource-stream` crate for the protocol's field rules (`data:`
//! lines joined, comments, `event:`, `id:`, `retry:`, a leading BOM). That crate alone neither
//! bounds its buffers nor stays linear (it rescans an unfinished line on every read and copies
//! the rest of its buffer for each line it takes), so [`HttpCall::events`] hands it exactly one
//! whole line at a time: lines are split here, scanning each byte once, and refused past their
//! limits before anything is buffered further.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentweave_runtime::model::HttpError> {
//! use futures::StreamExt;
//! use agentweave_runtime::model::{HttpCall, HttpLimits};
//!
//! let limits = HttpLimits::default();
//! let client = limits.client()?;
//! let call = HttpCall::start(&limits);
//! let response = call.send(client.post("http://localhost:8000/v1/stream").body("{}")).await?;
//! let mut events = call.events(response);
//! while let Some(event) = events.next().await {
//!     println!("{}", event?.data);
//! }
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use tokio::time::Instant;

pub use agentweave_core::model::{SizeLimit, TimeoutKind};
pub use eventsource_stream::Event as SseEvent;

/// The bounds of one HTTP model call. Every default is finite and far above what a healthy
/// server needs; raise one when a slow but healthy server or a very long reply meets it.
///
/// ```
/// use std::time::Duration;
/// use agentweave_runtime::model::HttpLimits;
///
/// let limits = HttpLimits::default()
///     .total_timeout(Duration::from_secs(30))
///     .max_sse_event_bytes(1 << 20);
/// assert_eq!(limits.total_timeout, Duration::from_secs(30));
/// assert_eq!(limits.idle_timeout, HttpLimits::default().idle_timeout);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLimits {
    /// Longest wait to open a connection (TCP and TLS). Default 10 s.
    pub connect_timeout: Duration,
    /// Longest wait from sending the request to the response head. A non-streamed reply is
    /// usually generated before its head is sent, so this bounds the model's thinking time.
    /// Default 300 s.
    pub first_byte_timeout: Duration,
    /// Longest silence between two pieces of a body once the head arrived. Default 120 s.
    pub idle_timeout: Duration,
    /// Deadline for the whole call, from the request to the last byte, streamed or not.
    /// Default 900 s.
    pub total_timeout: Duration,
    /// Largest whole (non-streamed) response body. Default 32 MiB.
    pub max_body_bytes: usize,
    /// How much of an error response body is read (the rest is dropped, not waited for).
    /// Default 64 KiB.
    pub max_error_body_bytes: usize,
    /// Largest SSE line, terminator included. Default 4 MiB.
    pub max_sse_line_bytes: usize,
    /// Largest SSE event: all its lines up to the blank line that ends it. Default 16 MiB.
    pub max_sse_event_bytes: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            total_timeout: Duration::from_secs(900),
            max_body_bytes: 32 << 20,
            max_error_body_bytes: 64 << 10,
            max_sse_line_bytes: 4 << 20,
            max_sse_event_bytes: 16 << 20,
        }
    }
}

impl HttpLimits {
    /// Sets [`connect_timeout`](Self::connect_timeout).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// Sets [`first_byte_timeout`](Self::first_byte_timeout).
    pub fn first_byte_timeout(mut self, limit: Duration) -> Self {
        self.first_byte_timeout = limit;
        self
    }

    /// Sets [`idle_timeout`](Self::idle_timeout).
    pub fn idle_timeout(mut self, limit: Duration) -> Self {
        self.idle_timeout = limit;
        self
    }

    /// Sets [`total_timeout`](Self::total_timeout).
    pub fn total_timeout(mut self, limit: Duration) -> Self {
        self.total_timeout = limit;
        self
    }

    /// Sets [`max_body_bytes`](Self::max_body_bytes).
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// Sets [`max_error_body_bytes`](Self::max_error_body_bytes).
    pub fn max_error_body_bytes(mut self, limit: usize) -> Self {
        self.max_error_body_bytes = limit;
        self
    }

    /// Sets [`max_sse_line_bytes`](Self::max_sse_line_bytes).
    pub fn max_sse_line_bytes(mut self, limit: usize) -> Self {
        self.max_sse_line_bytes = limit;
        self
    }

    /// Sets [`max_sse_event_bytes`](Self::max_sse_event_bytes).
    pub fn max_sse_event_bytes(mut self, limit: usize) -> Self {
        self.max_sse_event_bytes = limit;
        self
    }

    /// A `reqwest` client with [`connect_timeout`](Self::connect_timeout) set (the other
    /// bounds are applied per call by [`HttpCall`]). A client of your own works too: set its
    /// connect timeout yourself.
    pub fn client(&self) -> Result<reqwest::Client, HttpError> {
        reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|e| HttpError::Connection {
                message: format!("cannot set up the HTTP client: {}", error_chain(&e)),
            })
    }

    /// A `reqwest` client held to `policy` (see [`crate::outbound`]): names resolved through
    /// its guarded resolver on every connection, no proxy, redirects only to the same origin,
    /// with this [`connect_timeout`](Self::connect_timeout) and
    /// [`total_timeout`](Self::total_timeout). What a client whose URLs someone else chose
    /// uses; an operator's own model client may opt in with it too.
    pub fn client_within(
        &self,
        policy: &crate::outbound::OutboundPolicy,
    ) -> Result<reqwest::Client, HttpError> {
        policy
            .client_builder()
            .connect_timeout(self.connect_timeout)
            .timeout(self.total_timeout)
            .build()
            .map_err(|e| HttpError::Connection {
                message: format!("cannot set up the HTTP client: {}", error_chain(&e)),
            })
    }
}

/// Why an HTTP call failed. A model client turns it into its
/// [`ModelError`](super::ModelError) with [`HttpError::into_model_error`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A wait ran out. Retryable.
    #[error(
        "no {kind} within {limit:?} (HttpLimits::{}); raise it if the server is slow but healthy",
        kind.field()
    )]
    Timeout {
        /// Which wait.
        kind: TimeoutKind,
        /// The limit that ran out.
        limit: Duration,
    },
    /// The reply went past a size limit; reading stopped there. Not retryable.
    #[error(
        "{what} is larger than {limit} bytes (HttpLimits::{}); raise the limit if the server is \
         trusted and the reply legitimately this large",
        what.field()
    )]
    TooLarge {
        /// Which limit.
        what: SizeLimit,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The request could not be sent or no response came back. Retryable.
    #[error("{message}")]
    Connection {
        /// What failed.
        message: String,
    },
    /// Reading the body failed part-way. Retryable.
    #[error("{message}")]
    Interrupted {
        /// What failed.
        message: String,
    },
    /// The body is not valid server-sent events. Not retryable.
    #[error("{message}")]
    Malformed {
        /// What was wrong.
        message: String,
    },
}

impl HttpError {
    /// The [`ModelError`](super::ModelError) of `model` for this failure: a timeout is
    /// [`ModelError::Timeout`](super::ModelError::Timeout), a size limit
    /// [`ModelError::LimitExceeded`](super::ModelError::LimitExceeded), the rest keep their
    /// kind.
    pub fn into_model_error(self, model: &str) -> super::ModelError {
        use super::ModelError;
        let model: std::sync::Arc<str> = model.into();
        match self {
            HttpError::Timeout { kind, limit } => ModelError::Timeout { model, kind, limit },
            HttpError::TooLarge { what, limit } => ModelError::LimitExceeded { model, what, limit },
            HttpError::Connection { message } => ModelError::Connection {
                model,
                message: message.into(),
            },
            HttpError::Interrupted { message } => ModelError::StreamInterrupted {
                model,
                message: message.into(),
            },
            HttpError::Malformed { message } => ModelError::Malformed {
                model,
                message: message.into(),
            },
        }
    }
}

/// One HTTP call under [`HttpLimits`]: its total deadline starts with [`HttpCall::start`] and
/// holds across sending, reading a whole body, and every event of a stream.
#[derive(Debug, Clone)]
pub struct HttpCall {
    limits: HttpLimits,
    deadline: Instant,
}

impl HttpCall {
    /// Starts a call now: the total deadline is `now + limits.total_timeout`.
    pub fn start(limits: &HttpLimits) -> Self {
        HttpCall {
            limits: limits.clone(),
            deadline: Instant::now() + limits.total_timeout,
        }
    }

    /// The limits of this call.
    pub fn limits(&self) -> &HttpLimits {
        &self.limits
    }

    /// Waits for `future` up to `limit` and the total deadline, whichever comes first.
    async fn within<T>(
        &self,
        kind: TimeoutKind,
        limit: Duration,
        future: impl std::future::Future<Output = T>,
    ) -> Result<T, HttpError> {
        let own = Instant::now() + limit;
        let (at, kind, limit) = if own <= self.deadline {
            (own, kind, limit)
        } else {
            (self.deadline, TimeoutKind::Total, self.limits.total_timeout)
        };
        tokio::time::timeout_at(at, future)
            .await
            .map_err(|_| HttpError::Timeout { kind, limit })
    }

    /// Sends the request and waits for the response head (first-byte timeout, total
    /// deadline). A connection that cannot be opened in time is a
    /// [`TimeoutKind::Connect`] timeout (when the client has the connect timeout of
    /// [`HttpLimits::client`]).
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, HttpError> {
        let (limit, kind) = (self.limits.first_byte_timeout, TimeoutKind::FirstByte);
        match self.within(kind, limit, request.send()).await? {
            Ok(response) => Ok(response),
            Err(e) if e.is_connect() && e.is_timeout() => Err(HttpError::Timeout {
                kind: TimeoutKind::Connect,
                limit: self.limits.connect_timeout,
            }),
            Err(e) => Err(HttpError::Connection {
                message: error_chain(&e),
            }),
        }
    }

    /// The next piece of `body`, within the idle timeout and the total deadline.
    async fn next_piece<S>(&self, body: &mut S) -> Result<Option<Bytes>, HttpError>
    where
        S: Stream<Item = reqwest::Result<Bytes>> + Unpin,
    {
        match self
            .within(TimeoutKind::Idle, self.limits.idle_timeout, body.next())
            .await?
        {
            None => Ok(None),
            Some(Ok(piece)) => Ok(Some(piece)),
            Some(Err(e)) => Err(HttpError::Interrupted {
                message: format!("reading the reply: {}", error_chain(&e)),
            }),
        }
    }

    /// Reads a whole body, refusing it past [`HttpLimits::max_body_bytes`] (at once if its
    /// `Content-Length` says so, otherwise as soon as that many bytes arrived).
    pub async fn body(&self, response: reqwest::Response) -> Result<Bytes, HttpError> {
        let limit = self.limits.max_body_bytes;
        let too_large = HttpError::TooLarge {
            what: SizeLimit::Body,
            limit,
        };
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_large);
        }
        let mut body = response.bytes_stream();
        let mut all = BytesMut::new();
        while let Some(piece) = self.next_piece(&mut body).await? {
            if all.len() + piece.len() > limit {
                return Err(too_large);
            }
            all.extend_from_slice(&piece);
        }
        Ok(all.freeze())
    }

    /// Reads up to [`HttpLimits::max_error_body_bytes`] of an error body as text (lossy
    /// UTF-8) and drops the rest. Never fails: a body that cannot be read in time is cut
    /// where it stopped.
    pub async fn error_body(&self, response: reqwest::Response) -> String {
        let limit = self.limits.max_error_body_bytes;
        let mut body = response.bytes_stream();
        let mut all = Vec::new();
        while let Ok(Some(piece)) = self.next_piece(&mut body).await {
            let room = limit - all.len();
            all.extend_from_slice(&piece[..piece.len().min(room)]);
            if all.len() >= limit {
                break;
            }
        }
        String::from_utf8_lossy(&all).into_owned()
    }

    /// The server-sent events of a streamed body, each within the idle timeout and the total
    /// deadline, under the line and event size limits. The first `Err` ends the stream.
    /// An event not followed by a blank line when the body ends still counts.
    pub fn events(
        &self,
        response: reqwest::Response,
    ) -> BoxStream<'static, Result<SseEvent, HttpError>> {
        let call = self.clone();
        let lines = SseLines::new(&self.limits);
        let body = response.bytes_stream().boxed();
        let lines = futures::stream::unfold(
            (call, body, lines),
            |(call, mut body, mut lines)| async move {
                loop {
                    if let Some(item) = lines.ready.pop_front() {
                        return Some((item, (call, body, lines)));
                    }
                    if lines.ended {
                        return None;
                    }
                    match call.next_piece(&mut body).await {
                        Ok(Some(piece)) => lines.push(&piece),
                        Ok(None) => lines.finish(),
                        Err(e) => {
                            lines.fail(e);
                        }
                    }
                }
            },
        );
        decode_lines(lines)
    }
}

/// Decodes whole lines (as [`SseLines`] yields them) into events with `eventsource-stream`.
fn decode_lines<S>(lines: S) -> BoxStream<'static, Result<SseEvent, HttpError>>
where
    S: Stream<Item = Result<Bytes, HttpError>> + Send + 'static,
{
    eventsource_stream::EventStream::new(lines)
        .map(|item| {
            item.map_err(|e| match e {
                eventsource_stream::EventStreamError::Transport(e) => e,
                other => HttpError::Malformed {
                    message: format!("the body is not valid server-sent events: {other}"),
                },
            })
        })
        .scan(false, |failed, item| {
            // The first error ends the stream.
            let out = if *failed { None } else { Some(item) };
            if matches!(out, Some(Err(_))) {
                *failed = true;
            }
            futures::future::ready(out)
        })
        .boxed()
}

/// Splits a body into whole SSE lines in one pass, under the line and event size limits.
///
/// Each line comes out on its own, valid UTF-8 (invalid bytes replaced) and ending with
/// `\n` (CR and CRLF terminators are normalised), so the decoder behind it never holds more
/// than one line and never rescans.
struct SseLines {
    max_line: usize,
    max_event: usize,
    /// The unfinished line.
    partial: BytesMut,
    /// The last byte seen was a CR: a LF right after it belongs to the same terminator.
    after_cr: bool,
    /// Bytes of the current event so far (its lines up to the blank line ending it).
    event_bytes: usize,
    ready: VecDeque<Result<Bytes, HttpError>>,
    ended: bool,
}

impl SseLines {
    fn new(limits: &HttpLimits) -> Self {
        SseLines {
            max_line: limits.max_sse_line_bytes,
            max_event: limits.max_sse_event_bytes,
            partial: BytesMut::new(),
            after_cr: false,
            event_bytes: 0,
            ready: VecDeque::new(),
            ended: false,
        }
    }

    fn push(&mut self, mut piece: &[u8]) {
        if self.ended {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = piece.strip_prefix(b"\n") {
                piece = rest;
            }
        }
        while let Some(end) = piece.iter().position(|&b| b == b'\n' || b == b'\r') {
            if !self.take(&piece[..end], true) {
                return;
            }
            let cr = piece[end] == b'\r';
            piece = &piece[end + 1..];
            if cr {
                match piece.first() {
                    Some(b'\n') => piece = &piece[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.take(piece, false);
    }

    /// Adds `bytes` to the current line, ending it if `end`. False once a limit is passed.
    fn take(&mut self, bytes: &[u8], end: bool) -> bool {
        let line = self.partial.len() + bytes.len() + 1;
        if line > self.max_line {
            return self.fail(HttpError::TooLarge {
                what: SizeLimit::SseLine,
                limit: self.max_line,
            });
        }
        if self.event_bytes + line > self.max_event {
            return self.fail(HttpError::TooLarge {
                what: SizeLimit::SseEvent,
                limit: self.max_event,
            });
        }
        if !end {
            self.partial.extend_from_slice(bytes);
            return true;
        }
        let mut whole = std::mem::take(&mut self.partial);
        whole.extend_from_slice(bytes);
        if whole.is_empty() {
            self.event_bytes = 0;
        } else {
            self.event_bytes += whole.len() + 1;
        }
        whole.extend_from_slice(b"\n");
        let line = match std::str::from_utf8(&whole) {
            Ok(_) => whole.freeze(),
            Err(_) => Bytes::from(String::from_utf8_lossy(&whole).into_owned()),
        };
        self.ready.push_back(Ok(line));
        true
    }

    /// The body ended: an unfinished line and event still count.
    fn finish(&mut self) {
        if self.ended {
            return;
        }
        if !self.partial.is_empty() && !self.take(&[], true) {
            return;
        }
        if self.event_bytes > 0 {
            self.ready.push_back(Ok(Bytes::from_static(b"\n")));
        }
        self.ended = true;
    }

    fn fail(&mut self, error: HttpError) -> bool {
        self.partial = BytesMut::new();
        self.ready.push_back(Err(error));
        self.ended = true;
        false
    }
}

/// An error with its sources, `: `-separated (reqwest puts the cause deep in the chain).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(line: usize, event: usize) -> HttpLimits {
        HttpLimits::default()
            .max_sse_line_bytes(line)
            .max_sse_event_bytes(event)
    }

    /// Decodes `pieces` as one body.
    async fn decode(limits: &HttpLimits, pieces: &[&[u8]]) -> Vec<Result<String, String>> {
        let mut lines = SseLines::new(limits);
        for p in pieces {
            lines.push(p);
        }
        lines.finish();
        let items: Vec<_> = lines.ready.into_iter().collect();
        decode_lines(futures::stream::iter(items))
            .map(|r| r.map(|e| e.data).map_err(|e| e.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn events_split_anywhere_decode_the_same() {
        let body = b"data: one\n\n: comment\r\nevent: x\r\ndata: two\r\ndata: lines\r\n\r\ndata: three\rdata: 3\r\rdata: last";
        let want: Vec<Result<String, String>> = vec![
            Ok("one".into()),
            Ok("two\nlines".into()),
            Ok("three\n3".into()),
            Ok("last".into()),
        ];
        let l = HttpLimits::default();
        assert_eq!(decode(&l, &[body]).await, want);
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(decode(&l, &[a, b]).await, want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&l, &bytes).await, want);
    }

    #[tokio::test]
    async fn a_line_past_its_limit_ends_the_stream_with_the_limit_named() {
        let got = decode(
            &limits(16, 1024),
            &[b"data: ok\n\ndata: 0123456789", b"0123456789"],
        )
        .await;
        assert_eq!(got[0], Ok("ok".to_owned()));
        let Err(e) = &got[1] else { panic!("{got:?}") };
        assert!(
            e.starts_with(
                "a server-sent event line is larger than 16 bytes (HttpLimits::max_sse_line_bytes)"
            ),
            "{e}"
        );
        assert_eq!(got.len(), 2);
    }

    #[tokio::test]
    async fn an_event_past_its_limit_ends_the_stream_with_the_limit_named() {
        let got = decode(
            &limits(64, 40),
            &[b"data: 0123456789\ndata: 0123456789\ndata: x\n\n"],
        )
        .await;
        let [Err(e)] = &got[..] else {
            panic!("{got:?}")
        };
        assert!(e.contains("HttpLimits::max_sse_event_bytes"), "{e}");
        // Blank lines reset the count: many small events pass.
        let many = b"data: 0123456789\n\n".repeat(100);
        assert_eq!(decode(&limits(64, 40), &[&many]).await.len(), 100);
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced_not_buffered() {
        let got = decode(&HttpLimits::default(), &[b"data: a\xffb\n\ndata: c\n\n"]).await;
        assert_eq!(got, vec![Ok("a\u{fffd}b".to_owned()), Ok("c".to_owned())]);
    }
}
