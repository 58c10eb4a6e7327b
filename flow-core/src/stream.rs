//! Streamed messages that several readers can consume independently.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use crate::message::{Concat, Message, MessageRef};

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
/// reader is polled first pulls the next chunk from the source. A chunk stays buffered only
/// until every live reader has read it (or gone): a lone reader keeps nothing. Dropping a
/// reader releases it: the others carry on (Rust's `Drop` plays the part of Eino's automatic
/// close); once no reader and no unfinished [`StreamRecord`] is left, the source is dropped
/// too.
///
/// To get the whole message without holding on to the chunks, take a
/// [`record`](MessageStream::record): it concatenates the chunks as they are pulled, whoever
/// pulls them (this is how the session records a streamed event).
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::{Message, MessageStream};
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
    /// The number of the next chunk this reader reads.
    pos: usize,
    /// Whether this reader has already reported the source's error.
    error_seen: bool,
}

struct Shared {
    state: Mutex<State>,
}

type Source = BoxStream<'static, Result<Message, StreamError>>;

/// A chunk pulled from the source that a live reader has yet to read.
struct Buffered {
    chunk: MessageRef,
    /// Readers whose next chunk this is.
    next_for: usize,
}

/// What a [`StreamRecord`] has made of the stream so far.
enum RecordSlot {
    /// No record here (it was dropped, or its result taken).
    Free,
    /// The stream is still running: the chunks concatenated so far.
    Open(Concat),
    /// The stream has ended: the whole message, or the source's error.
    Done(Result<MessageRef, StreamError>),
}

struct State {
    /// The chunks some live reader has yet to read, oldest first: `buffer[k]` is chunk number
    /// `base + k`. The oldest leaves as soon as no reader waits at it, so the buffer spans
    /// from the slowest live reader to the source (and is empty when nobody lags behind).
    buffer: VecDeque<Buffered>,
    /// The number of the oldest buffered chunk.
    base: usize,
    /// Readers whose next chunk is the source's next one (number `base + buffer.len()`).
    at_head: usize,
    /// Live readers.
    readers: usize,
    source: Option<Source>,
    error: Option<StreamError>,
    /// Readers and records parked waiting for a chunk that another one's poll of the source
    /// may bring.
    waiting: Vec<Waker>,
    /// The records of this stream, by slot; each is fed every chunk the source gives.
    records: Vec<RecordSlot>,
}

impl State {
    fn new(buffer: VecDeque<Buffered>, source: Option<Source>) -> State {
        let at_head = usize::from(buffer.is_empty());
        State {
            buffer,
            base: 0,
            at_head,
            readers: 1,
            source,
            error: None,
            waiting: Vec::new(),
            records: Vec::new(),
        }
    }

    fn finished(&self) -> bool {
        self.source.is_none()
    }

    /// The number of the next chunk the source will give.
    fn head(&self) -> usize {
        self.base + self.buffer.len()
    }

    fn wake_waiting(&mut self) {
        if !self.waiting.is_empty() {
            for w in self.waiting.drain(..) {
                w.wake();
            }
        }
    }

    /// Counts one more reader whose next chunk is number `pos`.
    fn arrive(&mut self, pos: usize) {
        match self.buffer.get_mut(pos - self.base) {
            Some(b) => b.next_for += 1,
            None => self.at_head += 1,
        }
    }

    /// One reader fewer waits at chunk `pos`; chunks nobody waits for any more are dropped.
    fn leave(&mut self, pos: usize) {
        match self.buffer.get_mut(pos - self.base) {
            Some(b) => {
                b.next_for -= 1;
                while self.buffer.front().is_some_and(|b| b.next_for == 0) {
                    self.buffer.pop_front();
                    self.base += 1;
                }
            }
            None => self.at_head -= 1,
        }
    }

    /// Whether a chunk pulled now must be buffered: some reader has yet to read it (every
    /// live reader is at the head or behind it).
    fn someone_needs_head(&self) -> bool {
        self.at_head > 0 || !self.buffer.is_empty()
    }

