//! Context budgets: a ChatModelAgent whose requests must stay under a token budget compacts its
//! oldest messages into a summary recorded once, keeps facts through the summary, never splits
//! a tool call from its result, survives a new runner on the same store, leaves the history
//! untouched when its summarizer fails, and sets large tool results aside for the model to
//! read back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentweave_runtime::history::{estimate_tokens, CompactionRecord, ContextBudget};
use agentweave_runtime::model::{ChatModel, ChatRequest, ModelError};
use agentweave_runtime::TurnRequest;
use agentweave_runtime::{
    tool_fn, AgentError, ChatAgentError, ChatModelAgent, FlowAgent, InMemoryStore, Message,
    MessageRef, Role, Runner, ThreadStore, ToolCall, Usage,
};
use async_trait::async_trait;
use futures::StreamExt;

const BUDGET: usize = 400;

/// A model that checks every request against the budget and the call/result pairing, and
/// answers: a lookup when the user asks for one, `done` after a tool result, `ok` otherwise.
#[derive(Default)]
struct Checked {
    /// When not 0: the model's tokenizer takes this many tokens per estimated one, and each
    /// reply reports the request's prompt tokens so counted (0: no usage reported).
    factor: usize,
    /// Records requests over the budget instead of failing on them.
    lenient: bool,
    calls: AtomicUsize,
    /// The largest request seen, in the model's tokens.
    largest: AtomicUsize,
    /// The last request.
    last: Mutex<Vec<MessageRef>>,
}

fn request_tokens(request: &ChatRequest) -> usize {
    let tools: usize = request
        .tools
        .iter()
        .map(|d| {
            (d.name.len() + d.description.len() + d.parameters.to_string().len()).div_ceil(4) + 8
        })
        .sum();
    tools
        + request
            .messages
            .iter()
            .map(|m| estimate_tokens(m))
            .sum::<usize>()
}

#[async_trait]
impl ChatModel for Checked {
    fn model_name(&self) -> &str {
        "checked"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let tokens = request_tokens(request) * self.factor.max(1);
        self.largest.fetch_max(tokens, Ordering::SeqCst);
        assert!(
            self.lenient || tokens <= BUDGET,
            "request {n} takes {tokens} tokens, over the budget of {BUDGET}"
        );
        // No tool result without its call before it.
        for (i, m) in request.messages.iter().enumerate() {
            if m.role == Role::Tool {
                let id = m.tool_call_id.as_deref().unwrap();
                assert!(
                    request.messages[..i]
                        .iter()
                        .any(|c| c.tool_calls.iter().any(|call| call.id == id)),
                    "request {n}: the result of call {id} came without its call"
                );
            }
        }
        *self.last.lock().unwrap() = request.messages.clone();
        let last = request.messages.last().unwrap();
        let mut reply = self.answer(n, last);
        if self.factor > 0 {
            reply.usage = Some(Box::new(Usage::new(tokens as u64, 1)));
        }
        Ok(reply)
    }
}

impl Checked {
    /// A model whose tokenizer takes `factor` tokens per estimated one, and says so.
    fn reporting(factor: usize) -> Self {
        Checked {
            factor,
            ..Checked::default()
        }
    }

    fn answer(&self, n: usize, last: &Message) -> Message {
        match last.role {
            Role::Tool => Message::assistant("done"),
            _ if last.content.contains("look up") => {
                let mut m = Message::assistant("");
                m.tool_calls.push(ToolCall::new(
                    format!("call-{n}"),
                    "lookup",
                    r#"{"what":"order"}"#,
                ));
                m
            }
            _ => Message::assistant("ok"),
        }
    }
}

