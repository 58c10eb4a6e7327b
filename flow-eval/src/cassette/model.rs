//! [`RecordingModel`] records a model's calls into a [`Cassette`]; [`ReplayModel`] answers
//! from one.

use std::pin::Pin;
use std::task::{Context, Poll};

use agentweave_runtime::model::ModelStream;
use agentweave_runtime::{ChatModel, ChatRequest, Message, ModelError};
use async_trait::async_trait;
use futures::{Stream, StreamExt};

use super::file::{
    Interaction, ModelInteraction, RecordedError, RecordedRequest, RecordedResponse,
};
use super::handle::{Cassette, ReplayError};

/// A [`ChatModel`] that calls `M` and records each request and answer in a [`Cassette`]:
/// whole answers, streamed chunks one by one (with the error that broke a stream off), and
/// failed calls. A stream dropped before its end is recorded with the chunks read so far.
pub struct RecordingModel<M: ChatModel> {
    inner: M,
    cassette: Cassette,
}

impl<M: ChatModel> RecordingModel<M> {
    /// Records the calls of `inner` into `cassette`.
    pub fn new(inner: M, cassette: Cassette) -> Self {
        RecordingModel { inner, cassette }
    }

    /// The model it records.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    fn record(&self, request: RecordedRequest, response: RecordedResponse) {
        self.cassette
            .push(Interaction::Model(Box::new(ModelInteraction {
                name: self.inner.model_name().to_owned(),
                request,
                response,
            })));
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for RecordingModel<M> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let recorded = RecordedRequest::of(request);
        let answer = self.inner.generate(request).await;
        let response = match &answer {
            Ok(m) => RecordedResponse::Message(m.clone()),
            Err(e) => RecordedResponse::Error(RecordedError::of(e)),
        };
        self.record(recorded, response);
        answer
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        let recorded = RecordedRequest::of(request);
        match self.inner.stream(request).await {
            Ok(stream) => Ok(RecordingStream {
                inner: stream,
                chunks: Vec::new(),
                pending: Some(Pending {
                    cassette: self.cassette.clone(),
                    model: self.inner.model_name().to_owned(),
                    request: recorded,
                }),
            }
            .boxed()),
            Err(e) => {
                self.record(recorded, RecordedResponse::Error(RecordedError::of(&e)));
                Err(e)
            }
        }
    }
}

/// What a recording stream writes once it ends.
struct Pending {
    cassette: Cassette,
    model: String,
    request: RecordedRequest,
}

/// Passes a model's chunks on and records them when the stream ends (or is dropped).
struct RecordingStream {
    inner: ModelStream,
    chunks: Vec<Message>,
    pending: Option<Pending>,
}

impl RecordingStream {
    fn finish(&mut self, error: Option<RecordedError>) {
        if let Some(p) = self.pending.take() {
            p.cassette
                .push(Interaction::Model(Box::new(ModelInteraction {
                    name: p.model,
                    request: p.request,
                    response: RecordedResponse::Stream {
                        chunks: std::mem::take(&mut self.chunks),
                        error,
                    },
                })));
        }
    }
}

impl Stream for RecordingStream {
    type Item = Result<Message, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.poll_next_unpin(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => {
                let chunk = chunk.clone();
                self.chunks.push(chunk);
            }
            Poll::Ready(Some(Err(e))) => {
                let e = RecordedError::of(e);
                self.finish(Some(e));
            }
            Poll::Ready(None) => self.finish(None),
            Poll::Pending => {}
        }
        polled
    }
}

impl Drop for RecordingStream {
    fn drop(&mut self) {
        self.finish(None);
    }
}

/// A [`ChatModel`] that answers from a [`Cassette`], offline and deterministically, and never
/// calls a real model. See [`Cassette`] for how requests are matched.
///
/// A request the cassette did not record is answered with a [`ModelError`] whose text is the
/// [`ReplayError`] (with the difference from the next recorded request); the typed error is
/// also kept in [`Cassette::errors`], and [`answer`](ReplayModel::answer) returns it as is.
#[derive(Debug, Clone)]
pub struct ReplayModel {
    name: String,
    cassette: Cassette,
}

impl ReplayModel {
    /// Answers as the model named `name` from `cassette` (calls recorded under `name` first,
    /// then those of any name whose request matches).
    pub fn new(name: impl Into<String>, cassette: Cassette) -> Self {
        ReplayModel {
            name: name.into(),
            cassette,
        }
    }

    /// The recorded answer to `request`, or why there is none.
    pub fn answer(&self, request: &ChatRequest) -> Result<RecordedResponse, ReplayError> {
        self.cassette
            .take_model(&self.name, &RecordedRequest::of(request))
    }

    fn replay_error(&self, e: &ReplayError) -> ModelError {
        ModelError::other(self.name.as_str(), e.to_string(), false)
    }
}

#[async_trait]
impl ChatModel for ReplayModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        match self.answer(request) {
            Ok(response) => response.whole(&self.name),
            Err(e) => Err(self.replay_error(&e)),
        }
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        let response = self.answer(request).map_err(|e| self.replay_error(&e))?;
        let items: Vec<Result<Message, ModelError>> = match response {
            RecordedResponse::Message(m) => vec![Ok(m)],
            RecordedResponse::Stream { chunks, error } => chunks
                .into_iter()
                .map(Ok)
                .chain(error.map(|e| Err(e.to_model_error(&self.name))))
                .collect(),
            RecordedResponse::Error(e) => return Err(e.to_model_error(&self.name)),
        };
        Ok(futures::stream::iter(items).boxed())
    }
}