    /// The chunk at the head was pulled: buffer it for the readers that have yet to read it
    /// (those at the head now wait at the next one), or count it as passed.
    fn pass_head(&mut self, chunk: Option<MessageRef>) {
        match chunk {
            Some(chunk) => {
                self.buffer.push_back(Buffered {
                    chunk,
                    next_for: self.at_head,
                });
                self.at_head = 0;
            }
            None => self.base += 1,
        }
    }

    fn has_open_records(&self) -> bool {
        self.records
            .iter()
            .any(|r| matches!(r, RecordSlot::Open(_)))
    }

    /// Polls the source for its next chunk and feeds it to the open records. At the end (or
    /// the source's error) the records are finished and everyone waiting is woken; `None`
    /// then, and also when the source is already gone.
    #[inline]
    fn pull(&mut self, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        let Some(source) = self.source.as_mut() else {
            self.finish_records(None);
            return Poll::Ready(None);
        };
        match source.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                for record in &mut self.records {
                    if let RecordSlot::Open(whole) = record {
                        whole.push(&chunk);
                    }
                }
                self.wake_waiting();
                Poll::Ready(Some(chunk))
            }
            Poll::Ready(Some(Err(err))) => {
                self.source = None;
                self.finish_records(Some(&err));
                self.error = Some(err);
                self.wake_waiting();
                Poll::Ready(None)
            }
            Poll::Ready(None) => {
                self.source = None;
                self.finish_records(None);
                self.wake_waiting();
                Poll::Ready(None)
            }
            Poll::Pending => {
                if !self.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                    self.waiting.push(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }

    fn finish_records(&mut self, error: Option<&StreamError>) {
        for record in &mut self.records {
            if let RecordSlot::Open(whole) = record {
                let done = match error {
                    Some(err) => Err(err.clone()),
                    None => Ok(Arc::new(std::mem::take(whole).finish())),
                };
                *record = RecordSlot::Done(done);
            }
        }
    }

    /// Drops the source if nobody can read from it any more; returns it, to be dropped
    /// outside the lock.
    fn release_if_unused(&mut self) -> Option<Source> {
        if self.readers == 0 && !self.has_open_records() {
            self.buffer.clear();
            self.source.take()
        } else {
            // The source may have registered only the leaver's waker: wake the others so one
            // of them polls the source with its own.
            self.wake_waiting();
            None
        }
    }
}

impl MessageStream {
    /// A stream over any source of chunks.
    pub fn from_stream<S>(source: S) -> Self
    where
        S: Stream<Item = Result<Message, StreamError>> + Send + 'static,
    {
        Self::with_state(State::new(VecDeque::new(), Some(source.boxed())))
    }

    /// A stream whose chunks are all known already.
    pub fn from_messages(chunks: impl IntoIterator<Item = Message>) -> Self {
        let buffer: VecDeque<Buffered> = chunks
            .into_iter()
            .enumerate()
            .map(|(i, chunk)| Buffered {
                chunk: Arc::new(chunk),
                next_for: usize::from(i == 0),
            })
            .collect();
        Self::with_state(State::new(buffer, None))
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

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().expect("message stream lock")
    }

    /// Another reader over the same chunks, starting where this reader is now.
    pub fn fork(&self) -> MessageStream {
        let mut state = self.lock();
        state.readers += 1;
        state.arrive(self.pos);
        drop(state);
        MessageStream {
            shared: Arc::clone(&self.shared),
            pos: self.pos,
            error_seen: self.error_seen,
        }
    }

