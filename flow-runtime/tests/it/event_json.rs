//! The JSON form of events (what the server streams): every part of an event, exactly.

use agentweave_runtime::{
    set_sub_agents, AgentEvent, EventJson, EventJsonError, FlowAgent, FnAgent, Message,
    MessageStream, Runner,
};
use futures::StreamExt;
use serde_json::json;

#[tokio::test]
async fn every_part_of_an_event_has_its_documented_json_form() {
    let triage = FnAgent::new("triage", |cx, _| async move {
        cx.emit(AgentEvent::custom(json!({"progress": 0.5})));
        cx.transfer("refund");
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.send_stream(MessageStream::from_messages([
            Message::assistant("Refund "),
            Message::assistant("sent."),
        ]));
        cx.interrupt(json!({"question": "approve?"}));
        Ok(())
    });
    let lost = FnAgent::new("lost", |cx, _| async move {
        cx.transfer("nowhere");
        Ok(())
    });
    let tree = set_sub_agents(
        FlowAgent::new(triage),
        [FlowAgent::new(refund), FlowAgent::new(lost)],
    )
    .unwrap();
    let runner = Runner::builder(tree).streaming(true).build();
    let mut lines = Vec::new();
    let mut events = runner.run("refund please");
    while let Some(event) = events.next().await {
        // Serialised as the event arrives: a streamed message is waited for.
        let json = event.materialized().await.unwrap();
        lines.push(serde_json::to_string(&json).unwrap());
        // Read through the event's own reader afterwards: it still sees every chunk.
        if let Some(agentweave_runtime::EventOutput::Stream(s)) = event.output {
            assert_eq!(s.collect_message().await.unwrap().content, "Refund sent.");
        }
    }
    assert_eq!(
        lines,
        [
            r#"{"agent_name":"triage","run_path":["triage"],"custom":{"progress":0.5}}"#,
            r#"{"agent_name":"triage","run_path":["triage"],"message":{"role":"assistant","content":"","tool_calls":[{"id":"transfer-refund","name":"transfer_to_agent","arguments":"{\"agent_name\":\"refund\"}"}]}}"#,
            r#"{"agent_name":"triage","run_path":["triage"],"message":{"role":"tool","content":"successfully transferred to agent [refund]","tool_call_id":"transfer-refund","tool_name":"transfer_to_agent"},"action":{"transfer_to_agent":"refund"}}"#,
            r#"{"agent_name":"refund","run_path":["triage","refund"],"message":{"role":"assistant","content":"Refund sent."},"streamed":true}"#,
            r#"{"agent_name":"refund","run_path":["triage","refund"],"action":{"interrupted":{"info":{"question":"approve?"},"id":"triage/refund","address":[{"agent":"refund","run_path":["triage","refund"]}]}}}"#,
        ]
    );

    // An error names its kind and agent; the form round-trips.
    let tree = set_sub_agents(
        FlowAgent::new(FnAgent::new("root", |cx, _| async move {
            cx.transfer("lost");
            Ok(())
        })),
        [FlowAgent::new(FnAgent::new("lost", |cx, _| async move {
            cx.transfer("nowhere");
            Ok(())
        }))],
    )
    .unwrap();
    let events: Vec<AgentEvent> = Runner::new(tree).run("x").collect().await;
    let error = serde_json::to_string(events.last().unwrap()).unwrap();
    assert_eq!(
        error,
        r#"{"agent_name":"lost","run_path":["root","lost"],"error":{"kind":"transfer_target_not_found","message":"transfer failed: agent 'nowhere' not found when transferring from 'lost'","agent":"lost"}}"#
    );
    let back: EventJson = serde_json::from_str(&error).unwrap();
    assert_eq!(back, events.last().unwrap().to_json().unwrap());
    assert_eq!(back.error.unwrap().kind, "transfer_target_not_found");
    for e in &events {
        let json = e.to_json().unwrap();
        let text = serde_json::to_string(&json).unwrap();
        assert_eq!(serde_json::from_str::<EventJson>(&text).unwrap(), json);
    }
}

#[tokio::test]
async fn a_stream_that_has_not_ended_is_not_serialised_half() {
    let (tx, stream) = MessageStream::channel();
    let event = AgentEvent::stream(stream);
    tx.send(Message::assistant("half"));
    let error = serde_json::to_string(&event).unwrap_err();
    assert!(error.to_string().contains("has not ended"), "{error}");
    assert!(matches!(
        event.to_json(),
        Err(EventJsonError::StreamNotEnded { .. })
    ));
    drop(tx);
    // Waiting for the end reads the source; then the event serialises whole, as it stands.
    let whole = event.materialized().await.unwrap();
    assert_eq!(whole.message.as_ref().unwrap().content, "half");
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(
        json,
        json!({"agent_name": "", "run_path": [], "message": {"role": "assistant", "content": "half"}, "streamed": true})
    );
}
