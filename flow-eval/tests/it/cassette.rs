//! Record and replay: a run recorded on scripted models and real tools replays offline with
//! the same events; a drifted request fails with a readable diff; bad cassettes say where.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agentweave_eval::cassette::{
    Cassette, CassetteError, CassetteFile, Interaction, MatchPolicy, Mode, RecordedResponse,
    ReplayError,
};
use agentweave_runtime::model::{ModelError, ScriptStep, ScriptedModel, Usage};
use agentweave_runtime::{
    set_sub_agents, tool_fn, ChatModel, ChatModelAgent, ChatRequest, EventJson, FlowAgent, Message,
    Runner,
};
use futures::StreamExt;
use serde_json::json;

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "agentweave-eval-{}-{name}.json",
        std::process::id()
    ))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order_id: u64,
    amount_eur: f64,
}

/// The refund desk, its models and its refund tool wrapped by `cassette`; `refunds` counts
/// real refunds paid.
fn desk(cassette: &Cassette, refunds: Arc<AtomicUsize>, question_word: &str) -> FlowAgent {
    let triage_model = ScriptedModel::rules()
        .when_last_user_contains(question_word, ScriptStep::transfer("refund"))
        .otherwise("How can I help?")
        .named("triage-model");
    let refund_model = ScriptedModel::rules()
        .after_tool("issue_refund", "Done: 39 EUR are on their way.")
        .otherwise(
            ScriptStep::tool_call("issue_refund", json!({"order_id": 42, "amount_eur": 39.0}))
                .with_usage(Usage::new(120, 9)),
        )
        .named("refund-model");
    let pay = tool_fn("issue_refund", "Pays money back.", move |a: Refund| {
        let refunds = Arc::clone(&refunds);
        async move {
            refunds.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!(
                "refunded {} EUR for order {}",
                a.amount_eur, a.order_id
            ))
        }
    });
    let triage = ChatModelAgent::builder("triage", cassette.model(triage_model))
        .instruction("Route refunds to the refund agent.")
        .build()
        .unwrap();
    let refund = ChatModelAgent::builder("refund", cassette.model(refund_model))
        .instruction("Pay refunds.")
        .tool_arc(cassette.tool(pay))
        .build()
        .unwrap();
    set_sub_agents(FlowAgent::new(triage), [FlowAgent::new(refund)]).unwrap()
}

async fn events(runner: Runner, question: &str) -> Vec<EventJson> {
    let mut out = Vec::new();
    let mut stream = runner.run(question);
    while let Some(event) = stream.next().await {
        out.push(event.materialized().await.unwrap());
    }
    out
}

#[tokio::test]
async fn a_streamed_run_replays_offline_with_the_same_events_and_no_refund_paid() {
    let path = temp_path("streamed");
    let refunds = Arc::new(AtomicUsize::new(0));

    let recording = Cassette::new(&path, Mode::Record);
    let flow = desk(&recording, Arc::clone(&refunds), "refund");
    recording.check_flow(&flow).unwrap();
    let recorded = events(
        Runner::builder(flow).streaming(true).build(),
        "A refund for order 42",
    )
    .await;
    recording.save().unwrap();
    assert_eq!(
        refunds.load(Ordering::SeqCst),
        1,
        "recording pays the refund"
    );

    // The file is readable JSON holding streamed chunks, the tool call and usage.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"agentflow_cassette\": 1"));
    assert!(text.contains("\"chunks\""));
    assert!(text.contains("\"issue_refund\""));
    assert!(text.contains("\"input_tokens\": 120"));
    let file = CassetteFile::read(&path).unwrap();
    let kinds: Vec<&str> = file
        .interactions
        .iter()
        .map(|i| match i {
            Interaction::Model(m) if matches!(m.response, RecordedResponse::Stream { .. }) => {
                "stream"
            }
            Interaction::Model(_) => "model",
            Interaction::Tool(_) => "tool",
        })
        .collect();
    assert_eq!(kinds, ["stream", "stream", "tool", "stream"]);

    let replaying = Cassette::replay(&path).unwrap();
    let flow = desk(&replaying, Arc::clone(&refunds), "refund");
    replaying.check_flow(&flow).unwrap();
    let replayed = events(
        Runner::builder(flow).streaming(true).build(),
        "A refund for order 42",
    )
    .await;
    assert_eq!(replayed, recorded);
    assert_eq!(refunds.load(Ordering::SeqCst), 1, "replay pays nothing");
    assert!(replaying.errors().is_empty());
    assert_eq!(replaying.unused(), 0);
    std::fs::remove_file(&path).unwrap();
}