/// A summarizer that keeps every `fact:` line of what it summarises (the previous summary
/// included), and counts its calls.
fn fact_keeper(calls: Arc<AtomicUsize>) -> ContextBudget {
    ContextBudget::new(BUDGET, move |_agent: &str, older: &[MessageRef]| {
        calls.fetch_add(1, Ordering::SeqCst);
        let mut facts: Vec<String> = Vec::new();
        for m in older {
            for part in m.content.split(';') {
                if let Some(at) = part.find("fact:") {
                    let fact = part[at..].trim().to_owned();
                    if !facts.contains(&fact) {
                        facts.push(fact);
                    }
                }
            }
        }
        Ok(facts.join("; "))
    })
    .keep_tokens(150)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// What to look up.
    #[allow(dead_code)]
    what: String,
}

fn clerk(model: Arc<Checked>, budget: ContextBudget) -> FlowAgent {
    let agent = ChatModelAgent::builder_with_arc("clerk", model)
        .instruction("You are a clerk.")
        .tool(tool_fn(
            "lookup",
            "Looks something up.",
            |_: Lookup| async move { Ok::<_, String>("found it".to_owned()) },
        ))
        .context_budget(budget)
        .build()
        .unwrap();
    FlowAgent::new(agent)
}

/// The user's message of turn `i`: a fact every 50 turns, a lookup every 7, filler otherwise.
fn said(i: usize) -> String {
    if i % 50 == 3 {
        format!("fact: the code of week {i} is K{}", i * 7)
    } else if i % 7 == 0 {
        format!("turn {i}: please look up my order")
    } else {
        format!("turn {i}: some small talk that does not matter much at all")
    }
}

async fn run_turns(runner: &Runner, range: std::ops::Range<usize>) {
    for i in range {
        let mut turn = runner
            .turn(TurnRequest::new("long", Message::user(said(i))))
            .await
            .unwrap();
        while let Some(e) = turn.next().await {
            assert!(e.error.is_none(), "turn {i}: {:?}", e.error);
        }
    }
}

#[tokio::test]
async fn a_500_turn_thread_stays_under_its_budget_and_keeps_its_facts() {
    let store = InMemoryStore::new();
    let summaries = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(Checked::default());
    let runner = Runner::builder(clerk(
        Arc::clone(&model),
        fact_keeper(Arc::clone(&summaries)),
    ))
    .stores(store.clone())
    .build();
    run_turns(&runner, 0..250).await;

    // A new runner (a new process, as far as the thread knows) on the same store goes on from
    // the recorded summary: its first request starts from it, without summarising again.
    let summaries_after = Arc::new(AtomicUsize::new(0));
    let second = Arc::new(Checked::default());
    let runner = Runner::builder(clerk(
        Arc::clone(&second),
        fact_keeper(Arc::clone(&summaries_after)),
    ))
    .stores(store.clone())
    .build();
    run_turns(&runner, 250..251).await;
    let first_request = second.last.lock().unwrap().clone();
    assert!(
        first_request[1]
            .content
            .starts_with("Summary of the earlier conversation"),
        "{:?}",
        first_request[1]
    );
    assert!(first_request[1]
        .content
        .contains("fact: the code of week 203 is K1421"));
    run_turns(&runner, 251..500).await;

    let calls = model.calls.load(Ordering::SeqCst) + second.calls.load(Ordering::SeqCst);
    let made = summaries.load(Ordering::SeqCst) + summaries_after.load(Ordering::SeqCst);
    // 500 turns, two model calls for each lookup.
    let lookups = (0..500).filter(|i| said(*i).contains("look up")).count();
    assert_eq!(calls, 500 + lookups);
    assert!(model.largest.load(Ordering::SeqCst) <= BUDGET);
    // Summaries are written once and reused: far fewer than model calls.
    println!(
        "{made} summaries for {calls} calls; largest request {} tokens",
        model.largest.load(Ordering::SeqCst)
    );
    assert!(
        made > 10 && made < calls / 4,
        "{made} summaries for {calls} calls"
    );

    // Every fact of the thread survives in the summary the last request starts from.
    let last = second.last.lock().unwrap().clone();
    let summary = &last[1].content;
    for i in (0..500).filter(|i| i % 50 == 3) {
        let fact = format!("fact: the code of week {i} is K{}", i * 7);
        assert!(summary.contains(&fact), "lost {fact:?}: {summary}");
    }

    // The summaries are in the thread's record, each once, marked as compactions.
    let records = store.read("long", 0..500).await.unwrap();
    let recorded = records
        .iter()
        .flat_map(|r| &r.events)
        .filter(|e| e.action.as_ref().and_then(CompactionRecord::of).is_some())
        .count();
    assert_eq!(recorded, made);
}

