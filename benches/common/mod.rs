//! The workloads of the "Performance budget" (BENCHMARKS.md), shared by the bench binaries.
//!
//! They mirror the Python anchors (`bench/anchors/README.md` in the shared folder): the same
//! trees, agent names, user message and answers, on scripted agents with no latency, so the
//! figures are pure orchestration cost. Each tree comes in two flavours:
//!
//! - [`Kind::Fn`]: code agents ([`FnAgent`]) that emit the transfer or the answer directly;
//! - [`Kind::Chat`]: [`ChatModelAgent`]s over a [`ScriptedModel`] whose reply calls the
//!   `transfer_to_agent` tool, as the anchors' fake models do: the like-for-like variant.
#![allow(dead_code)]

use std::sync::Arc;

use agentweave::model::{ScriptStep, ScriptedModel};
use agentweave::prelude::*;
use agentweave::MessageStream;
use agentweave::RunRequest;
use agentweave::Session;
use agentweave::{event::EventOutput, message::MessageRef, model::ChatModel};
use futures::StreamExt;

/// The user's question in every workload.
pub const USER: &str = "I want a refund for order 42.";
/// What the answering agent says.
pub const ANSWER: &str = "Your refund is approved.";

/// Which kind of agents a tree is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `FnAgent`s.
    Fn,
    /// `ChatModelAgent`s on `ScriptedModel`s.
    Chat,
}

impl Kind {
    /// Both kinds, for loops over bench variants.
    pub const ALL: [Kind; 2] = [Kind::Fn, Kind::Chat];

    /// Short label for bench ids.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Fn => "fn_agent",
            Kind::Chat => "chat_model_agent",
        }
    }
}

/// A scripted model that always gives `step`, without logging requests.
pub fn model(step: ScriptStep) -> ScriptedModel {
    ScriptedModel::rules().otherwise(step).keep_requests(false)
}

fn chat(name: &str, model: impl ChatModel) -> FlowAgent {
    let agent = ChatModelAgent::builder(name, model)
        .instruction(format!("You are {name}."))
        .description(format!("{name} agent"))
        .build()
        .expect("valid agent");
    FlowAgent::new(agent)
}

/// An agent that transfers to `target`.
pub fn transferring(kind: Kind, name: &str, target: &str) -> FlowAgent {
    match kind {
        Kind::Fn => {
            let target: Arc<str> = target.into();
            FlowAgent::new(
                FnAgent::new(name, move |cx, _| {
                    let target = Arc::clone(&target);
                    async move {
                        cx.transfer(&target);
                        Ok(())
                    }
                })
                .with_description(format!("{name} agent")),
            )
        }
        Kind::Chat => chat(name, model(ScriptStep::transfer(target))),
    }
}

/// An agent that answers [`ANSWER`].
pub fn answering(kind: Kind, name: &str) -> FlowAgent {
    match kind {
        Kind::Fn => FlowAgent::new(
            FnAgent::new(name, |cx, _| async move {
                cx.say(ANSWER);
                Ok(())
            })
            .with_description(format!("{name} agent")),
        ),
        Kind::Chat => chat(name, model(ScriptStep::text(ANSWER))),
    }
}

/// W1: `root` with sub-agents `refund` and `complaint`; root transfers to refund, which answers.
pub fn w1_tree(kind: Kind) -> FlowAgent {
    set_sub_agents(
        transferring(kind, "root", "refund"),
        [answering(kind, "refund"), answering(kind, "complaint")],
    )
    .expect("valid tree")
}

/// W1 with a refund agent of your own (W5 uses one that waits at a gate).
pub fn w1_tree_with_refund(kind: Kind, refund: FlowAgent) -> FlowAgent {
    set_sub_agents(
        transferring(kind, "root", "refund"),
        [refund, answering(kind, "complaint")],
    )
    .expect("valid tree")
}

/// W4: `agent0 -> agent1 -> … -> agent{depth-1}`, each transferring to its only child; the last
/// answers.
pub fn chain_tree(kind: Kind, depth: usize) -> FlowAgent {
    assert!(depth >= 1);
    let mut child = answering(kind, &format!("agent{}", depth - 1));
    for i in (0..depth - 1).rev() {
        let parent = transferring(kind, &format!("agent{i}"), &format!("agent{}", i + 1));
        child = set_sub_agents(parent, [child]).expect("valid tree");
    }
    child
}

