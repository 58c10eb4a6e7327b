//! One turn as one stream of items ([`TurnStream`]): what every reader of a turn (a service's
//! protocol, a background run's log) maps, so that the reading of a turn exists once.
//!
//! A [`Turn`] is a stream of [`AgentEvent`]s whose output may itself be a stream (a message
//! arriving in chunks) and whose end is known only afterwards ([`Turn::outcome`]). A
//! [`TurnStream`] flattens that into [`TurnItem`]s, in order:
//!
//! - [`TurnItem::Chunk`]: a piece of a streamed message, as it came;
//! - [`TurnItem::StreamFailed`]: a streamed message broke part-way (the model's stream failed).
//!   Its chunks went out; nothing of it is recorded, and its event is not passed on as a
//!   message. The agent retries (more chunks and events follow) or gives up (its error event
//!   and a failed end follow);
//! - [`TurnItem::Event`]: an event, its message whole (a streamed one after its chunks);
//! - [`TurnItem::End`]: last, always, once: how the turn ended. A turn whose stream ended
//!   without an outcome ends [`TurnOutcome::Failed`].
//!
//! Dropping the stream drops the turn: the run is cancelled and nothing is recorded.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use super::turn::{Turn, TurnOutcome};
use crate::event::{AgentEvent, EventOutput};
use crate::message::{Message, MessageRef};
use crate::run_path::RunPath;
use crate::session::Session;
use crate::store::{StoreError, ThreadError};
use crate::stream::{MessageStream, StreamError};

/// One item of a [`TurnStream`], which says in what order they come.
#[derive(Debug)]
#[non_exhaustive]
pub enum TurnItem {
    /// A piece of a streamed message, as it came.
    Chunk {
        /// The agent streaming.
        agent_name: Arc<str>,
        /// Its run path.
        run_path: RunPath,
        /// The piece (its content and pieces of tool calls).
        chunk: MessageRef,
    },
    /// A streamed message broke part-way: its chunks so far went out, nothing of it is
    /// recorded, and its event is passed on only if it carries an action or an error (without
    /// the broken message). The agent retries or gives up (then its error event follows).
    StreamFailed {
        /// The agent whose stream broke.
        agent_name: Arc<str>,
        /// Its run path.
        run_path: RunPath,
        /// What the stream failed with (internal text: log it, show a public form).
        error: StreamError,
    },
    /// An event of the turn, its output taken apart.
    Event(TurnEvent),
    /// Last: how the turn ended.
    End(TurnOutcome),
}

/// An event of a turn with its output taken apart: its message whole (a streamed one
/// concatenated after its chunks went out as [`TurnItem::Chunk`]s) or its custom value.
#[derive(Debug)]
#[non_exhaustive]
pub struct TurnEvent {
    /// The event, its [`output`](AgentEvent::output) taken (see `message` and `custom`).
    pub event: AgentEvent,
    /// Its message, whole.
    pub message: Option<MessageRef>,
    /// Its application data.
    pub custom: Option<Arc<serde_json::Value>>,
    /// Whether the message arrived as a stream (its chunks came before).
    pub streamed: bool,
}

/// A [`Turn`] as one stream of [`TurnItem`]s, with the turn's facts at hand: what every
/// reader of a turn (a background run, a service's protocols) maps, so a turn is read once.
///
/// The items come in order: [`Chunk`](TurnItem::Chunk)s of a streamed message, then its
/// [`Event`](TurnItem::Event) with the message whole, or a
/// [`StreamFailed`](TurnItem::StreamFailed) if the stream broke part-way (nothing of it is
/// recorded; the agent retries, or gives up and its error event and a failed end follow);
/// other events as they come; last, always, once, the [`End`](TurnItem::End) with the outcome
/// (a turn whose stream ended without one ends [`TurnOutcome::Failed`]). Dropping the stream
/// drops the turn: the run is cancelled and nothing is recorded.
///
/// ```
/// use agentweave_runtime::{FlowAgent, FnAgent, InMemoryStore, Message, Runner, TurnItem, TurnOutcome, TurnRequest, TurnStream};
/// use futures::StreamExt;
/// # futures::executor::block_on(async {
/// let bot = FnAgent::new("bot", |cx, _| async move { cx.say("hello"); Ok(()) });
/// let runner = Runner::builder(FlowAgent::new(bot)).stores(InMemoryStore::new()).build();
/// let turn = runner.turn(TurnRequest::new("t", Message::user("hi"))).await.unwrap();
/// let items: Vec<TurnItem> = TurnStream::new(turn).collect().await;
/// assert!(matches!(&items[0], TurnItem::Event(e) if e.message.as_ref().unwrap().content == "hello"));
/// assert!(matches!(items.last(), Some(TurnItem::End(TurnOutcome::Completed { .. }))));
/// # });
/// ```
pub struct TurnStream {
    items: BoxStream<'static, TurnItem>,
    thread_id: String,
    number: u64,
    started_at: RunPath,
    run_id: String,
    session: Arc<Session>,
    resumed: bool,
    recovered: bool,
}