    /// Starts recording the message from this reader's position: the chunks it has yet to
    /// read are concatenated (see [`Message::concat`]) as they are pulled from the source, by
    /// any reader or by the record itself, so the record holds the message being built,
    /// never the chunks. The record reads what this reader would: the same chunks, then the
    /// source's error if this reader has yet to see it.
    ///
    /// While the stream runs, the record keeps the source alive even when every reader has
    /// gone, so its [`message`](StreamRecord::message) can pull the rest itself.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use agentweave_runtime::{Message, MessageStream};
    /// use futures::StreamExt;
    ///
    /// let (tx, mut caller) = MessageStream::channel();
    /// let record = caller.record();
    /// tx.send(Message::assistant("Hel"));
    /// tx.send(Message::assistant("lo"));
    /// drop(tx);
    /// assert_eq!(caller.next().await.unwrap().unwrap().content, "Hel");
    /// drop(caller); // the record reads the rest itself
    /// assert_eq!(record.message().await.unwrap().content, "Hello");
    /// # });
    /// ```
    pub fn record(&self) -> StreamRecord {
        let mut state = self.lock();
        let passed = self.pos - state.base;
        let mut whole = Concat::default();
        for b in state.buffer.range(passed..) {
            whole.push(&b.chunk);
        }
        let slot = if !state.finished() {
            RecordSlot::Open(whole)
        } else {
            match (&state.error, self.error_seen) {
                (Some(err), false) => RecordSlot::Done(Err(err.clone())),
                _ => RecordSlot::Done(Ok(Arc::new(whole.finish()))),
            }
        };
        let index = match state
            .records
            .iter()
            .position(|r| matches!(r, RecordSlot::Free))
        {
            Some(free) => {
                state.records[free] = slot;
                free
            }
            None => {
                state.records.push(slot);
                state.records.len() - 1
            }
        };
        drop(state);
        StreamRecord {
            shared: Arc::clone(&self.shared),
            slot: index,
        }
    }

    /// Reads the rest of this reader's chunks and concatenates them (see [`Message::concat`]).
    ///
    /// Fails with the source's error if it failed; the chunks read so far are still available to
    /// other readers.
    pub async fn collect_message(self) -> Result<Message, StreamError> {
        let record = self.record();
        // The record reads on for this reader, keeping no chunk for it.
        drop(self);
        let whole = record.take_message().await?;
        Ok(Arc::try_unwrap(whole).unwrap_or_else(|shared| Message::clone(&shared)))
    }

    /// The chunks this reader has yet to read that were already pulled from the source, and
    /// whether the source has ended, without polling it. (Chunks that every reader has read
    /// are no longer kept.)
    pub fn buffered(&self) -> (Vec<MessageRef>, bool) {
        let state = self.lock();
        let passed = self.pos - state.base;
        let chunks = state
            .buffer
            .range(passed..)
            .map(|b| Arc::clone(&b.chunk))
            .collect();
        (chunks, state.finished())
    }
}

impl Stream for MessageStream {
    type Item = Result<MessageRef, StreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut guard = this.shared.state.lock().expect("message stream lock");
        let state = &mut *guard;
        loop {
            let k = this.pos - state.base;
            if k < state.buffer.len() {
                this.pos += 1;
                let chunk = if k == 0 && state.buffer[0].next_for == 1 {
                    // The last reader of the oldest chunk: it leaves the buffer.
                    state.base += 1;
                    state.buffer.pop_front().map(|b| b.chunk)
                } else {
                    let b = &mut state.buffer[k];
                    b.next_for -= 1;
                    Some(Arc::clone(&b.chunk))
                };
                state.arrive(this.pos);
                return Poll::Ready(chunk.map(Ok));
            }
            if state.finished() {
                if let (Some(err), false) = (&state.error, this.error_seen) {
                    this.error_seen = true;
                    return Poll::Ready(Some(Err(err.clone())));
                }
                return Poll::Ready(None);
            }
            match state.pull(cx) {
                Poll::Ready(Some(chunk)) => {
                    // Hand the new chunk to this reader straight away; keep it only for the
                    // other readers that have yet to read it.
                    let chunk = Arc::new(chunk);
                    state.at_head -= 1;
                    let kept = state.someone_needs_head().then(|| Arc::clone(&chunk));
                    state.pass_head(kept);
                    state.at_head += 1;
                    this.pos += 1;
                    return Poll::Ready(Some(Ok(chunk)));
                }
                // The source ended (or failed): report it on the next turn.
                Poll::Ready(None) => {}
                Poll::Pending => return Poll::Pending,
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
        let state = self.lock();
        let buffered = state.head() - self.pos;
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
        let released = match self.shared.state.lock() {
            Ok(mut state) => {
                state.readers -= 1;
                state.leave(self.pos);
                state.release_if_unused()
            }
            Err(_) => None,
        };
        // Last one out: the source (and whatever it holds open) goes now.
        drop(released);
    }
}

impl fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("MessageStream")
            .field("pos", &self.pos)
            .field("buffered", &state.buffer.len())
            .field("finished", &state.finished())
            .finish()
    }
}