/// The input of W1/W4: the user's question alone.
pub fn user_input() -> Vec<MessageRef> {
    history(0)
}

/// W2's input: `h` prior messages (user and assistant in turn), then the user's question.
/// Built once and shared by every run (runs take the `Arc`s, never copies).
pub fn history(h: usize) -> Vec<MessageRef> {
    let mut out: Vec<MessageRef> = (0..h)
        .map(|i| {
            Arc::new(if i % 2 == 0 {
                Message::user(format!("earlier user message {i}"))
            } else {
                Message::assistant(format!("earlier reply {i}"))
            })
        })
        .collect();
    out.push(Arc::new(Message::user(USER)));
    out
}

/// Runs one session of `runner` on `input` to its end; returns the number of events.
pub async fn run_once(runner: &Runner, input: &[MessageRef]) -> usize {
    let mut events = runner.run(RunRequest::new(input.iter().cloned()));
    let mut n = 0;
    while let Some(event) = events.next().await {
        n += 1;
        std::hint::black_box(&event);
    }
    n
}

/// Runs one session and checks it ended with `answerer` saying [`ANSWER`] and no error.
pub async fn verify(runner: &Runner, input: &[MessageRef], answerer: &str) {
    let session = Session::new();
    let events: Vec<AgentEvent> = runner
        .run(RunRequest::new(input.iter().cloned()).session(Arc::clone(&session)))
        .collect()
        .await;
    for e in &events {
        assert!(e.error.is_none(), "error event: {:?}", e.error);
    }
    let last = events.last().expect("events");
    assert_eq!(last.agent_name(), answerer, "run ended at the wrong agent");
    let message = session.events().last().unwrap().message().await.unwrap();
    assert_eq!(message.unwrap().content, ANSWER);
}

/// W3: an agent that streams `n` one-character chunks (made as the stream is read, as a model
/// client would).
pub fn streamer(kind: Kind, n: usize) -> FlowAgent {
    match kind {
        Kind::Fn => FlowAgent::new(FnAgent::new("streamer", move |cx, _| async move {
            let chunks = futures::stream::iter((0..n).map(|_| Ok(Message::assistant("x"))));
            cx.send_stream(MessageStream::from_stream(chunks));
            Ok(())
        })),
        Kind::Chat => {
            // The scripted model streams its reply word by word: "x", " x", " x", …
            let reply = vec!["x"; n].join(" ");
            chat("streamer", model(ScriptStep::text(reply)))
        }
    }
}

/// Runs W3 once: a streaming run, the caller reading every chunk of every streamed message
/// while the session holds its own fork. Returns the number of chunks the caller received.
pub async fn stream_once(runner: &Runner, input: &[MessageRef]) -> usize {
    let mut events = runner.run(RunRequest::new(input.iter().cloned()));
    let mut chunks = 0;
    while let Some(event) = events.next().await {
        if let Some(EventOutput::Stream(mut stream)) = event.output {
            while let Some(chunk) = stream.next().await {
                std::hint::black_box(chunk.expect("chunk"));
                chunks += 1;
            }
        }
    }
    chunks
}

/// W1 declared with the DSL: the same tree of `#[agent]` fns in a `flow!` (root transfers to
/// refund, which answers), so a change to the code `#[agent]` generates around a body is
/// measured against the `FnAgent` tree.
pub mod dsl {
    use agentweave::prelude::*;

    #[agent(name = "root", transfers = [refund])]
    async fn w1_root(_cx: &AgentContext) -> W1RootTransfer {
        W1RootTransfer::Refund
    }

    #[agent(name = "refund")]
    async fn w1_refund(cx: &AgentContext) {
        cx.say(super::ANSWER);
    }

    #[agent(name = "complaint")]
    async fn w1_complaint(cx: &AgentContext) {
        cx.say(super::ANSWER);
    }

    flow! {
        /// W1 as a flow.
        pub W1Dsl: w1_root => [w1_refund, w1_complaint]
    }

    /// The built tree.
    pub fn w1_tree() -> FlowAgent {
        W1Dsl::new().expect("valid flow").into_flow()
    }
}
