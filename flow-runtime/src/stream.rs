//! Streamed messages that several readers can consume independently.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use crate::message::{Message, MessageRef};

/// An error raised by the source of a [`MessageStream`] part-way through.
///
/// Every reader of the stream sees it once, after the chunks that came before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("message stream failed: {message}")]
pub struct StreamError {
    /// What went wrong, as the source reported it.
    pub message: Arc<str>,
}

impl StreamError {
    /// A stream error with the given description.
    pub fn new(message: impl Into<Arc<str>>) -> Self {
        StreamError {
            message: message.into(),
        }
    }
}

/// A message that arrives in chunks, which concatenate into one [`Message`].
///
/// A `MessageStream` is a *reader* over a shared buffer. [`fork`](MessageStream::fork) makes
/// another reader that starts at the same position; every reader sees every chunk, and a chunk
/// is stored once and handed to each reader as a shared [`MessageRef`], never copied. Whichever
/// reader is polled first pulls the next chunk from the source. Dropping a reader releases it:
/// the others carry on (Rust's `Drop` plays the part of Eino's automatic close).
///
/// ```
/// # futures::executor::block_on(async {
/// use flow_runtime::{Message, MessageStream};
/// use futures::StreamExt;
///
/// let chunks = vec![Message::assistant("Hel"), Message::assistant("lo")];
/// let caller = MessageStream::from_messages(chunks);
/// let session = caller.fork();
/// let seen: Vec<_> = caller.map(|c| c.unwrap().content.clone()).collect().await;
/// assert_eq!(seen, ["Hel", "lo"]);
/// assert_eq!(session.collect_message().await.unwrap().content, "Hello");
/// # });
/// ```
pub struct MessageStream {
    shared: Arc<Shared>,
    pos: usize,
    /// Whether this reader has already reported the source's error.
    error_seen: bool,
}

struct Shared {
    state: Mutex<State>,
}

struct State {
    chunks: Vec<MessageRef>,
    source: Option<BoxStream<'static, Result<Message, StreamError>>>,
    error: Option<StreamError>,
    /// Readers parked waiting for a chunk that another reader's poll of the source may bring.
    waiting: Vec<Waker>,
    readers: usize,
}

impl State {
    fn finished(&self) -> bool {
        self.source.is_none()
    }

    fn wake_waiting(&mut self) {
        if !self.waiting.is_empty() {
            for w in self.waiting.drain(..) {
                w.wake();
            }
        }
    }
}

impl MessageStream {
    /// A stream over any source of chunks.
    pub fn from_stream<S>(source: S) -> Self
    where
        S: Stream<Item = Result<Message, StreamError>> + Send + 'static,
    {
        Self::with_state(State {
            chunks: Vec::new(),
            source: Some(source.boxed()),
            error: None,
            waiting: Vec::new(),
            readers: 1,
        })
    }

    /// A stream whose chunks are all known already.
    pub fn from_messages(chunks: impl IntoIterator<Item = Message>) -> Self {
        Self::with_state(State {
            chunks: chunks.into_iter().map(Arc::new).collect(),
            source: None,
            error: None,
            waiting: Vec::new(),
            readers: 1,
        })
    }

    /// A stream fed by the returned sender; it ends when the sender is dropped.
    ///
    /// The channel is unbounded: a producer never waits for slow readers.
    pub fn channel() -> (MessageStreamSender, MessageStream) {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        (MessageStreamSender { tx }, MessageStream::from_stream(rx))
    }

    fn with_state(state: State) -> Self {
        MessageStream {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
            }),
            pos: 0,
            error_seen: false,
        }
    }

    /// Another reader over the same chunks, starting where this reader is now.
    pub fn fork(&self) -> MessageStream {
        let mut state = self.shared.state.lock().expect("message stream lock");
        state.readers += 1;
        drop(state);
        MessageStream {
            shared: Arc::clone(&self.shared),
            pos: self.pos,
            error_seen: self.error_seen,
        }
    }

    /// Reads the rest of this reader's chunks and concatenates them (see [`Message::concat`]).
    ///
    /// Fails with the source's error if it failed; the chunks read so far are still available to
    /// other readers.
    pub async fn collect_message(mut self) -> Result<Message, StreamError> {
        let mut chunks = Vec::with_capacity(self.size_hint().0);
        while let Some(chunk) = self.next().await {
            chunks.push(chunk?);
        }
        Ok(Message::concat(chunks.iter().map(|c| &**c)))
    }

    /// The chunks buffered so far and whether the source has ended, without polling it.
    pub fn buffered(&self) -> (Vec<MessageRef>, bool) {
        let state = self.shared.state.lock().expect("message stream lock");
        (state.chunks.clone(), state.finished())
    }
}