/// The whole message of a [`MessageStream`], concatenated as its chunks pass; made by
/// [`MessageStream::record`].
///
/// A record holds the message being built, not the chunks, so a stream that is recorded and
/// read by one reader keeps no chunk at all. [`message`](StreamRecord::message) waits for the
/// end of the stream, pulling the chunks itself if no reader does (they stay buffered for the
/// readers that have yet to read them).
pub struct StreamRecord {
    shared: Arc<Shared>,
    slot: usize,
}

impl StreamRecord {
    /// The whole message once the stream has ended, or the source's error; reads the rest of
    /// the stream from the source if needed. It can be awaited any number of times, and from
    /// several tasks at once.
    pub async fn message(&self) -> Result<MessageRef, StreamError> {
        futures::future::poll_fn(|cx| self.poll_message(cx, false)).await
    }

    /// The whole message (or the error) if the stream has ended, without polling it.
    pub fn message_now(&self) -> Option<Result<MessageRef, StreamError>> {
        let state = self.shared.state.lock().expect("message stream lock");
        match &state.records[self.slot] {
            RecordSlot::Done(result) => Some(result.clone()),
            RecordSlot::Open(_) | RecordSlot::Free => None,
        }
    }

    /// [`message`](StreamRecord::message), taking the result out of the stream.
    async fn take_message(mut self) -> Result<MessageRef, StreamError> {
        let result = futures::future::poll_fn(|cx| self.poll_message(cx, true)).await;
        // The slot was freed (and may be reused by another record): leave it alone on drop.
        self.slot = usize::MAX;
        result
    }

