//! The sink of streamed model output: each streaming turn of this process opens one under a
//! random token ([`open`]); the workers' model calls POST their pieces to
//! `/v1/temporal/live/{token}` ([`routes`]), which feeds them to the turn's streamed messages
//! as they come. The token is the only credential (it is random, and lives as long as its
//! turn's reading): the route is outside the API's authentication, as workers hold no API
//! credential.
//!
//! A piece is taken under the sink's lock when it is posted, before the post is answered: a
//! model call ends (and the workflow makes the reply's event) only after its pieces are in, so
//! the turn knows the reply was streamed when its event comes, and leaves the message out of
//! that event (the streamed message is the event's). Pieces are deduplicated by call and
//! number: a call run again after its worker died posts its pieces again from the first.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use flow_runtime::{AgentEvent, Message, MessageStream, MessageStreamSender, RunPath, StreamError};
use flow_temporal::LivePost;
use tokio::sync::mpsc;

use crate::state::AppState;

/// A turn's streamed replies: the open ones, the ended ones, and the whole of each ended one
/// whose event has not come yet.
struct LiveState {
    opened: mpsc::UnboundedSender<AgentEvent>,
    open: HashMap<u64, Open>,
    done: HashSet<u64>,
    streamed: HashMap<(String, String), Message>,
}

struct Open {
    tx: MessageStreamSender,
    next: u64,
    agent: String,
    run_path: RunPath,
    pieces: Vec<Message>,
}

impl LiveState {
    fn take(&mut self, post: LivePost) {
        if self.done.contains(&post.effect) {
            return;
        }
        if !self.open.contains_key(&post.effect) {
            if post.seq != 0 || post.chunk.is_none() {
                return;
            }
            let (tx, stream) = MessageStream::channel();
            let agent: Arc<str> = Arc::from(post.agent.as_str());
            let event = AgentEvent::stream(stream).stamped(&agent, &post.run_path);
            if self.opened.send(event).is_err() {
                return;
            }
            self.open.insert(
                post.effect,
                Open {
                    tx,
                    next: 0,
                    agent: post.agent.clone(),
                    run_path: post.run_path.clone(),
                    pieces: Vec::new(),
                },
            );
        }
        let Some(open) = self.open.get_mut(&post.effect) else {
            return;
        };
        if post.seq != open.next {
            return; // a piece already taken (an attempt after a worker's death), or a gap
        }
        match post.chunk {
            Some(chunk) => {
                open.next += 1;
                open.tx.send(chunk.clone());
                open.pieces.push(chunk);
            }
            None => {
                let open = self.open.remove(&post.effect).expect("open");
                self.done.insert(post.effect);
                match post.error {
                    Some(error) => open.tx.fail(StreamError::new(error)),
                    None => {
                        let whole = Message::concat(open.pieces.iter());
                        self.streamed
                            .insert((open.agent, open.run_path.to_string()), whole);
                    }
                }
            }
        }
    }
}

type Sinks = Mutex<HashMap<String, Arc<Mutex<LiveState>>>>;

fn sinks() -> &'static Sinks {
    static SINKS: OnceLock<Sinks> = OnceLock::new();
    SINKS.get_or_init(Default::default)
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An open sink: its token, the streamed messages opened by posts (each an event to pass on),
/// and its state; closed when dropped.
pub(crate) struct Sink {
    pub(crate) token: String,
    pub(crate) opened: mpsc::UnboundedReceiver<AgentEvent>,
    state: Arc<Mutex<LiveState>>,
}

impl Sink {
    /// A workflow event, in its JSON form, as the turn passes it on: without its message when
    /// that message was streamed (it went out as the streamed message's event); `None` when
    /// nothing is left of it.
    pub(crate) fn event_of(&self, json: serde_json::Value) -> Option<AgentEvent> {
        let mut e: flow_runtime::EventJson = serde_json::from_value(json).ok()?;
        if let Some(message) = &e.message {
            let key = (e.agent_name.to_string(), e.run_path.to_string());
            let mut state = locked(&self.state);
            if let Some(whole) = state.streamed.remove(&key) {
                if whole.content == message.content && whole.tool_calls == message.tool_calls {
                    e.message = None;
                }
            }
        }
        super::agent::event_of_json(e)
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        locked(sinks()).remove(&self.token);
    }
}

/// Opens a sink for one turn.
pub(crate) fn open() -> Sink {
    let token = uuid::Uuid::new_v4().simple().to_string();
    let (tx, opened) = mpsc::unbounded_channel();
    let state = Arc::new(Mutex::new(LiveState {
        opened: tx,
        open: HashMap::new(),
        done: HashSet::new(),
        streamed: HashMap::new(),
    }));
    locked(sinks()).insert(token.clone(), Arc::clone(&state));
    Sink {
        token,
        opened,
        state,
    }
}

async fn receive(Path(token): Path<String>, Json(post): Json<LivePost>) -> StatusCode {
    let state = locked(sinks()).get(&token).cloned();
    match state {
        Some(state) => {
            locked(&state).take(post);
            StatusCode::NO_CONTENT
        }
        // The turn is no longer read here: the pieces were a preview, its events are the record.
        None => StatusCode::GONE,
    }
}

/// The sink's route.
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/v1/temporal/live/{token}", post(receive))
}