#[tokio::test]
async fn a_request_that_drifts_from_its_cassette_fails_with_a_readable_diff() {
    let path = temp_path("drift");
    let refunds = Arc::new(AtomicUsize::new(0));
    let recording = Cassette::new(&path, Mode::Record);
    let _ = events(
        Runner::new(desk(&recording, Arc::clone(&refunds), "refund")),
        "A refund for order 42",
    )
    .await;
    recording.save().unwrap();

    let replaying = Cassette::replay(&path).unwrap();
    let replayed = events(
        Runner::new(desk(&replaying, refunds, "refund")),
        "A refund for order 43",
    )
    .await;
    let errors = replaying.errors();
    let [ReplayError::RequestMismatch {
        model, call, diff, ..
    }] = &errors[..]
    else {
        panic!("one mismatch expected, got {errors:?}");
    };
    assert_eq!((model.as_str(), *call), ("triage-model", 1));
    assert_eq!(
        diff.to_string(),
        "  messages[1].content: recorded \"A refund for order 42\", now \"A refund for order 43\""
    );
    let text = errors[0].to_string();
    assert!(text.contains("AGENTFLOW_RECORD=1"), "{text}");
    // The run ends with the model error carrying the same text.
    let last = replayed.last().unwrap();
    let error = last.error.as_ref().expect("the run fails");
    assert!(error.message.contains("messages[1].content"), "{error:?}");
    std::fs::remove_file(&path).unwrap();
}

#[tokio::test]
async fn an_ignored_field_may_drift() {
    let recording = Cassette::new(temp_path("unused"), Mode::Record);
    let model = recording.model(ScriptedModel::new([ScriptStep::text("ok")]));
    let mut asked = ChatRequest::new([Arc::new(Message::user("hi"))]);
    asked.params.temperature = Some(0.1);
    model.generate(&asked).await.unwrap();
    let file = recording.file();

    let replaying = Cassette::from_file("mem.json", file.clone())
        .with_policy(MatchPolicy::ignoring(["params.temperature"]));
    let model = replaying.model(ScriptedModel::new(Vec::<ScriptStep>::new()));
    asked.params.temperature = Some(0.9);
    assert_eq!(model.generate(&asked).await.unwrap().content, "ok");

    let exact = Cassette::from_file("mem.json", file);
    let model = exact.model(ScriptedModel::new(Vec::<ScriptStep>::new()));
    let error = model.generate(&asked).await.unwrap_err().to_string();
    assert!(
        error.contains("params.temperature: recorded 0.1"),
        "{error}"
    );
}

#[tokio::test]
async fn replay_matches_calls_by_request_whatever_the_models_are_named() {
    // Recorded with a real model's name, replayed with a stand-in under another name: the
    // request identifies the call. Past the recording, the error says what changed.
    let recording = Cassette::new(temp_path("names"), Mode::Record);
    let model = recording.model(
        ScriptedModel::new([ScriptStep::text("hello"), ScriptStep::text("again")])
            .named("gpt-4o-mini"),
    );
    let first = ChatRequest::new([Arc::new(Message::user("hi"))]);
    let second = ChatRequest::new([Arc::new(Message::user("and now?"))]);
    model.generate(&first).await.unwrap();
    model.generate(&second).await.unwrap();
    let file = recording.file();

    let replaying = Cassette::from_file("mem.json", file);
    let stand_in =
        replaying.model(ScriptedModel::new(Vec::<ScriptStep>::new()).named("frontdesk-script"));
    assert_eq!(stand_in.model_name(), "frontdesk-script");
    assert_eq!(stand_in.generate(&first).await.unwrap().content, "hello");
    assert_eq!(stand_in.generate(&second).await.unwrap().content, "again");
    let error = stand_in.generate(&first).await.unwrap_err().to_string();
    assert!(
        error.contains("all 2 model calls the cassette recorded (of gpt-4o-mini) were answered")
            && error.contains("more often than when it was recorded"),
        "{error}"
    );
    assert!(replaying.errors().len() == 1 && replaying.unused() == 0);
}

