//! The sink of streamed model output: each streaming turn of this process opens one under a
//! random token ([`open`]); the workers' model calls POST their pieces to
//! `/v1/temporal/live/{token}` ([`routes`]), which feeds them to the turn's streamed messages
//! as they come. The token is the only credential (it is random, and lives as long as its
//! turn's reading): the route is outside the API's authentication, as workers hold no API
//! credential.
//!
//! A turn opens each model call's streamed message where the workflow placed the call among
//! its events, once its first piece has come ([`Sink::open`]); the pieces posted before are
//! kept for it. A call that posts no piece (a budget refused it before the model was called)
//! is never opened. A piece is taken
//! under the sink's lock when it is posted, before the post is answered: a model call ends
//! (and the workflow makes the reply's event) only after its pieces are in, so the turn knows
//! the reply was streamed when its event comes and leaves the message out of that event (the
//! streamed message is the event's). Pieces are deduplicated by call and number: a call run
//! again after its worker died posts its pieces again from the first. A call the workflow says
//! has ended whose end never came (its sink was unreachable) has its stream failed
//! ([`Sink::cut`]): nothing of it is recorded, and its event carries the reply whole.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use agentweave_runtime::{
    AgentEvent, EventJson, Message, MessageStream, MessageStreamSender, Role, RunPath, StreamError,
};
use agentweave_temporal::LivePost;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};

use crate::state::AppState;

/// One model call's streamed reply.
#[derive(Default)]
struct Call {
    pieces: Vec<Message>,
    /// `Some` once its end came: `Err` with the call's failure.
    ended: Option<Result<(), String>>,
    tx: Option<MessageStreamSender>,
    opened: bool,
    /// Where the workflow placed the call, as its pieces say ([`LivePost::at`]): its place
    /// among the turn's events, its agent and run path.
    place: Option<(u64, String, RunPath)>,
}

/// A turn's streamed replies, by call number; and for each agent and run path, the call whose
/// reply streamed last (its event leaves the message out).
#[derive(Default)]
struct LiveState {
    calls: HashMap<u64, Call>,
    streamed: HashMap<(String, String), u64>,
}

impl LiveState {
    /// Takes one posted piece; `true` when it is the first piece of a call whose streamed
    /// message the turn has not opened yet (the turn's reader should read the workflow now).
    fn take(&mut self, post: LivePost) -> bool {
        let call = self.calls.entry(post.effect).or_default();
        if call.ended.is_some() || post.seq != call.pieces.len() as u64 {
            return false; // ended, or a piece already taken (an attempt after a worker's death)
        }
        let unplaced = !call.opened && post.seq == 0;
        if let (None, Some(at)) = (&call.place, post.at) {
            call.place = Some((at, post.agent.clone(), post.run_path.clone()));
        }
        match post.chunk {
            Some(chunk) => {
                if let Some(tx) = &call.tx {
                    tx.send(chunk.clone());
                }
                call.pieces.push(chunk);
            }
            None => {
                call.ended = Some(post.error.map_or(Ok(()), Err));
                end(call);
                if matches!(call.ended, Some(Ok(()))) {
                    self.streamed
                        .insert((post.agent, post.run_path.to_string()), post.effect);
                }
            }
        }
        unplaced
    }
}

/// A turn's sink as the route and the turn share it: its state, and the wake-up of the turn's
/// reader when a call it has not placed yet starts streaming.
#[derive(Default)]
struct Shared {
    state: Mutex<LiveState>,
    posted: tokio::sync::Notify,
}

impl Shared {
    fn take(&self, post: LivePost) {
        if locked(&self.state).take(post) {
            // A stored permit if the reader is not waiting yet: its next wait ends at once.
            self.posted.notify_one();
        }
    }
}

/// A call the sink places by itself ([`Sink::placed`]).
pub(crate) struct Placed {
    /// Its place among the turn's events.
    pub(crate) at: u64,
    /// Its number in the turn.
    pub(crate) effect: u64,
    /// The calling agent.
    pub(crate) agent: String,
    /// Its run path.
    pub(crate) run_path: RunPath,
}

/// Ends a call's open stream as its end says.
fn end(call: &mut Call) {
    if let Some(tx) = call.tx.take() {
        match &call.ended {
            Some(Err(error)) => tx.fail(StreamError::new(error.clone())),
            Some(Ok(())) => drop(tx),
            None => call.tx = Some(tx),
        }
    }
}

type Sinks = Mutex<HashMap<String, Arc<Shared>>>;

fn sinks() -> &'static Sinks {
    static SINKS: OnceLock<Sinks> = OnceLock::new();
    SINKS.get_or_init(Default::default)
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An open sink: its token and its state; closed when dropped.
pub(crate) struct Sink {
    pub(crate) token: String,
    shared: Arc<Shared>,
}

impl Sink {
    /// Waits until a model call the turn has not opened posts its first piece (at once if one
    /// did since the last wait).
    pub(crate) async fn posted(&self) {
        self.shared.posted.notified().await;
    }