#[tokio::test]
async fn a_failing_summarizer_leaves_the_history_untouched_and_says_so() {
    let store = InMemoryStore::new();
    let model = Arc::new(Checked::default());
    let failing = ContextBudget::new(BUDGET, |_: &str, _: &[MessageRef]| {
        Err::<String, _>("the summary model is down".to_owned())
    });
    let runner = Runner::builder(clerk(Arc::clone(&model), failing))
        .stores(store.clone())
        .build();
    let mut failed = None;
    for i in 0..100 {
        let mut turn = runner
            .turn(TurnRequest::new("t", Message::user(said(i))))
            .await
            .unwrap();
        while let Some(e) = turn.next().await {
            if let Some(error) = &e.error {
                failed = Some((i, error.clone()));
            }
        }
        if failed.is_some() {
            break;
        }
    }
    let (at, error) = failed.expect("the budget was exceeded at some turn");
    let AgentError::ChatAgent { .. } = &error else {
        panic!("{error:?}")
    };
    let Some(ChatAgentError::Context { agent, message }) = error.chat_agent_error() else {
        panic!("{error:?}")
    };
    assert_eq!(&**agent, "clerk");
    assert!(message.contains("the summarizer failed: the summary model is down"));
    assert!(message.contains("the conversation was left as it was"));
    // Nothing was compacted: every earlier message is still in the thread, no summary is.
    let records = store.read("t", 0..at as u64 + 1).await.unwrap();
    assert!(records.iter().flat_map(|r| &r.events).all(|e| e
        .action
        .as_ref()
        .and_then(CompactionRecord::of)
        .is_none()));
    let users = records.iter().filter(|r| r.turn < at as u64).count();
    assert_eq!(users, at);

    // With a working summarizer the same thread goes on.
    let summaries = Arc::new(AtomicUsize::new(0));
    let runner = Runner::builder(clerk(
        Arc::clone(&model),
        fact_keeper(Arc::clone(&summaries)),
    ))
    .stores(store.clone())
    .build();
    let turn = runner
        .turn(TurnRequest::new("t", Message::user("hello again")))
        .await
        .unwrap();
    assert_eq!(turn.final_output().await.unwrap().unwrap().content, "ok");
    assert_eq!(summaries.load(Ordering::SeqCst), 1);
}

/// Reads a long result back through `read_tool_result` once it sees the stub.
struct Reader {
    seen: Mutex<Vec<Vec<MessageRef>>>,
}