#[tokio::test]
async fn recorded_failures_replay_as_failures() {
    let recording = Cassette::new(temp_path("unused2"), Mode::Record);
    let model = recording.model(ScriptedModel::new([
        ScriptStep::fail(ModelError::http("m", 429, "slow down")),
        ScriptStep::text("a long answer").fail_mid_stream(1, ModelError::other("m", "cut", true)),
    ]));
    let ask = ChatRequest::new([Arc::new(Message::user("hi"))]);
    assert!(model.generate(&ask).await.is_err());
    let mut s = model.stream(&ask).await.unwrap();
    let mut got = Vec::new();
    while let Some(item) = s.next().await {
        got.push(item.is_ok());
    }
    drop(s);

    let replaying = Cassette::from_file("mem.json", recording.file());
    let model = replaying.model(ScriptedModel::new(Vec::<ScriptStep>::new()));
    let e = model.generate(&ask).await.unwrap_err();
    assert!(matches!(e, ModelError::Http { status: 429, .. }), "{e:?}");
    assert!(e.retryable());
    let mut s = model.stream(&ask).await.unwrap();
    let mut again = Vec::new();
    while let Some(item) = s.next().await {
        again.push(item.is_ok());
    }
    assert_eq!(again, got);
    assert_eq!(got.last(), Some(&false));
}

#[tokio::test]
async fn a_tool_called_with_other_arguments_is_a_replay_error() {
    let recording = Cassette::new(temp_path("unused3"), Mode::Record);
    let refunds = Arc::new(AtomicUsize::new(0));
    let _ = events(
        Runner::new(desk(&recording, Arc::clone(&refunds), "refund")),
        "refund please",
    )
    .await;
    let mut file = recording.file();
    for i in &mut file.interactions {
        if let Interaction::Tool(t) = i {
            t.arguments = json!({"order_id": 41, "amount_eur": 39.0});
        }
    }
    let replaying = Cassette::from_file("mem.json", file);
    let _ = events(
        Runner::new(desk(&replaying, Arc::clone(&refunds), "refund")),
        "refund please",
    )
    .await;
    let errors = replaying.errors();
    assert!(
        matches!(&errors[0], ReplayError::ToolMismatch { tool, diff, .. }
            if tool == "issue_refund" && diff.to_string() == "  order_id: recorded 41, now 42"),
        "{errors:?}"
    );
    assert_eq!(refunds.load(Ordering::SeqCst), 1, "only the recording paid");
}

#[test]
fn a_malformed_cassette_names_the_file_line_and_field() {
    let text = "{\n  \"agentflow_cassette\": 1,\n  \"interactions\": [\n    {\"model\": {\n      \"name\": \"m\",\n      \"request\": {\"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]},\n      \"response\": {\"message\": {\"role\": \"assistant\", \"content\": \"ok\"}}\n    }}\n  ]\n}\n";
    let e = CassetteFile::parse(std::path::Path::new("tests/cassettes/x.json"), text).unwrap_err();
    let CassetteError::Malformed {
        line,
        field,
        message,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*line, 6);
    assert_eq!(field, "interactions[0].model.request.messages[0].role");
    assert!(message.contains("unknown variant `robot`"), "{message}");
    let text = e.to_string();
    assert!(
        text.starts_with("cassette tests/cassettes/x.json, line 6, column "),
        "{text}"
    );

    let e = CassetteFile::parse(
        std::path::Path::new("x.json"),
        "{\"agentflow_cassette\": 7}",
    )
    .unwrap_err();
    assert!(matches!(e, CassetteError::Version { found: 7, .. }), "{e}");
    let e = Cassette::replay("/nonexistent/never-recorded.json").unwrap_err();
    assert!(e.to_string().contains("AGENTFLOW_RECORD=1"), "{e}");
}

#[tokio::test]
async fn a_cassette_for_another_flow_is_refused() {
    let path = temp_path("other-flow");
    let recording = Cassette::new(&path, Mode::Record);
    let flow = desk(&recording, Arc::default(), "refund");
    recording.check_flow(&flow).unwrap();
    recording.save().unwrap();

    let replaying = Cassette::replay(&path).unwrap();
    let other = FlowAgent::new(
        ChatModelAgent::builder(
            "helpdesk",
            replaying.model(ScriptedModel::new(Vec::<ScriptStep>::new())),
        )
        .build()
        .unwrap(),
    );
    let e = replaying.check_flow(&other).unwrap_err();
    assert!(
        matches!(&e, CassetteError::OtherFlow { recorded, current, .. }
            if recorded == "triage(refund)" && current == "helpdesk"),
        "{e:?}"
    );
    std::fs::remove_file(&path).unwrap();
}