    /// The streamed message of call `effect` of `agent` at `run_path`, as an event: the pieces
    /// posted so far, then the others as they come.
    pub(crate) fn open(&self, effect: u64, agent: &str, run_path: &RunPath) -> AgentEvent {
        let mut state = locked(&self.shared.state);
        let call = state.calls.entry(effect).or_default();
        let (tx, stream) = MessageStream::channel();
        for piece in &call.pieces {
            tx.send(piece.clone());
        }
        call.tx = Some(tx);
        call.opened = true;
        end(call);
        AgentEvent::stream(stream).stamped(&Arc::from(agent), run_path)
    }

    /// The calls that have started streaming, are not opened yet and say their place (a
    /// worker of this version: [`LivePost::at`]), placed from event `start` to event `since`
    /// (a reader that has passed on `since` events opens them now, with no reading of the
    /// workflow): `(at, effect, agent, run path)`, in the order they go out.
    /// With them, whether another call has started that only a reading can place (its place is
    /// past `since`, or its worker did not say it).
    pub(crate) fn placed(&self, start: u64, since: u64) -> (Vec<Placed>, bool) {
        let state = locked(&self.shared.state);
        let mut unplaced = false;
        let mut placed = Vec::new();
        for (effect, call) in &state.calls {
            if call.opened || call.pieces.is_empty() {
                continue;
            }
            match &call.place {
                Some((at, agent, run_path)) if (start..=since).contains(at) => {
                    placed.push(Placed {
                        at: *at,
                        effect: *effect,
                        agent: agent.clone(),
                        run_path: run_path.clone(),
                    })
                }
                _ => unplaced = true,
            }
        }
        placed.sort_by_key(|p| (p.at, p.effect));
        (placed, unplaced)
    }

    /// Whether call `effect` has posted a piece: its streamed message is opened from then on
    /// (a call that posts none, because its reply did not stream or because no call was made,
    /// is never opened and its event carries what happened).
    pub(crate) fn started(&self, effect: u64) -> bool {
        locked(&self.shared.state)
            .calls
            .get(&effect)
            .is_some_and(|call| !call.pieces.is_empty())
    }

    /// Fails the stream of call `effect` if its end has not come (the workflow says the call
    /// has ended): its event will carry the reply whole.
    pub(crate) fn cut(&self, effect: u64) {
        let mut state = locked(&self.shared.state);
        let call = state.calls.entry(effect).or_default();
        if call.ended.is_none() {
            call.ended = Some(Err(
                "the streamed reply was cut off (its pieces stopped coming); the reply comes \
                 whole with its event"
                    .into(),
            ));
            end(call);
        }
    }

