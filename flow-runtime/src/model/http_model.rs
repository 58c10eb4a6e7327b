//! What every HTTP chat model client shares, so that a client (`openai.rs`, `anthropic.rs`)
//! keeps only its wire format, a [`WireFormat`]:
//!
//! - posting the JSON request through an [`HttpCall`], so every bound of its [`HttpLimits`]
//!   holds, with the endpoint named when the connection fails;
//! - turning an error answer into [`ModelError::Http`] with the server's explanation (cut to
//!   500 characters) and its `Retry-After`;
//! - reading a whole reply under the body limit, also when a streamed call is answered whole
//!   (`Content-Type: application/json`);
//! - turning server-sent events into message chunks: the first error ends the stream, and a
//!   stream that ends before the reply is complete ends with
//!   [`ModelError::StreamInterrupted`].

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::http::{HttpCall, HttpError, HttpLimits, SseEvent};
use super::{truncate, ChatRequest, ModelError, ModelStream};
use crate::message::Message;

/// The value of the environment variable `name`, unless it is unset or blank.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The HTTP side of a model client: its model id, the URL it posts to, its client and the
/// limits of every call.
#[derive(Clone)]
pub(crate) struct HttpModel {
    model: Arc<str>,
    endpoint: Arc<str>,
    limits: HttpLimits,
    client: reqwest::Client,
}

impl HttpModel {
    /// A client with the connect timeout of `limits`; failing to set it up is `model`'s error.
    pub(crate) fn client(limits: &HttpLimits, model: &str) -> Result<reqwest::Client, ModelError> {
        limits.client().map_err(|e| e.into_model_error(model))
    }

    /// `model` posting to `endpoint` with `client`, each call under `limits`.
    pub(crate) fn new(
        model: &str,
        endpoint: String,
        limits: &HttpLimits,
        client: reqwest::Client,
    ) -> Self {
        HttpModel {
            model: model.into(),
            endpoint: endpoint.into(),
            limits: limits.clone(),
            client,
        }
    }

    /// The model id, as errors name it.
    pub(crate) fn model(&self) -> Arc<str> {
        Arc::clone(&self.model)
    }

    /// The URL requests go to.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// This model's error for a failed HTTP call.
    pub(crate) fn failed(&self, e: HttpError) -> ModelError {
        e.into_model_error(&self.model)
    }

    /// A reply that is not what the protocol says.
    pub(crate) fn malformed(&self, message: impl fmt::Display) -> ModelError {
        ModelError::Malformed {
            model: self.model(),
            message: message.to_string().into(),
        }
    }

    /// A whole reply's body as `T`, or a [`ModelError::Malformed`] showing how it starts.
    pub(crate) fn parse_body<T: DeserializeOwned>(&self, text: &str) -> Result<T, ModelError> {
        serde_json::from_str(text).map_err(|e| {
            self.malformed(format_args!(
                "{e}; the body starts: {}",
                truncate(text, 200)
            ))
        })
    }

    /// One streamed `piece` (the protocol's word for it: `chunk`, `event`) as `T`, or a
    /// [`ModelError::Malformed`] showing how it starts.
    pub(crate) fn parse_piece<T: DeserializeOwned>(
        &self,
        piece: &str,
        data: &str,
    ) -> Result<T, ModelError> {
        serde_json::from_str(data).map_err(|e| {
            self.malformed(format_args!(
                "a stream {piece} is not valid: {e}; the {piece} starts: {}",
                truncate(data, 200)
            ))
        })
    }

    /// A stream in which the server reported an error.
    pub(crate) fn reported_error(&self, error: impl fmt::Display) -> ModelError {
        ModelError::StreamInterrupted {
            model: self.model(),
            message: format!("the server reported an error: {error}").into(),
        }
    }
}

/// What an HTTP chat model says on the wire; [`generate`] and [`stream`] do the rest.
pub(crate) trait WireFormat: Clone + Send + Sync + 'static {
    /// Turns the events of one streamed reply into chunks.
    type Decoder: ChunkDecoder;

    /// Where and how the model is reached.
    fn http(&self) -> &HttpModel;

    /// The JSON body of a request.
    fn body(&self, request: &ChatRequest, stream: bool) -> Value;

    /// The request with the protocol's headers (version, API key).
    fn headers(&self, post: reqwest::RequestBuilder) -> reqwest::RequestBuilder;

    /// The server's explanation in an error body, when the body is the protocol's error
    /// object (the whole body is shown otherwise).
    fn error_message(body: &str) -> Option<String>;

    /// How long an error answer's `Retry-After` asks to wait, as the protocol writes it.
    fn retry_after(value: &str) -> Option<Duration>;

    /// A whole reply.
    fn parse_reply(&self, text: &str) -> Result<Message, ModelError>;

    /// A decoder for one streamed reply.
    fn decoder(&self) -> Self::Decoder;
}

