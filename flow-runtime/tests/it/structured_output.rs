//! Structured output: the request carries the schema, the answer is decoded into the type and
//! stored as a session value; a bad answer goes back to the model with the error, a bounded
//! number of times, then the run ends with a typed error.

use std::sync::Arc;

use agentweave_runtime::model::{OutputSchema, ScriptStep, ScriptedModel};
use agentweave_runtime::RunRequest;
use agentweave_runtime::{
    AgentEvent, ChatAgentError, ChatModelAgent, FlowAgent, Message, Role, Runner, Session,
};
use futures::executor::block_on;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct Verdict {
    /// Whether the refund is approved.
    approved: bool,
    /// The amount, in euros.
    amount_eur: f64,
}

fn run(agent: ChatModelAgent, streaming: bool) -> (Vec<AgentEvent>, Arc<Session>) {
    let session = Session::new();
    let events = block_on(
        Runner::builder(FlowAgent::new(agent))
            .streaming(streaming)
            .build()
            .run(RunRequest::new([Message::user("Refund order 42?")]).session(Arc::clone(&session)))
            .collect(),
    );
    (events, session)
}

#[test]
fn the_answer_is_decoded_into_the_type_and_stored_as_a_session_value() {
    for streaming in [false, true] {
        let model = ScriptedModel::new([ScriptStep::text(
            r#"{"approved": true, "amount_eur": 39.5}"#,
        )]);
        let agent = ChatModelAgent::builder("refund", model.clone())
            .output_type::<Verdict>()
            .output_type_key("verdict")
            .build()
            .unwrap();
        let (events, session) = run(agent, streaming);
        assert!(events.iter().all(|e| e.error.is_none()), "{events:?}");
        let verdict: Verdict = session.value("verdict").unwrap().unwrap();
        assert_eq!(
            verdict,
            Verdict {
                approved: true,
                amount_eur: 39.5
            }
        );
        let request = &model.requests()[0];
        let schema = request
            .output_schema
            .as_ref()
            .expect("the request asks for the schema");
        assert_eq!(**schema, OutputSchema::of::<Verdict>());
        assert_eq!(
            schema.schema["required"],
            serde_json::json!(["approved", "amount_eur"])
        );
    }
}

#[test]
fn a_bad_answer_is_sent_back_with_the_error_and_the_next_one_is_taken() {
    let model = ScriptedModel::new([
        ScriptStep::text("Yes, 39 EUR."),
        ScriptStep::text(r#"{"approved": true}"#),
        ScriptStep::text(r#"{"approved": false, "amount_eur": 0}"#),
    ]);
    let agent = ChatModelAgent::builder("refund", model.clone())
        .output_type::<Verdict>()
        .build()
        .unwrap();
    let (events, session) = run(agent, false);
    assert!(events.iter().all(|e| e.error.is_none()), "{events:?}");
    assert_eq!(
        session.value::<Verdict>("refund").unwrap(),
        Some(Verdict {
            approved: false,
            amount_eur: 0.0
        })
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    // The second request: the bad answer, then the correction naming the error.
    let tail: Vec<(Role, String)> = requests[1].messages[1..]
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect();
    assert_eq!(tail[0], (Role::Assistant, "Yes, 39 EUR.".to_owned()));
    assert_eq!(tail[1].0, Role::User);
    assert!(
        tail[1]
            .1
            .starts_with("Your answer did not match the required JSON schema `Verdict`: "),
        "{}",
        tail[1].1
    );
    let third = requests[2].messages.last().unwrap();
    assert!(
        third.content.contains("missing field `amount_eur`"),
        "{}",
        third.content
    );
}

#[test]
fn after_the_last_retry_the_run_ends_with_a_typed_error() {
    let model = ScriptedModel::rules().otherwise(ScriptStep::text("I would rather chat."));
    let agent = ChatModelAgent::builder("refund", model.clone())
        .output_type::<Verdict>()
        .output_retries(1)
        .build()
        .unwrap();
    let (events, session) = run(agent, false);
    assert_eq!(model.calls(), 2, "one answer and one retry");
    let Some(error) = events.last().unwrap().error.as_ref() else {
        panic!("expected an error event, got {events:?}")
    };
    let error = error
        .chat_agent_error()
        .expect("a ChatModelAgent's own error");
    let ChatAgentError::Output {
        agent,
        schema,
        attempts,
        answer,
        ..
    } = error
    else {
        panic!("expected an output error, got {error:?}")
    };
    assert_eq!((&**agent, &**schema, *attempts), ("refund", "Verdict", 2));
    assert_eq!(&**answer, "I would rather chat.");
    assert!(error.to_string().starts_with(
        "agent 'refund' got no answer matching its output type `Verdict` after 2 attempt(s): "
    ));
    assert!(
        error
            .to_string()
            .ends_with("; its last answer was: I would rather chat."),
        "{error}"
    );
    assert_eq!(session.value::<Verdict>("refund").unwrap(), None);
}