    /// A workflow event, in its JSON form, as the turn passes it on: without its message when
    /// that message streamed (it went out as the streamed message's event); `None` when
    /// nothing is left of it.
    pub(crate) fn event_of(&self, json: serde_json::Value) -> Option<AgentEvent> {
        let mut e: EventJson = serde_json::from_value(json).ok()?;
        if let Some(message) = e.message.as_ref().filter(|m| m.role == Role::Assistant) {
            // The agent's last streamed reply, if this is it (a tool's result of the same agent
            // may come between: it is not the reply, and leaves it in place).
            let key = (e.agent_name.to_string(), e.run_path.to_string());
            let mut state = locked(&self.shared.state);
            let streamed = state.streamed.get(&key).is_some_and(|effect| {
                let call = &state.calls[effect];
                let whole = Message::concat(call.pieces.iter());
                call.opened
                    && whole.content == message.content
                    && whole.tool_calls == message.tool_calls
            });
            if streamed {
                state.streamed.remove(&key);
                e.message = None;
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
    let shared = Arc::new(Shared::default());
    locked(sinks()).insert(token.clone(), Arc::clone(&shared));
    Sink { token, shared }
}

async fn receive(Path(token): Path<String>, Json(post): Json<LivePost>) -> StatusCode {
    let shared = locked(sinks()).get(&token).cloned();
    match shared {
        Some(shared) => {
            shared.take(post);
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn piece(effect: u64, seq: u64, text: Option<&str>) -> LivePost {
        LivePost {
            turn: 0,
            effect,
            seq,
            at: None,
            agent: "billing".into(),
            run_path: RunPath::root("desk").child("billing"),
            chunk: text.map(Message::assistant),
            error: None,
        }
    }

    fn post(sink: &Sink, post: LivePost) {
        sink.shared.take(post);
    }

    async fn text_of(event: AgentEvent) -> String {
        let json = event.materialized().await.unwrap();
        json.message.unwrap().content
    }

    #[tokio::test]
    async fn pieces_posted_again_by_a_second_attempt_are_taken_once() {
        let sink = open();
        post(&sink, piece(3, 0, Some("paid")));
        post(&sink, piece(3, 1, Some(" 30")));
        // The worker died; the call runs again and posts from the first piece.
        post(&sink, piece(3, 0, Some("paid")));
        post(&sink, piece(3, 1, Some(" 30")));
        post(&sink, piece(3, 2, Some(" euros")));
        post(&sink, piece(3, 3, None));
        let path = RunPath::root("desk").child("billing");
        let streamed = sink.open(3, "billing", &path);
        assert_eq!(text_of(streamed).await, "paid 30 euros");
    }

    #[tokio::test]
    async fn a_stream_opened_before_its_pieces_gets_them_as_they_come() {
        let sink = open();
        let path = RunPath::root("desk").child("billing");
        let streamed = sink.open(1, "billing", &path);
        post(&sink, piece(1, 0, Some("hello")));
        post(&sink, piece(1, 1, Some(" there")));
        post(&sink, piece(1, 2, None));
        assert_eq!(text_of(streamed).await, "hello there");
    }

    #[tokio::test]
    async fn the_reply_event_goes_out_without_its_streamed_message_and_a_tool_result_keeps_its_own()
    {
        let sink = open();
        let path = RunPath::root("desk").child("billing");
        let streamed = sink.open(5, "billing", &path);
        post(&sink, piece(5, 0, Some("done")));
        post(&sink, piece(5, 1, None));
        drop(streamed);
        let event = |role_message: Message| {
            serde_json::to_value(EventJson {
                agent_name: Arc::from("billing"),
                run_path: path.clone(),
                message: Some(role_message),
                streamed: false,
                custom: None,
                action: None,
                error: None,
            })
            .unwrap()
        };
        let result = sink.event_of(event(Message::tool("paid 30", "call_1", "pay")));
        assert_eq!(
            result
                .and_then(|e| e.message_output().cloned())
                .map(|m| m.content),
            Some("paid 30".to_owned()),
            "a tool result of the same agent is not the streamed reply"
        );
        assert!(
            sink.event_of(event(Message::assistant("done"))).is_none(),
            "the streamed reply's event has nothing left"
        );
    }

    #[tokio::test]
    async fn only_the_first_piece_of_a_call_not_yet_placed_wakes_the_reader() {
        use futures::FutureExt;
        let sink = open();
        assert!(sink.posted().now_or_never().is_none(), "nothing posted yet");
        post(&sink, piece(4, 0, Some("hel")));
        assert!(
            sink.posted().now_or_never().is_some(),
            "the first piece of a call the turn has not placed wakes its reader"
        );
        post(&sink, piece(4, 1, Some("lo")));
        assert!(
            sink.posted().now_or_never().is_none(),
            "a later piece of the same call does not"
        );
        let path = RunPath::root("desk").child("billing");
        let _streamed = sink.open(6, "billing", &path);
        post(&sink, piece(6, 0, Some("placed")));
        assert!(
            sink.posted().now_or_never().is_none(),
            "a call already placed gets its pieces pushed, with no reading"
        );
    }

    #[tokio::test]
    async fn a_call_that_says_its_place_is_placed_by_the_sink_once_the_reader_has_passed_it() {
        let sink = open();
        let placed = |effect, seq, at| LivePost {
            at: Some(at),
            ..piece(effect, seq, Some("hi"))
        };
        assert!(sink.placed(0, 5).0.is_empty(), "nothing posted yet");
        post(&sink, placed(1, 0, 2));
        post(&sink, placed(1, 1, 2));
        let (early, unplaced) = sink.placed(0, 1);
        assert!(
            early.is_empty() && unplaced,
            "placed after 2 events, and the reader has passed 1: a reading places it"
        );
        post(&sink, placed(3, 0, 0));
        post(&sink, piece(4, 0, Some("old worker")));
        let (now, unplaced) = sink.placed(0, 2);
        assert_eq!(
            now.iter().map(|p| (p.at, p.effect)).collect::<Vec<_>>(),
            [(0, 3), (2, 1)],
            "in their places' order"
        );
        assert!(
            unplaced,
            "a piece that does not say its place is left to a reading"
        );
        assert_eq!(now[0].agent, "billing");
        let path = RunPath::root("desk").child("billing");
        let _opened = sink.open(3, "billing", &path);
        assert_eq!(
            sink.placed(0, 2)
                .0
                .iter()
                .map(|p| p.effect)
                .collect::<Vec<_>>(),
            [1],
            "an opened call is not placed again"
        );
        assert!(
            sink.placed(3, 9).0.is_empty(),
            "nor a call placed before the reading's first event"
        );
    }

    #[tokio::test]
    async fn a_cut_stream_fails_so_nothing_of_it_is_recorded() {
        let sink = open();
        let path = RunPath::root("desk").child("billing");
        let mut streamed = sink.open(2, "billing", &path);
        post(&sink, piece(2, 0, Some("half")));
        sink.cut(2);
        let Some(agentweave_runtime::EventOutput::Stream(stream)) = streamed.output.take() else {
            panic!("a streamed message");
        };
        let items: Vec<_> = stream.collect().await;
        assert!(items.last().unwrap().is_err(), "{items:?}");
    }
}
