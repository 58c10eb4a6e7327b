//! `EventPrinter`: one line format for every kind of event, streamed messages chunk by chunk,
//! and the event stays readable after it was printed.

use agentweave_runtime::usage::Usage;
use agentweave_runtime::{
    set_sub_agents, Action, AgentError, AgentEvent, EventOutput, EventPrinter, FlowAgent, FnAgent,
    Message, MessageStream, Runner,
};
use futures::StreamExt;
use serde_json::json;

#[tokio::test]
async fn the_printer_writes_every_kind_of_event_with_its_run_path() {
    let triage = FnAgent::new("triage", |cx, _| async move {
        let mut reply = Message::assistant("Checking.");
        reply.usage = Some(Box::new(Usage {
            input_tokens: 120,
            output_tokens: 14,
            ..Usage::default()
        }));
        cx.emit(AgentEvent::message(reply));
        cx.emit(AgentEvent::stream(MessageStream::from_messages([
            Message::assistant("Sending "),
            Message::assistant("you on."),
        ])));
        cx.emit(AgentEvent::custom(json!({"score": 3})));
        cx.transfer("refund");
        Ok(())
    });
    let refund = FnAgent::new("refund", |cx, _| async move {
        cx.emit(AgentEvent::message(Message::tool(
            "order 42: a kettle",
            "c1",
            "lookup",
        )));
        cx.emit(AgentEvent::error(AgentError::failed(
            "refund",
            "the bank is closed",
        )));
        cx.interrupt(json!({"question": "Approve?"}));
        Ok(())
    });
    let desk = set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap();
    let events: Vec<AgentEvent> = Runner::new(desk).run("refund").collect().await;
    let mut printer = EventPrinter::new(Vec::new()).usage(true);
    for e in &events {
        printer.print(e).await.unwrap();
    }
    let text = String::from_utf8(printer.into_inner()).unwrap();
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "  [triage] assistant: Checking.",
            "  [triage] usage: 120 in, 14 out",
            "  [triage] assistant (streamed): Sending you on.",
            "  [triage] custom: {\"score\":3}",
            "  [triage] assistant:  -> transfer_to_agent({\"agent_name\":\"refund\"})",
            "  [triage] tool: successfully transferred to agent [refund]",
            "  [triage] => transfer to refund",
            "  [triage/refund] tool: order 42: a kettle",
            "  [triage/refund] error: agent 'refund' failed: the bank is closed",
            "  [triage/refund] => interrupt triage/refund: {\"question\":\"Approve?\"}",
        ]
    );
    // The streamed event is still whole for the next reader.
    let Some(EventOutput::Stream(s)) = events[1].output.clone() else {
        panic!("a stream")
    };
    assert_eq!(
        s.collect_message().await.unwrap().content,
        "Sending you on."
    );
    assert!(matches!(
        events.last().unwrap().action,
        Some(Action::Interrupted(_))
    ));
}