impl Stream for MessageStream {
    type Item = Result<MessageRef, StreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut state = this.shared.state.lock().expect("message stream lock");
        loop {
            if let Some(chunk) = state.chunks.get(this.pos) {
                this.pos += 1;
                return Poll::Ready(Some(Ok(Arc::clone(chunk))));
            }
            if state.chunks.is_empty() {
                // A source that knows its length (a scripted reply, a replay) fills the buffer
                // without regrowing it.
                let expected = state.source.as_ref().map_or(0, |s| s.size_hint().0);
                state.chunks.reserve(expected.min(1 << 16));
            }
            let Some(source) = state.source.as_mut() else {
                if let (Some(err), false) = (&state.error, this.error_seen) {
                    this.error_seen = true;
                    return Poll::Ready(Some(Err(err.clone())));
                }
                return Poll::Ready(None);
            };
            match source.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    // Hand the new chunk to this reader straight away.
                    let chunk = Arc::new(chunk);
                    state.chunks.push(Arc::clone(&chunk));
                    state.wake_waiting();
                    this.pos += 1;
                    return Poll::Ready(Some(Ok(chunk)));
                }
                Poll::Ready(Some(Err(err))) => {
                    state.error = Some(err);
                    state.source = None;
                    state.wake_waiting();
                }
                Poll::Ready(None) => {
                    state.source = None;
                    state.wake_waiting();
                }
                Poll::Pending => {
                    if !state.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                        state.waiting.push(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.remaining_hint()
    }
}

impl MessageStream {
    /// Chunks this reader has yet to read: those buffered past it, plus what the source says
    /// it still has.
    fn remaining_hint(&self) -> (usize, Option<usize>) {
        let state = self.shared.state.lock().expect("message stream lock");
        let buffered = state.chunks.len().saturating_sub(self.pos);
        match &state.source {
            Some(source) => {
                let (low, high) = source.size_hint();
                (
                    buffered.saturating_add(low),
                    high.and_then(|h| h.checked_add(buffered)),
                )
            }
            None => {
                let error = usize::from(state.error.is_some() && !self.error_seen);
                (buffered + error, Some(buffered + error))
            }
        }
    }
}

impl Drop for MessageStream {
    fn drop(&mut self) {
        if let Ok(mut state) = self.shared.state.lock() {
            state.readers -= 1;
            if state.readers == 0 {
                // Last reader: release the source (and whatever it holds open) now.
                state.source = None;
                state.chunks.clear();
            } else {
                // The source may have registered only this reader's waker: wake the others so
                // one of them polls the source with its own.
                state.wake_waiting();
            }
        }
    }
}

impl fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock().expect("message stream lock");
        f.debug_struct("MessageStream")
            .field("pos", &self.pos)
            .field("buffered", &state.chunks.len())
            .field("finished", &state.finished())
            .finish()
    }
}

/// The sending half of [`MessageStream::channel`].
#[derive(Clone)]
pub struct MessageStreamSender {
    tx: futures::channel::mpsc::UnboundedSender<Result<Message, StreamError>>,
}

impl MessageStreamSender {
    /// Sends a chunk. Returns `false` if every reader has gone.
    pub fn send(&self, chunk: Message) -> bool {
        self.tx.unbounded_send(Ok(chunk)).is_ok()
    }

    /// Ends the stream with an error that every reader will see.
    pub fn fail(self, error: StreamError) {
        let _ = self.tx.unbounded_send(Err(error));
    }
}

impl fmt::Debug for MessageStreamSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageStreamSender")
            .finish_non_exhaustive()
    }
}
