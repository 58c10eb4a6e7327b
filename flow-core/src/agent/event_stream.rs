//! [`EventStream`]: what running an agent produces.

use std::fmt;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use futures::Stream;

use crate::event::AgentEvent;

/// A stream of [`AgentEvent`]s: what running an agent produces.
///
/// Dropping it cancels the run at its next await point; nothing keeps running in the background.
pub struct EventStream {
    inner: Pin<Box<dyn Stream<Item = AgentEvent> + Send>>,
}

impl EventStream {
    /// Wraps any stream of events.
    pub fn new(stream: impl Stream<Item = AgentEvent> + Send + 'static) -> Self {
        EventStream {
            inner: Box::pin(stream),
        }
    }

    /// A stream that ends at once.
    pub fn empty() -> Self {
        Self::new(futures::stream::empty())
    }

    /// A stream of the given events, in order.
    pub fn from_events(events: impl IntoIterator<Item = AgentEvent>) -> Self {
        Self::new(futures::stream::iter(
            events.into_iter().collect::<Vec<_>>(),
        ))
    }
}

impl Stream for EventStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        self.inner.as_mut().poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}