/// Reads the server-sent events of one streamed reply, in order.
pub(crate) trait ChunkDecoder: Send + 'static {
    /// What a stream that ends before the reply is complete lacked, for its error
    /// (`no message_stop event`).
    const MISSING_END: &'static str;

    /// Reads one event's data: pushes its chunks to `out`, or fails it, or ends it.
    fn event(&mut self, data: &str, out: &mut Chunks);
}

/// The chunks of a streamed reply that are ready, and where the stream stands.
pub(crate) struct Chunks {
    http: HttpModel,
    ready: VecDeque<Result<Message, ModelError>>,
    /// The reply is complete: the stream may end.
    finished: bool,
    /// No more events are read.
    done: bool,
}

impl Chunks {
    /// The model whose reply this is (for its errors).
    pub(crate) fn http(&self) -> &HttpModel {
        &self.http
    }

    /// A chunk of the reply.
    pub(crate) fn push(&mut self, chunk: Message) {
        self.ready.push_back(Ok(chunk));
    }

    /// Ends the stream with `error` (after the chunks already pushed).
    pub(crate) fn fail(&mut self, error: ModelError) {
        self.ready.push_back(Err(error));
        self.done = true;
    }

    /// The reply is complete: the stream may end without an error.
    pub(crate) fn finished(&mut self) {
        self.finished = true;
    }

    /// No more events are read: the stream ends once the chunks pushed so far are out.
    pub(crate) fn end(&mut self) {
        self.done = true;
    }
}

/// Asks for one whole reply.
pub(crate) async fn generate<W: WireFormat>(
    wire: &W,
    request: &ChatRequest,
) -> Result<Message, ModelError> {
    let call = HttpCall::start(&wire.http().limits);
    let response = send(wire, &call, request, false).await?;
    whole(wire, &call, response).await
}

/// Asks for a streamed reply; a server that answers whole gives one chunk.
pub(crate) async fn stream<W: WireFormat>(
    wire: &W,
    request: &ChatRequest,
) -> Result<ModelStream, ModelError> {
    let call = HttpCall::start(&wire.http().limits);
    let response = send(wire, &call, request, true).await?;
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        // The server ignored `stream: true` and sent the whole reply.
        let whole = whole(wire, &call, response).await?;
        return Ok(futures::stream::once(async move { Ok(whole) }).boxed());
    }
    Ok(chunks(
        wire.http().clone(),
        wire.decoder(),
        call.events(response),
    ))
}

/// Posts the request; an answer that is not a success is a [`ModelError::Http`].
async fn send<W: WireFormat>(
    wire: &W,
    call: &HttpCall,
    request: &ChatRequest,
    stream: bool,
) -> Result<reqwest::Response, ModelError> {
    let http = wire.http();
    let post = http
        .client
        .post(http.endpoint())
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    let post = wire
        .headers(post)
        .body(wire.body(request, stream).to_string());
    let response = call
        .send(post)
        .await
        .map_err(|e| match e {
            HttpError::Connection { message } => HttpError::Connection {
                message: format!("POST {}: {message}", http.endpoint()),
            },
            other => other,
        })
        .map_err(|e| http.failed(e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(W::retry_after);
    let text = call.error_body(response).await;
    let body = W::error_message(&text).unwrap_or(text);
    Err(ModelError::Http {
        model: http.model(),
        status: status.as_u16(),
        body: truncate(&body, 500).into(),
        retry_after,
    })
}

/// Reads a whole body under the size limit and parses it as a reply.
async fn whole<W: WireFormat>(
    wire: &W,
    call: &HttpCall,
    response: reqwest::Response,
) -> Result<Message, ModelError> {
    let body = call
        .body(response)
        .await
        .map_err(|e| wire.http().failed(e))?;
    wire.parse_reply(&String::from_utf8_lossy(&body))
}

/// Turns the server-sent events of a streamed reply into message chunks.
fn chunks<D: ChunkDecoder>(
    http: HttpModel,
    decoder: D,
    events: BoxStream<'static, Result<SseEvent, HttpError>>,
) -> ModelStream {
    let out = Chunks {
        http,
        ready: VecDeque::new(),
        finished: false,
        done: false,
    };
    futures::stream::unfold(
        (decoder, out, events),
        |(mut decoder, mut out, mut events)| async move {
            loop {
                if let Some(item) = out.ready.pop_front() {
                    if item.is_err() {
                        out.done = true;
                        out.ready.clear();
                    }
                    return Some((item, (decoder, out, events)));
                }
                if out.done {
                    return None;
                }
                match events.next().await {
                    Some(Ok(event)) => decoder.event(&event.data, &mut out),
                    Some(Err(e)) => {
                        let error = out.http.failed(e);
                        out.fail(error);
                    }
                    None => {
                        out.done = true;
                        if !out.finished {
                            let error = ModelError::StreamInterrupted {
                                model: out.http.model(),
                                message: format!(
                                    "the stream ended before the reply was complete ({})",
                                    D::MISSING_END
                                )
                                .into(),
                            };
                            return Some((Err(error), (decoder, out, events)));
                        }
                    }
                }
            }
        },
    )
    .boxed()
}
