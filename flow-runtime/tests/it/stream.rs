//! Forked message streams: every reader sees every chunk; readers are independent.

use std::sync::Arc;
use std::time::Duration;

use agentweave_runtime::RunRequest;
use agentweave_runtime::{EventOutput, Message, MessageStream, StreamError};
use futures::StreamExt;

fn text(chunk: &Result<Arc<Message>, StreamError>) -> String {
    chunk.as_ref().unwrap().content.clone()
}

#[tokio::test]
async fn both_readers_of_a_fork_see_all_chunks() {
    let (tx, first) = MessageStream::channel();
    let second = first.fork();
    let producer = tokio::spawn(async move {
        for i in 0..100 {
            tx.send(Message::assistant(format!("{i},")));
            tokio::task::yield_now().await;
        }
    });
    let a = tokio::spawn(async move { first.map(|c| text(&c)).collect::<Vec<_>>().await });
    let b = tokio::spawn(async move { second.map(|c| text(&c)).collect::<Vec<_>>().await });
    producer.await.unwrap();
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    let expected: Vec<String> = (0..100).map(|i| format!("{i},")).collect();
    assert_eq!(a, expected);
    assert_eq!(b, expected);
}

#[tokio::test]
async fn a_chunk_is_shared_not_copied_between_readers() {
    let first = MessageStream::from_messages([Message::assistant("x")]);
    let mut second = first.fork();
    let mut first = first;
    let a = first.next().await.unwrap().unwrap();
    let b = second.next().await.unwrap().unwrap();
    assert!(Arc::ptr_eq(&a, &b));
}

#[tokio::test]
async fn dropping_one_reader_does_not_stall_the_other() {
    let (tx, waiting) = MessageStream::channel();
    let dropped = waiting.fork();
    // Park both readers on the empty source: the one polled last registered its waker.
    let keep = tokio::spawn(async move { waiting.map(|c| text(&c)).collect::<Vec<_>>().await });
    let mut dropped = dropped;
    let parked = tokio::time::timeout(Duration::from_millis(20), dropped.next()).await;
    assert!(parked.is_err(), "nothing to read yet");
    drop(dropped);
    tx.send(Message::assistant("a"));
    tx.send(Message::assistant("b"));
    drop(tx);
    let got = tokio::time::timeout(Duration::from_secs(10), keep)
        .await
        .expect("the remaining reader finishes")
        .unwrap();
    assert_eq!(got, ["a", "b"]);
}

#[tokio::test]
async fn a_fork_made_midway_starts_where_its_origin_is() {
    let mut first = MessageStream::from_messages(["a", "b", "c"].map(Message::assistant));
    assert_eq!(text(&first.next().await.unwrap()), "a");
    let late = first.fork();
    assert_eq!(late.collect_message().await.unwrap().content, "bc");
    assert_eq!(first.collect_message().await.unwrap().content, "bc");
}

#[tokio::test]
async fn a_source_error_reaches_every_reader_once_after_the_chunks_before_it() {
    let (tx, first) = MessageStream::channel();
    let second = first.fork();
    tx.send(Message::assistant("partial"));
    tx.fail(StreamError::new("connection reset"));
    for reader in [first, second] {
        let items: Vec<_> = reader.collect().await;
        assert_eq!(items.len(), 2);
        assert_eq!(text(&items[0]), "partial");
        assert_eq!(
            items[1].as_ref().unwrap_err().to_string(),
            "message stream failed: connection reset"
        );
    }
}

#[tokio::test]
async fn collect_message_reports_the_error() {
    let (tx, reader) = MessageStream::channel();
    tx.send(Message::assistant("x"));
    tx.fail(StreamError::new("boom"));
    assert_eq!(
        reader.collect_message().await.unwrap_err(),
        StreamError::new("boom")
    );
}

/// `read_message` reads a whole and a streamed message alike, on a live event and on the
/// session's record of it, and the caller's own reader still sees every chunk.
#[tokio::test]
async fn read_message_is_one_accessor_for_whole_and_streamed_events_live_and_recorded() {
    use agentweave_runtime::{AgentEvent, FlowAgent, FnAgent, Runner, Session};
    let agent = FnAgent::new("talker", |cx, _| async move {
        cx.say("whole");
        cx.emit(AgentEvent::stream(MessageStream::from_messages([
            Message::assistant("str"),
            Message::assistant("eamed"),
        ])));
        Ok(())
    });
    let session = Session::new();
    let events: Vec<AgentEvent> = Runner::new(FlowAgent::new(agent))
        .run(RunRequest::new([Message::user("hi")]).session(Arc::clone(&session)))
        .collect()
        .await;
    let mut live = Vec::new();
    for e in &events {
        live.push(e.read_message().await.unwrap().unwrap().content.clone());
    }
    assert_eq!(live, ["whole", "streamed"]);
    assert!(
        events[1].message_output().is_none(),
        "the old accessor reads whole messages only"
    );
    let mut recorded = Vec::new();
    for e in session.events() {
        recorded.push(e.read_message().await.unwrap().unwrap().content.clone());
    }
    assert_eq!(recorded, ["whole", "streamed"]);
    let EventOutput::Stream(mine) = events[1].output.clone().unwrap() else {
        panic!("a stream")
    };
    assert_eq!(mine.collect_message().await.unwrap().content, "streamed");
}