#[async_trait]
impl ChatModel for Reader {
    fn model_name(&self) -> &str {
        "reader"
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        self.seen.lock().unwrap().push(request.messages.clone());
        let last = request.messages.last().unwrap();
        let call = |id: &str, name: &str, args: String| {
            let mut m = Message::assistant("");
            m.tool_calls.push(ToolCall::new(id, name, args));
            m
        };
        Ok(match last.role {
            Role::User => call("c1", "report", "{}".into()),
            Role::Tool if last.content.starts_with("[tool result set aside") => call(
                "c2",
                agentweave_runtime::READ_TOOL_RESULT_TOOL_NAME,
                serde_json::json!({"handle": "c1", "offset": 1000}).to_string(),
            ),
            _ => Message::assistant(last.content.lines().nth(1).unwrap_or("").to_owned()),
        })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[tokio::test]
async fn a_large_tool_result_is_set_aside_and_read_back_on_demand() {
    let report: String = (0..500)
        .map(|i| format!("row {i:04} of the report\n"))
        .collect();
    let whole = report.clone();
    let model = Arc::new(Reader {
        seen: Mutex::default(),
    });
    let budget = ContextBudget::new(2_000, |_: &str, _: &[MessageRef]| {
        Err::<String, _>("never needed".to_owned())
    })
    .set_aside_tool_results_over(100);
    let agent =
        ChatModelAgent::builder_with_arc("analyst", Arc::clone(&model) as Arc<dyn ChatModel>)
            .tool(tool_fn("report", "The report.", move |_: NoArgs| {
                let report = report.clone();
                async move { Ok::<_, String>(report) }
            }))
            .context_budget(budget)
            .build()
            .unwrap();
    let events: Vec<_> = Runner::new(FlowAgent::new(agent))
        .run("What is in the report?")
        .collect()
        .await;
    assert!(events.iter().all(|e| e.error.is_none()));
    // The model saw a stub with the handle, not the 12,500 characters.
    let seen = model.seen.lock().unwrap();
    let stub = &seen[1].last().unwrap().content;
    assert!(stub.contains("handle \"c1\""), "{stub}");
    assert!(stub.len() < 600, "{} characters", stub.len());
    // The page it read back starts where it asked, and says how to read on.
    let page = &seen[2].last().unwrap().content;
    assert!(page.starts_with("[characters 1000.."), "{page}");
    assert!(page.contains("read on with offset"), "{page}");
    let answer = events.last().unwrap().message_output().unwrap();
    assert_eq!(answer.content, whole[1000..].lines().next().unwrap());
    // The record keeps the whole result.
    let recorded = events
        .iter()
        .filter_map(|e| e.message_output())
        .find(|m| m.tool_call_id.as_deref() == Some("c1"))
        .unwrap();
    assert_eq!(recorded.content, whole);
}

/// Runs turns `range` on thread `thread`, and returns the turn of the first compaction.
async fn first_compaction(runner: &Runner, thread: &str, summaries: &AtomicUsize) -> usize {
    for i in 0..200 {
        let mut turn = runner
            .turn(TurnRequest::new(thread, Message::user(said(i))))
            .await
            .unwrap();
        while let Some(e) = turn.next().await {
            assert!(e.error.is_none(), "turn {i}: {:?}", e.error);
        }
        if summaries.load(Ordering::SeqCst) > 0 {
            return i;
        }
    }
    panic!("no compaction in 200 turns")
}

#[tokio::test]
async fn usage_larger_than_the_estimate_makes_compaction_start_earlier_and_holds_the_budget() {
    // The same thread on a model that reports no usage (the estimate is all the budget
    // knows) and on one whose tokenizer takes twice the estimate and reports it.
    let estimated = Arc::new(AtomicUsize::new(0));
    let silent = Arc::new(Checked::default());
    let runner = Runner::builder(clerk(
        Arc::clone(&silent),
        fact_keeper(Arc::clone(&estimated)),
    ))
    .stores(InMemoryStore::new())
    .build();
    let by_estimate = first_compaction(&runner, "t", &estimated).await;

    let counted = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(Checked::reporting(2));
    let store = InMemoryStore::new();
    let runner = Runner::builder(clerk(Arc::clone(&model), fact_keeper(Arc::clone(&counted))))
        .stores(store.clone())
        .build();
    let by_usage = first_compaction(&runner, "t", &counted).await;
    println!("first compaction at turn {by_usage} by usage, {by_estimate} by estimate");
    assert!(
        by_usage < by_estimate * 2 / 3,
        "compaction started at turn {by_usage} from the reported usage, {by_estimate} from the \
         estimate"
    );
    // Every request, as the model counts it, stayed within the budget (the model checks each
    // one); the thread goes on compacting for many turns.
    run_turns(&runner, by_usage + 1..150).await;
    assert!(counted.load(Ordering::SeqCst) > 5);
    let largest = model.largest.load(Ordering::SeqCst);
    assert!(largest <= BUDGET, "largest request {largest} tokens");
    // It gets close to the budget: the calibration does not just halve everything blindly.
    assert!(largest > BUDGET * 3 / 4, "largest request {largest} tokens");

    // A new runner (a new process) on the same store has made no call yet: it starts from
    // the usage recorded on the agent's last reply, so its very first requests hold too
    // (uncalibrated, it would send up to twice the budget before learning).
    let second = Arc::new(Checked::reporting(2));
    let runner = Runner::builder(clerk(
        Arc::clone(&second),
        fact_keeper(Arc::new(AtomicUsize::new(0))),
    ))
    .stores(store.clone())
    .build();
    // Its first message is long: uncalibrated, the request would pass the estimate's count
    // and reach the model over the budget.
    let long = format!(
        "turn 150: {}",
        "a long message that goes on and on; ".repeat(7)
    );
    let mut turn = runner
        .turn(TurnRequest::new("t", Message::user(long)))
        .await
        .unwrap();
    while let Some(e) = turn.next().await {
        assert!(e.error.is_none(), "{:?}", e.error);
    }
    run_turns(&runner, 151..200).await;
    assert!(second.largest.load(Ordering::SeqCst) <= BUDGET);

    // Turned off, the budget counts the estimate alone: the model sees requests over it.
    let off = Arc::new(Checked {
        lenient: true,
        ..Checked::reporting(2)
    });
    let budget = fact_keeper(Arc::new(AtomicUsize::new(0))).calibrate_from_usage(false);
    let runner = Runner::builder(clerk(Arc::clone(&off), budget))
        .stores(InMemoryStore::new())
        .build();
    run_turns(&runner, 0..100).await;
    let largest = off.largest.load(Ordering::SeqCst);
    assert!(largest > BUDGET, "largest request {largest} tokens");
}

/// With OpenAI's tokenizer as the counter, a budget holds as that tokenizer counts from the
/// first request, on a model that reports no usage at all.
#[cfg(feature = "tiktoken")]
#[tokio::test]
async fn a_tiktoken_counter_holds_the_budget_without_any_reported_usage() {
    use agentweave_runtime::history::{TiktokenCounter, TokenCounter};

    struct Counted {
        counter: TiktokenCounter,
        largest: AtomicUsize,
    }

    #[async_trait]
    impl ChatModel for Counted {
        fn model_name(&self) -> &str {
            "gpt-4o"
        }

        async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
            let messages: usize = request.messages.iter().map(|m| self.counter.count(m)).sum();
            self.largest.fetch_max(messages, Ordering::SeqCst);
            Ok(Message::assistant("ok"))
        }
    }

    let counter = TiktokenCounter::for_model("gpt-4o").unwrap();
    assert_eq!(counter.encoding(), "o200k_base");
    assert!(TiktokenCounter::for_model("claude-sonnet-4")
        .unwrap_err()
        .to_string()
        .contains("no OpenAI tokenizer is known for the model 'claude-sonnet-4'"));
    let model = Arc::new(Counted {
        counter,
        largest: AtomicUsize::new(0),
    });
    let summaries = Arc::new(AtomicUsize::new(0));
    let made = Arc::clone(&summaries);
    let budget = ContextBudget::new(BUDGET, move |_: &str, older: &[MessageRef]| {
        made.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(format!("{} earlier messages.", older.len()))
    })
    .counter(counter);
    let agent = ChatModelAgent::builder_with_arc("clerk", Arc::clone(&model) as Arc<dyn ChatModel>)
        .context_budget(budget)
        .build()
        .unwrap();
    let runner = Runner::builder(FlowAgent::new(agent))
        .stores(InMemoryStore::new())
        .build();
    // Text in another script, where the estimate's 4 bytes a token does not hold.
    for i in 0..80 {
        let text = format!("turn {i}: 東京の注文番号 {i} について、返金をお願いします。");
        let mut turn = runner
            .turn(TurnRequest::new("t", Message::user(text)))
            .await
            .unwrap();
        while let Some(e) = turn.next().await {
            assert!(e.error.is_none(), "turn {i}: {:?}", e.error);
        }
    }
    assert!(summaries.load(Ordering::SeqCst) > 0);
    let largest = model.largest.load(Ordering::SeqCst);
    assert!(largest <= BUDGET, "largest request {largest} tokens");
}
