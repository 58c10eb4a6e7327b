//! Multimodal messages: content parts beside the text, seen through the public API: streamed
//! chunks keep them, other agents read them described in their `For context:` lines, and the
//! OpenAI protocol carries them as content-part arrays.

use std::sync::Arc;

use agentweave_runtime::{
    rewrite_for_context, ContentPart, ContextPolicy, HistoryEntry, Message, MessageStream,
};

#[test]
fn another_agents_image_is_described_in_its_context_line() {
    let shown = Message::assistant("Here is the damaged kettle")
        .with_image_base64("image/jpeg", "/9j/4AAQSkZJRg==")
        .with_image_url("https://example.com/kettle.jpg")
        .with_part(ContentPart::text("It arrived like this"));
    let m = rewrite_for_context("intake", &shown);
    assert_eq!(
        m.content,
        "For context: [intake] said: Here is the damaged kettle. [intake] shared an image \
         (image/jpeg, 10 bytes). [intake] shared an image at https://example.com/kettle.jpg. \
         [intake] said: It arrived like this."
    );
    assert!(m.parts.is_empty(), "the context message is text");

    // An image without any text is not silently dropped either.
    let only_image = Message::assistant("").with_image_url("https://x/y.png");
    assert_eq!(
        rewrite_for_context("camera", &only_image).content,
        "For context: [camera] shared an image at https://x/y.png."
    );

    let mut tool = Message::tool("", "c1", "snapshot");
    tool.parts
        .push(ContentPart::image_base64("image/png", "iVBORw0KGgo="));
    assert_eq!(
        rewrite_for_context("camera", &tool).content,
        "For context: [camera] `snapshot` tool returned an image (image/png, 8 bytes)."
    );
}

#[test]
fn the_default_policy_rewrites_only_other_agents_and_keeps_user_images() {
    let user = Arc::new(Message::user("What is broken?").with_image_url("https://x/u.png"));
    let other = Arc::new(Message::assistant("see").with_image_url("https://x/o.png"));
    let own = Arc::new(Message::assistant("mine").with_image_url("https://x/m.png"));
    let entry = |is_user_input, agent: &str, message: &Arc<Message>| HistoryEntry {
        is_user_input,
        agent_name: agent.into(),
        message: Arc::clone(message),
        turn: 0,
    };
    let entries = [
        entry(true, "", &user),
        entry(false, "other", &other),
        entry(false, "me", &own),
    ];
    let out = ContextPolicy::default().apply("me", &entries).unwrap();
    assert_eq!(out.len(), 3);
    assert!(
        Arc::ptr_eq(&out[0], &user),
        "user input kept with its image"
    );
    assert_eq!(
        out[1].content,
        "For context: [other] said: see. [other] shared an image at https://x/o.png."
    );
    assert!(Arc::ptr_eq(&out[2], &own));
}

#[tokio::test]
async fn a_streamed_message_keeps_its_parts() {
    let chunks = || {
        [
            Message::assistant("A "),
            Message::assistant("").with_image_url("https://x/1.png"),
            Message::assistant("picture.").with_part(ContentPart::text("(cropped)")),
        ]
    };
    let expected = [
        ContentPart::image_url("https://x/1.png"),
        ContentPart::text("(cropped)"),
    ];
    let whole = MessageStream::from_messages(chunks())
        .collect_message()
        .await
        .unwrap();
    assert_eq!(whole.content, "A picture.");
    assert_eq!(whole.parts, expected);
    // The record a session keeps of a stream concatenates the same way.
    let stream = MessageStream::from_messages(chunks());
    let record = stream.record();
    let _ = stream.collect_message().await.unwrap();
    let recorded = record.message().await.unwrap();
    assert_eq!(recorded.parts, expected);
}