    fn poll_message(
        &self,
        cx: &mut Context<'_>,
        take: bool,
    ) -> Poll<Result<MessageRef, StreamError>> {
        let mut guard = self.shared.state.lock().expect("message stream lock");
        let state = &mut *guard;
        loop {
            let slot = &mut state.records[self.slot];
            if let RecordSlot::Done(result) = slot {
                if !take {
                    return Poll::Ready(result.clone());
                }
                let RecordSlot::Done(result) = std::mem::replace(slot, RecordSlot::Free) else {
                    unreachable!("the slot was just matched");
                };
                return Poll::Ready(result);
            }
            match state.pull(cx) {
                Poll::Ready(Some(chunk)) => {
                    let kept = state.someone_needs_head().then(|| Arc::new(chunk));
                    state.pass_head(kept);
                }
                // The records are finished now.
                Poll::Ready(None) => {}
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for StreamRecord {
    fn drop(&mut self) {
        let released = match self.shared.state.lock() {
            Ok(mut state) => {
                if let Some(slot) = state.records.get_mut(self.slot) {
                    *slot = RecordSlot::Free;
                }
                while matches!(state.records.last(), Some(RecordSlot::Free)) {
                    state.records.pop();
                }
                state.release_if_unused()
            }
            Err(_) => None,
        };
        drop(released);
    }
}

impl fmt::Debug for StreamRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamRecord")
            .field("message", &self.message_now())
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

#[cfg(test)]
mod tests {
    use std::sync::Weak;

    use futures::executor::block_on;

    use super::*;

    fn chunk(text: &str) -> Message {
        Message::assistant(text)
    }

    /// Reads the next chunk; returns its text and a weak reference to it (the reader's own
    /// strong reference is dropped).
    fn next_weak(reader: &mut MessageStream) -> (String, Weak<Message>) {
        let c = block_on(reader.next()).expect("a chunk").expect("no error");
        (c.content.clone(), Arc::downgrade(&c))
    }

    fn buffered_len(reader: &MessageStream) -> usize {
        reader.lock().buffer.len()
    }

    fn texts(reader: MessageStream) -> Vec<String> {
        block_on(
            reader
                .map(|c| c.map_or_else(|e| format!("error: {e}"), |c| c.content.clone()))
                .collect(),
        )
    }

    #[test]
    fn a_chunk_is_released_once_every_reader_has_passed_it() {
        let (tx, mut fast) = MessageStream::channel();
        let mut slow = fast.fork();
        for text in ["a", "b", "c"] {
            tx.send(chunk(text));
        }
        let (_, a) = next_weak(&mut fast);
        let (_, b) = next_weak(&mut fast);
        let (_, c) = next_weak(&mut fast);
        // The slow reader has read none of them: all three are kept for it.
        assert_eq!(buffered_len(&fast), 3);
        assert!(a.upgrade().is_some() && b.upgrade().is_some() && c.upgrade().is_some());
        assert_eq!(next_weak(&mut slow).0, "a");
        assert!(a.upgrade().is_none(), "both readers are past 'a'");
        assert!(b.upgrade().is_some());
        assert_eq!(buffered_len(&fast), 2);
        // Dropping the slow reader releases what only it still needed.
        drop(slow);
        assert!(b.upgrade().is_none() && c.upgrade().is_none());
        assert_eq!(buffered_len(&fast), 0);
        tx.send(chunk("d"));
        drop(tx);
        assert_eq!(texts(fast), ["d"]);
    }

    #[test]
    fn a_lone_reader_with_a_record_keeps_no_chunk() {
        let chunks: Vec<_> = (0..100).map(|i| Ok(chunk(&format!("{i},")))).collect();
        let mut reader = MessageStream::from_stream(futures::stream::iter(chunks));
        let record = reader.record();
        let mut previous: Option<Weak<Message>> = None;
        for i in 0..100 {
            let (text, weak) = next_weak(&mut reader);
            assert_eq!(text, format!("{i},"));
            assert!(weak.upgrade().is_none(), "chunk {i} is kept by nobody");
            assert_eq!(buffered_len(&reader), 0);
            previous = Some(weak);
        }
        assert!(previous.is_some());
        assert!(block_on(reader.next()).is_none());
        let expected: String = (0..100).map(|i| format!("{i},")).collect();
        assert_eq!(block_on(record.message()).unwrap().content, expected);
        // Asking again gives the same message.
        let again = record.message_now().unwrap().unwrap();
        assert!(Arc::ptr_eq(&again, &block_on(record.message()).unwrap()));
    }

    #[test]
    fn a_late_fork_starts_where_its_origin_is_and_keeps_only_what_it_needs() {
        let (tx, mut first) = MessageStream::channel();
        for text in ["a", "b", "c", "d"] {
            tx.send(chunk(text));
        }
        drop(tx);
        let (_, a) = next_weak(&mut first);
        let (_, b) = next_weak(&mut first);
        let late = first.fork();
        assert!(a.upgrade().is_none() && b.upgrade().is_none());
        let record = late.record();
        assert_eq!(texts(first), ["c", "d"]);
        // The late reader has yet to read "c" and "d": they wait for it, and only they.
        assert_eq!(MessageStream::buffered(&late).0.len(), 2);
        assert_eq!(texts(late), ["c", "d"]);
        assert_eq!(block_on(record.message()).unwrap().content, "cd");
    }

    #[test]
    fn a_record_reads_the_rest_itself_once_every_reader_has_gone() {
        let (tx, mut reader) = MessageStream::channel();
        let record = reader.record();
        tx.send(chunk("Hel"));
        assert_eq!(next_weak(&mut reader).0, "Hel");
        assert!(
            record.message_now().is_none(),
            "the stream is still running"
        );
        drop(reader);
        // The record keeps the source alive: the producer can go on.
        assert!(tx.send(chunk("lo")));
        drop(tx);
        assert_eq!(block_on(record.message()).unwrap().content, "Hello");
    }

    #[test]
    fn dropping_the_last_reader_and_record_releases_the_source() {
        let (tx, reader) = MessageStream::channel();
        let record = reader.record();
        let other = reader.fork();
        drop(reader);
        assert!(tx.send(chunk("a")), "a reader is left");
        drop(other);
        assert!(tx.send(chunk("b")), "the record is left");
        drop(record);
        assert!(
            !tx.send(chunk("c")),
            "nobody is left: the source is released"
        );
    }

    #[test]
    fn a_source_error_reaches_readers_and_records_after_the_chunks_before_it() {
        let (tx, first) = MessageStream::channel();
        let second = first.fork();
        let record = first.record();
        tx.send(chunk("partial"));
        tx.fail(StreamError::new("connection reset"));
        let expected = ["partial", "error: message stream failed: connection reset"];
        assert_eq!(texts(first), expected);
        assert_eq!(
            block_on(record.message()).unwrap_err(),
            StreamError::new("connection reset")
        );
        assert_eq!(texts(second), expected);
    }

    #[test]
    fn a_record_made_midway_or_at_the_end_reads_what_its_reader_would() {
        let mut reader = MessageStream::from_messages(["a", "b", "c"].map(chunk));
        assert_eq!(next_weak(&mut reader).0, "a");
        let midway = reader.record();
        assert_eq!(block_on(midway.message()).unwrap().content, "bc");
        let rest = texts(reader.fork());
        assert_eq!(rest, ["b", "c"]);
        while block_on(reader.next()).is_some() {}
        assert_eq!(block_on(reader.record().message()).unwrap().content, "");

        // A reader that has yet to see the source's error records it; one that saw it does not.
        let (tx, mut failing) = MessageStream::channel();
        tx.send(chunk("x"));
        tx.fail(StreamError::new("boom"));
        assert_eq!(next_weak(&mut failing).0, "x");
        assert!(block_on(failing.record().message()).is_err());
        assert!(block_on(failing.next()).unwrap().is_err());
        assert_eq!(block_on(failing.record().message()).unwrap().content, "");
    }

    #[test]
    fn collect_message_takes_the_message_without_keeping_chunks() {
        let (tx, reader) = MessageStream::channel();
        let mut other = reader.fork();
        tx.send(chunk("a"));
        tx.send(chunk("b"));
        drop(tx);
        assert_eq!(block_on(reader.collect_message()).unwrap().content, "ab");
        // The chunks were kept for the other reader only.
        assert_eq!(buffered_len(&other), 2);
        assert_eq!(next_weak(&mut other).0, "a");
        assert_eq!(buffered_len(&other), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn readers_and_records_in_other_tasks_all_get_everything() {
        let (tx, reader) = MessageStream::channel();
        let other = reader.fork();
        let record = Arc::new(reader.record());
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let record = Arc::clone(&record);
                tokio::spawn(async move { record.message().await.unwrap().content.clone() })
            })
            .collect();
        let readers: Vec<_> = [reader, other]
            .into_iter()
            .map(|r| {
                tokio::spawn(async move {
                    r.map(|c| c.unwrap().content.clone())
                        .collect::<String>()
                        .await
                })
            })
            .collect();
        for i in 0..200 {
            tx.send(chunk(&format!("{i},")));
            tokio::task::yield_now().await;
        }
        drop(tx);
        let expected: String = (0..200).map(|i| format!("{i},")).collect();
        for task in waiters.into_iter().chain(readers) {
            assert_eq!(task.await.unwrap(), expected);
        }
    }
}