impl TurnStream {
    /// The items of `turn`.
    pub fn new(turn: Turn) -> Self {
        TurnStream {
            thread_id: turn.thread_id().to_owned(),
            number: turn.number(),
            started_at: turn.started_at().clone(),
            run_id: turn.run_id().to_owned(),
            session: Arc::clone(turn.session()),
            resumed: turn.resumed(),
            recovered: turn.recovered(),
            items: futures::stream::unfold(Reading::Events(turn), step).boxed(),
        }
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The turn's number in its thread, from 0.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The run path the turn started at.
    pub fn started_at(&self) -> &RunPath {
        &self.started_at
    }

    /// The id of the run the turn is part of ([`Turn::run_id`]).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The turn's session ([`Turn::session`]).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Whether the turn continues an interrupted turn, or a dead worker's.
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// Whether the turn is a dead worker's, recovered ([`Turn::recovered`]).
    pub fn recovered(&self) -> bool {
        self.recovered
    }
}

impl From<Turn> for TurnStream {
    fn from(turn: Turn) -> Self {
        TurnStream::new(turn)
    }
}

impl Stream for TurnStream {
    type Item = TurnItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<TurnItem>> {
        self.items.poll_next_unpin(cx)
    }
}

impl fmt::Debug for TurnStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnStream")
            .field("thread_id", &self.thread_id)
            .field("number", &self.number)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

/// Where a [`TurnStream`] is in its turn.
enum Reading {
    /// Between events.
    Events(Turn),
    /// In the middle of an event's streamed message.
    Streaming(Box<Streaming>),
    /// After a broken stream whose event says more than its message.
    Broken(Box<(Turn, AgentEvent)>),
    /// Past the end.
    Done,
}

struct Streaming {
    turn: Turn,
    event: AgentEvent,
    stream: MessageStream,
    chunks: Vec<MessageRef>,
}

/// The next item, and where the stream is after it.
async fn step(reading: Reading) -> Option<(TurnItem, Reading)> {
    match reading {
        Reading::Done => None,
        Reading::Broken(broken) => {
            let (turn, event) = *broken;
            let item = TurnItem::Event(TurnEvent {
                event,
                message: None,
                custom: None,
                streamed: true,
            });
            Some((item, Reading::Events(turn)))
        }
        Reading::Streaming(mut s) => {
            let agent_name = || Arc::clone(s.event.agent_name_arc());
            match s.stream.next().await {
                Some(Ok(chunk)) => {
                    s.chunks.push(MessageRef::clone(&chunk));
                    let item = TurnItem::Chunk {
                        agent_name: agent_name(),
                        run_path: s.event.run_path().clone(),
                        chunk,
                    };
                    Some((item, Reading::Streaming(s)))
                }
                Some(Err(error)) => {
                    let item = TurnItem::StreamFailed {
                        agent_name: agent_name(),
                        run_path: s.event.run_path().clone(),
                        error,
                    };
                    let Streaming { turn, event, .. } = *s;
                    // The broken message is not passed on; what else the event says is.
                    let next = if event.action.is_some() || event.error.is_some() {
                        Reading::Broken(Box::new((turn, event)))
                    } else {
                        Reading::Events(turn)
                    };
                    Some((item, next))
                }
                None => {
                    let Streaming {
                        turn,
                        event,
                        chunks,
                        ..
                    } = *s;
                    let message = Message::concat(chunks.iter().map(|c| &**c));
                    let item = TurnItem::Event(TurnEvent {
                        event,
                        message: Some(Arc::new(message)),
                        custom: None,
                        streamed: true,
                    });
                    Some((item, Reading::Events(turn)))
                }
            }
        }
        Reading::Events(mut turn) => {
            let Some(mut event) = turn.next().await else {
                let outcome = turn
                    .outcome()
                    .unwrap_or_else(|| without_outcome(turn.thread_id()));
                return Some((TurnItem::End(outcome), Reading::Done));
            };
            let (message, custom) = match event.output.take() {
                Some(EventOutput::Stream(stream)) => {
                    let streaming = Streaming {
                        turn,
                        event,
                        stream,
                        chunks: Vec::new(),
                    };
                    return Box::pin(step(Reading::Streaming(Box::new(streaming)))).await;
                }
                Some(EventOutput::Message(m)) => (Some(m), None),
                Some(EventOutput::Custom(v)) => (None, Some(v)),
                None => (None, None),
            };
            let item = TurnItem::Event(TurnEvent {
                event,
                message,
                custom,
                streamed: false,
            });
            Some((item, Reading::Events(turn)))
        }
    }
}

/// The end of a turn whose stream ended and left no outcome.
fn without_outcome(thread_id: &str) -> TurnOutcome {
    TurnOutcome::Failed(ThreadError::Store(StoreError::Other {
        id: thread_id.to_owned(),
        message: "the turn ended without an outcome".into(),
    }))
}
