//! [`ScriptedModel`]: a deterministic, offline chat model for examples and tests.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;

use super::{ChatModel, ChatRequest, ModelError, ModelStream, Usage};
use crate::message::{Message, Role, ToolCall};
use crate::transfer::TRANSFER_TOOL_NAME;

/// One answer of a [`ScriptedModel`]: a reply, or a failure.
///
/// Tool calls built here have an empty id; the model fills it in as `call_{turn}_{k}` (turn:
/// 1 + the number of assistant messages in the request, k: 1-based position in the reply), so
/// ids are unique in a conversation and the same on every run.
///
/// ```
/// use agentweave_runtime::model::ScriptStep;
/// use serde_json::json;
/// let step = ScriptStep::tool_call("lookup_order", json!({"order_id": 42}));
/// # let _ = step;
/// ```
#[derive(Debug, Clone)]
pub enum ScriptStep {
    /// Answer with this assistant message.
    Reply(Message),
    /// Fail the call with this error (before any chunk, when streaming).
    Fail(ModelError),
    /// Reply, but when streaming, fail with `error` after the first `after_chunks` chunks.
    /// Generating (not streaming) fails with `error` at once.
    FailMidStream {
        /// The reply whose chunks are streamed before the failure.
        reply: Message,
        /// How many chunks get through.
        after_chunks: usize,
        /// The failure.
        error: ModelError,
    },
}

impl ScriptStep {
    /// A plain text answer.
    pub fn text(content: impl Into<String>) -> Self {
        ScriptStep::Reply(Message::assistant(content))
    }

    /// An answer calling one tool with the given arguments.
    pub fn tool_call(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self::tool_calls([(name, arguments)])
    }

    /// An answer calling several tools, in this order.
    pub fn tool_calls<N: Into<String>>(
        calls: impl IntoIterator<Item = (N, serde_json::Value)>,
    ) -> Self {
        let calls = calls
            .into_iter()
            .map(|(name, args)| ToolCall::new("", name, args.to_string()))
            .collect();
        ScriptStep::Reply(Message::assistant_tool_calls("", calls))
    }

    /// An answer calling a tool with raw argument text (which need not be valid JSON).
    pub fn raw_tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ScriptStep::Reply(Message::assistant_tool_calls(
            "",
            vec![ToolCall::new("", name, arguments)],
        ))
    }

    /// An answer calling `transfer_to_agent` with `{"agent_name": target}`.
    pub fn transfer(target: &str) -> Self {
        Self::tool_call(
            TRANSFER_TOOL_NAME,
            serde_json::json!({ "agent_name": target }),
        )
    }

    /// An answer calling the `exit` tool with `{"final_result": result}`.
    pub fn exit(result: &str) -> Self {
        Self::tool_call("exit", serde_json::json!({ "final_result": result }))
    }

    /// This reply reporting `usage` (when streamed, in a last chunk of its own, as servers
    /// send it). A failure reports none, so it is left as it is.
    ///
    /// ```
    /// use agentweave_runtime::model::{ScriptStep, Usage};
    /// let step = ScriptStep::text("Done.").with_usage(Usage::new(40, 2));
    /// # let _ = step;
    /// ```
    pub fn with_usage(self, usage: Usage) -> Self {
        match self {
            ScriptStep::Reply(mut reply) => {
                reply.usage = Some(Box::new(usage));
                ScriptStep::Reply(reply)
            }
            ScriptStep::FailMidStream {
                mut reply,
                after_chunks,
                error,
            } => {
                reply.usage = Some(Box::new(usage));
                ScriptStep::FailMidStream {
                    reply,
                    after_chunks,
                    error,
                }
            }
            fail @ ScriptStep::Fail(_) => fail,
        }
    }

    /// A failure.
    pub fn fail(error: ModelError) -> Self {
        ScriptStep::Fail(error)
    }

    /// This reply, failing with `error` after `after_chunks` chunks when streamed.
    pub fn fail_mid_stream(self, after_chunks: usize, error: ModelError) -> Self {
        match self {
            ScriptStep::Reply(reply) | ScriptStep::FailMidStream { reply, .. } => {
                ScriptStep::FailMidStream {
                    reply,
                    after_chunks,
                    error,
                }
            }
            ScriptStep::Fail(_) => ScriptStep::Fail(error),
        }
    }
}

impl From<Message> for ScriptStep {
    fn from(message: Message) -> Self {
        ScriptStep::Reply(message)
    }
}

impl From<&str> for ScriptStep {
    fn from(text: &str) -> Self {
        ScriptStep::text(text)
    }
}

type Predicate = dyn Fn(&ChatRequest) -> bool + Send + Sync;

type StepFn = dyn Fn(&ChatRequest) -> ScriptStep + Send + Sync;

/// What a rule answers: a fixed step, or one computed from the request.
enum Then {
    Step(ScriptStep),
    Computed(Box<StepFn>),
}

impl Then {
    fn step(&self, request: &ChatRequest) -> ScriptStep {
        match self {
            Then::Step(step) => step.clone(),
            Then::Computed(f) => f(request),
        }
    }
}

struct Rule {
    when: Box<Predicate>,
    then: Then,
}

enum Source {
    /// Steps in order, one per call.
    Script(Vec<ScriptStep>),
    /// First matching rule wins.
    Rules {
        rules: Vec<Rule>,
        /// Boxed: a step holds a whole message, and most models are scripts.
        otherwise: Option<Box<Then>>,
    },
}

struct Inner {
    source: Source,
    log: Mutex<Vec<ChatRequest>>,
    /// Calls received, logged or not.
    calls: AtomicUsize,
}

/// A chat model that answers from a script, with no network: the default for examples and
/// tests.
///
/// Two kinds of script:
/// - [`ScriptedModel::new`]: a list of steps, one per call, in order (shared by all runs of the
///   model; when it runs out, calls fail with [`ModelError::ScriptExhausted`]);
/// - [`ScriptedModel::rules`]: rules looked at on every call, the first match answers
///   (stateless, so concurrent runs each get the same answers).
///
/// When asked to stream, the reply comes in chunks: the content word by word (each chunk a
/// run of spaces and a word), then each tool call in two chunks carrying the call's `index`
/// (id and name with the first half of the arguments, then the rest), then, if the step
/// reports [usage](ScriptStep::with_usage), a last chunk carrying only that.
///
/// A clone shares the script and the log of requests ([`requests`](ScriptedModel::requests)),
/// so a test can keep one to look at what the agent asked.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_runtime::model::{ChatModel, ChatRequest, ScriptStep, ScriptedModel};
/// use agentweave_runtime::Message;
/// use std::sync::Arc;
///
/// let model = ScriptedModel::rules()
///     .when_last_user_contains("refund", ScriptStep::transfer("refund"))
///     .otherwise(ScriptStep::text("How can I help?"))
///     .named("triage-model");
/// let ask = |text: &str| ChatRequest::new([Arc::new(Message::user(text))]);
/// let reply = model.generate(&ask("I want a refund")).await.unwrap();
/// assert_eq!(reply.tool_calls[0].name, "transfer_to_agent");
/// assert_eq!(reply.tool_calls[0].arguments, r#"{"agent_name":"refund"}"#);
/// assert_eq!(reply.tool_calls[0].id, "call_1_1");
/// let reply = model.generate(&ask("hello")).await.unwrap();
/// assert_eq!(reply.content, "How can I help?");
/// assert_eq!(model.requests().len(), 2);
/// # });
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    name: Arc<str>,
    inner: Arc<Inner>,
    keep_requests: bool,
}

impl ScriptedModel {
    /// A model answering call `n` with step `n` of `steps`.
    pub fn new(steps: impl IntoIterator<Item = impl Into<ScriptStep>>) -> Self {
        Self::from_source(Source::Script(steps.into_iter().map(Into::into).collect()))
    }

    /// A model answering by rules; add them with the returned builder.
    pub fn rules() -> ScriptRules {
        ScriptRules {
            rules: Vec::new(),
            otherwise: None,
        }
    }

    fn from_source(source: Source) -> Self {
        ScriptedModel {
            name: Arc::from("scripted"),
            inner: Arc::new(Inner {
                source,
                log: Mutex::new(Vec::new()),
                calls: AtomicUsize::new(0),
            }),
            keep_requests: true,
        }
    }

    /// Whether this handle logs the requests it answers (on by default). Turn it off for
    /// long-running loops (benchmarks, soak tests), where the log would grow without end;
    /// [`calls`](ScriptedModel::calls) still counts them.
    pub fn keep_requests(mut self, keep: bool) -> Self {
        self.keep_requests = keep;
        self
    }

    /// This model under another name (errors name it); it shares script and log with `self`.
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// Every request this model (and its clones) received, in order (those answered by a
    /// handle with [`keep_requests(false)`](ScriptedModel::keep_requests) are left out).
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.inner.log.lock().expect("scripted model log").clone()
    }

    /// How many calls this model (and its clones) received.
    pub fn calls(&self) -> usize {
        self.inner.calls.load(Ordering::Relaxed)
    }

    /// Logs the request and picks the step that answers it.
    fn answer(&self, request: &ChatRequest) -> Result<ScriptStep, ModelError> {
        let mut log = self
            .keep_requests
            .then(|| self.inner.log.lock().expect("scripted model log"));
        if let Some(log) = log.as_mut() {
            log.push(request.clone());
        }
        // Counted while the log is held, so call numbers follow the log's order.
        let call = self.inner.calls.fetch_add(1, Ordering::Relaxed) + 1;
        drop(log);
        let step = match &self.inner.source {
            Source::Script(steps) => {
                steps
                    .get(call - 1)
                    .cloned()
                    .ok_or_else(|| ModelError::ScriptExhausted {
                        model: Arc::clone(&self.name),
                        call,
                        message: format!("the script has {} step(s)", steps.len()).into(),
                    })?
            }
            Source::Rules { rules, otherwise } => rules
                .iter()
                .find(|r| (r.when)(request))
                .map(|r| r.then.step(request))
                .or_else(|| otherwise.as_ref().map(|t| t.step(request)))
                .ok_or_else(|| ModelError::ScriptExhausted {
                    model: Arc::clone(&self.name),
                    call,
                    message: "no rule matched and there is no `otherwise` step".into(),
                })?,
        };
        // Ids filled in place: the reply is not moved again.
        let mut step = step;
        match &mut step {
            ScriptStep::Reply(reply) | ScriptStep::FailMidStream { reply, .. } => {
                fill_ids(reply, request)
            }
            ScriptStep::Fail(_) => {}
        }
        Ok(step)
    }
}

/// Fills in empty tool-call ids as `call_{turn}_{k}`.
fn fill_ids(reply: &mut Message, request: &ChatRequest) {
    let turn = 1 + request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    for (k, call) in reply.tool_calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            // `call_{turn}_{k}`, written without `format!` (every scripted call pays it).
            let (mut turn_digits, mut k_digits) = (itoa::Buffer::new(), itoa::Buffer::new());
            let (turn, k) = (turn_digits.format(turn), k_digits.format(k + 1));
            let mut id = String::with_capacity(6 + turn.len() + k.len());
            id.push_str("call_");
            id.push_str(turn);
            id.push('_');
            id.push_str(k);
            call.id = id;
        }
    }
}

/// Splits a reply into stream chunks: words of the content, then two chunks per tool call.
#[cfg(test)]
pub(crate) fn chunks_of(reply: &Message) -> Vec<Message> {
    Chunks::new(reply.clone()).collect()
}

/// The stream chunks of a reply, made one at a time as the stream is read (as a model client
/// would), not all up front: each chunk of the content is a run of whitespace and the word
/// after it; then each tool call comes in two chunks carrying its `index` (id and name with
/// the first half of the arguments, then the rest). A reply with neither is one empty chunk.
struct Chunks {
    reply: Message,
    /// Byte offset of the content not yet sent.
    text_at: usize,
    /// The next tool call to send, and whether its first half is out already.
    call: usize,
    second_half: bool,
    sent_any: bool,
}

impl Chunks {
    fn new(reply: Message) -> Self {
        Chunks {
            reply,
            text_at: 0,
            call: 0,
            second_half: false,
            sent_any: false,
        }
    }

    /// Sends nothing more.
    fn stop(&mut self) {
        self.text_at = self.reply.content.len();
        self.call = self.reply.tool_calls.len();
        self.second_half = false;
        self.sent_any = true;
        self.reply.usage = None;
    }

    /// The usage chunk, last (once).
    fn next_usage(&mut self) -> Option<Message> {
        let usage = self.reply.usage.take()?;
        self.sent_any = true;
        Some(Message {
            usage: Some(usage),
            ..Message::assistant("")
        })
    }

    #[inline]
    fn next_text(&mut self) -> Option<Message> {
        let rest = &self.reply.content[self.text_at..];
        // A chunk ends where whitespace follows a word (ASCII is looked at byte by byte).
        let bytes = rest.as_bytes();
        let mut in_word = false;
        let mut end = 0;
        while end < bytes.len() {
            let (space, width) = match bytes[end] {
                b if b.is_ascii() => (matches!(b, b' ' | b'\t'..=b'\r'), 1),
                _ => {
                    let c = rest[end..].chars().next().expect("a char starts here");
                    (c.is_whitespace(), c.len_utf8())
                }
            };
            if space && in_word {
                break;
            }
            in_word |= !space;
            end += width;
        }
        if end == 0 {
            return None;
        }
        self.text_at += end;
        Some(Message::assistant(&rest[..end]))
    }

    fn next_call(&mut self) -> Option<Message> {
        let (index, call) = (self.call, self.reply.tool_calls.get(self.call)?);
        let args = call.arguments.as_str();
        let half = args
            .char_indices()
            .map(|(i, _)| i)
            .nth(args.chars().count() / 2)
            .unwrap_or(args.len());
        let piece = |id: &str, name: &str, arguments: &str| {
            Message::assistant_tool_calls(
                "",
                vec![ToolCall {
                    index: Some(index),
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: arguments.to_owned(),
                }],
            )
        };
        let chunk = if self.second_half {
            piece("", "", &args[half..])
        } else {
            piece(&call.id, &call.name, &args[..half])
        };
        if self.second_half || half == args.len() {
            self.call += 1;
            self.second_half = false;
        } else {
            self.second_half = true;
        }
        Some(chunk)
    }
}

/// A reply's chunks as a model stream; with `fail` set, it fails with the error after that
/// many chunks (or after the last one, if the reply has fewer) and ends there.
struct ReplyStream {
    chunks: Chunks,
    fail: Option<(usize, ModelError)>,
}

impl futures::Stream for ReplyStream {
    type Item = Result<Message, ModelError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some((left, _)) = &mut this.fail else {
            return std::task::Poll::Ready(this.chunks.next().map(Ok));
        };
        let chunk = match left {
            0 => None,
            left => {
                *left -= 1;
                this.chunks.next()
            }
        };
        std::task::Poll::Ready(match chunk {
            Some(chunk) => Some(Ok(chunk)),
            None => {
                this.chunks.stop();
                this.fail.take().map(|(_, error)| Err(error))
            }
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (low, high) = self.chunks.size_hint();
        match &self.fail {
            Some((left, _)) => ((low.min(*left) + 1), high.map(|h| h.min(*left) + 1)),
            None => (low, high),
        }
    }
}

impl Iterator for Chunks {
    type Item = Message;

    #[inline]
    fn next(&mut self) -> Option<Message> {
        let chunk = self.next_text().or_else(|| self.next_call());
        match chunk {
            Some(chunk) => {
                self.sent_any = true;
                Some(chunk)
            }
            None if !self.sent_any && self.reply.usage.is_none() => {
                self.sent_any = true;
                Some(Message::assistant(""))
            }
            None => self.next_usage(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let text = self.reply.content.len() - self.text_at;
        let calls = 2 * (self.reply.tool_calls.len() - self.call);
        let usage = usize::from(self.reply.usage.is_some());
        let low = usize::from(!self.sent_any || text > 0 || calls > 0 || usage > 0);
        (low, Some(text + calls + usage + 1))
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    async fn generate(&self, request: &ChatRequest) -> Result<Message, ModelError> {
        match self.answer(request)? {
            ScriptStep::Reply(m) => Ok(m),
            ScriptStep::Fail(e) | ScriptStep::FailMidStream { error: e, .. } => Err(e),
        }
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ModelError> {
        let (reply, fail) = match self.answer(request)? {
            ScriptStep::Reply(m) => (m, None),
            ScriptStep::Fail(e) => return Err(e),
            ScriptStep::FailMidStream {
                reply,
                after_chunks,
                error,
            } => (reply, Some((after_chunks, error))),
        };
        Ok(ReplyStream {
            chunks: Chunks::new(reply),
            fail,
        }
        .boxed())
    }
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("name", &self.name)
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

/// Builds a rule-based [`ScriptedModel`]: on each call the rules are tried in the order they
/// were added and the first that matches answers; if none does, the `otherwise` step answers.
///
/// A rule that matches on the user's words keeps matching after a tool call (the user's words
/// are still there): put [`after_tool`](ScriptRules::after_tool) rules first.
pub struct ScriptRules {
    rules: Vec<Rule>,
    otherwise: Option<Then>,
}

impl ScriptRules {
    /// Rules whose fallback answers from `steps` by how many times the model has answered
    /// since the user last spoke (the assistant messages after the request's last user
    /// message): the first call of a turn gets `steps[0]`, the call after its tool results
    /// `steps[1]`, and so on; `after` once the steps run out.
    ///
    /// The answer depends on the request alone, not on what this handle answered before: a
    /// turn replayed, resumed in another process, or run by another worker (Temporal, a
    /// queue's workers) gets the same answers. Add rules before [`build`](Self::build) to
    /// answer some requests otherwise.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agentweave_runtime::model::{ChatModel, ChatRequest, ScriptRules, ScriptStep};
    /// use agentweave_runtime::Message;
    /// use serde_json::json;
    /// # futures::executor::block_on(async {
    /// let model = ScriptRules::per_turn(
    ///     [ScriptStep::tool_call("lookup", json!({})), ScriptStep::text("found it")],
    ///     "anything else?",
    /// )
    /// .build();
    /// let mut messages = vec![Arc::new(Message::user("find my order"))];
    /// let call = model.generate(&ChatRequest::new(messages.clone())).await.unwrap();
    /// assert_eq!(call.tool_calls[0].name, "lookup");
    /// messages.push(Arc::new(call));
    /// let reply = model.generate(&ChatRequest::new(messages.clone())).await.unwrap();
    /// assert_eq!(reply.content, "found it");
    /// messages.push(Arc::new(reply));
    /// let more = model.generate(&ChatRequest::new(messages.clone())).await.unwrap();
    /// assert_eq!(more.content, "anything else?");
    /// // The user speaks again: the steps start over, whatever was answered before.
    /// messages.push(Arc::new(Message::user("and another")));
    /// let again = model.generate(&ChatRequest::new(messages)).await.unwrap();
    /// assert_eq!(again.tool_calls[0].name, "lookup");
    /// # });
    /// ```
    pub fn per_turn(
        steps: impl IntoIterator<Item = impl Into<ScriptStep>>,
        after: impl Into<ScriptStep>,
    ) -> Self {
        let steps: Vec<ScriptStep> = steps.into_iter().map(Into::into).collect();
        let after = after.into();
        let mut rules = ScriptedModel::rules();
        rules.otherwise = Some(Then::Computed(Box::new(move |request: &ChatRequest| {
            let answered = request
                .messages
                .iter()
                .rev()
                .take_while(|m| m.role != Role::User)
                .filter(|m| m.role == Role::Assistant)
                .count();
            steps
                .get(answered)
                .cloned()
                .unwrap_or_else(|| after.clone())
        })));
        rules
    }

    /// Answers `then` when `when` holds for the request.
    pub fn when(
        mut self,
        when: impl Fn(&ChatRequest) -> bool + Send + Sync + 'static,
        then: impl Into<ScriptStep>,
    ) -> Self {
        self.rules.push(Rule {
            when: Box::new(when),
            then: Then::Step(then.into()),
        });
        self
    }

    /// Answers with the step `then` computes from the request when `when` holds for it: an
    /// offline script that echoes what the user said, or counts the turns.
    ///
    /// ```
    /// use agentweave_runtime::model::{ChatModel, ChatRequest, ScriptStep, ScriptedModel};
    /// use agentweave_runtime::Message;
    /// # futures::executor::block_on(async {
    /// let echo = ScriptedModel::rules()
    ///     .when_with(
    ///         |_| true,
    ///         |r| {
    ///             let said = r.last_user_message().map_or("", |m| m.content.as_str());
    ///             ScriptStep::text(format!("You said: {said}"))
    ///         },
    ///     )
    ///     .build();
    /// let request = ChatRequest::new(vec![std::sync::Arc::new(Message::user("hello"))]);
    /// let reply = echo.generate(&request).await.unwrap();
    /// assert_eq!(reply.content, "You said: hello");
    /// # });
    /// ```
    pub fn when_with(
        mut self,
        when: impl Fn(&ChatRequest) -> bool + Send + Sync + 'static,
        then: impl Fn(&ChatRequest) -> ScriptStep + Send + Sync + 'static,
    ) -> Self {
        self.rules.push(Rule {
            when: Box::new(when),
            then: Then::Computed(Box::new(then)),
        });
        self
    }

    /// Answers with the step `then` computes from the request when no rule matches, and
    /// builds the model (named `scripted`).
    pub fn otherwise_with(
        mut self,
        then: impl Fn(&ChatRequest) -> ScriptStep + Send + Sync + 'static,
    ) -> ScriptedModel {
        self.otherwise = Some(Then::Computed(Box::new(then)));
        self.build()
    }

    /// Answers `then` when the last user-role message (the user's words, or another agent's
    /// words rewritten as context) contains `keyword`, ignoring case.
    pub fn when_last_user_contains(self, keyword: &str, then: impl Into<ScriptStep>) -> Self {
        let keyword = keyword.to_lowercase();
        self.when(
            move |r| {
                r.last_user_message()
                    .is_some_and(|m| m.content.to_lowercase().contains(&keyword))
            },
            then,
        )
    }

    /// Answers `then` when any user-role message contains `keyword`, ignoring case.
    pub fn when_any_user_contains(self, keyword: &str, then: impl Into<ScriptStep>) -> Self {
        let keyword = keyword.to_lowercase();
        self.when(
            move |r| {
                r.messages
                    .iter()
                    .any(|m| m.role == Role::User && m.content.to_lowercase().contains(&keyword))
            },
            then,
        )
    }

    /// Answers `then` when the last message is a result of the tool `tool_name`.
    pub fn after_tool(self, tool_name: &str, then: impl Into<ScriptStep>) -> Self {
        let tool_name = tool_name.to_owned();
        self.when(
            move |r| {
                r.messages.last().is_some_and(|m| {
                    m.role == Role::Tool && m.tool_name.as_deref() == Some(tool_name.as_str())
                })
            },
            then,
        )
    }

    /// Answers `then` when no rule matches, and builds the model (named `scripted`).
    pub fn otherwise(mut self, then: impl Into<ScriptStep>) -> ScriptedModel {
        self.otherwise = Some(Then::Step(then.into()));
        self.build()
    }

    /// Builds the model with no fallback: a call no rule matches fails.
    pub fn build(self) -> ScriptedModel {
        ScriptedModel::from_source(Source::Rules {
            rules: self.rules,
            otherwise: self.otherwise.map(Box::new),
        })
    }
}

impl fmt::Debug for ScriptRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptRules")
            .field("rules", &self.rules.len())
            .field("otherwise", &self.otherwise.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_words_and_tool_calls_and_concat_back() {
        let reply = Message::assistant_tool_calls(
            "Let me  check.",
            vec![
                ToolCall::new("c1", "lookup", r#"{"id":7}"#),
                ToolCall::new("c2", "ping", ""),
            ],
        );
        let chunks = chunks_of(&reply);
        let texts: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
        assert_eq!(texts, ["Let", " me", "  check.", "", "", ""]);
        let args: Vec<(Option<usize>, &str, &str)> = chunks
            .iter()
            .flat_map(|c| &c.tool_calls)
            .map(|t| (t.index, t.id.as_str(), t.arguments.as_str()))
            .collect();
        assert_eq!(
            args,
            [
                (Some(0), "c1", "{\"id"),
                (Some(0), "", "\":7}"),
                (Some(1), "c2", "")
            ]
        );
        let whole = Message::concat(&chunks);
        assert_eq!(whole.content, "Let me  check.");
        assert_eq!(whole.role, Role::Assistant);
        let calls: Vec<(&str, &str, &str)> = whole
            .tool_calls
            .iter()
            .map(|t| (t.id.as_str(), t.name.as_str(), t.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("c1", "lookup", r#"{"id":7}"#), ("c2", "ping", "")]);
    }

    #[test]
    fn the_stream_makes_its_chunks_as_it_is_read_and_fails_where_told() {
        use futures::executor::block_on;

        let reply = Message::assistant_tool_calls(
            " Hé  said:\u{2003}ok\t",
            vec![ToolCall::new("c1", "lookup", r#"{"id":7}"#)],
        );
        let texts: Vec<String> = chunks_of(&reply).into_iter().map(|c| c.content).collect();
        assert_eq!(texts, [" Hé", "  said:", "\u{2003}ok", "\t", "", ""]);
        assert_eq!(chunks_of(&Message::assistant("")).len(), 1);

        let request = ChatRequest::new([]);
        let model = ScriptedModel::new([
            ScriptStep::Reply(reply.clone()),
            ScriptStep::Reply(reply.clone())
                .fail_mid_stream(2, ModelError::other("m", "cut", true)),
            ScriptStep::Reply(reply.clone())
                .fail_mid_stream(9, ModelError::other("m", "late", true)),
        ]);
        let run = |model: &ScriptedModel| -> Vec<Result<String, String>> {
            let stream = block_on(model.stream(&request)).unwrap();
            let items: Vec<_> = block_on(stream.collect());
            items
                .into_iter()
                .map(|i| i.map(|m| m.content).map_err(|e| e.to_string()))
                .collect()
        };
        let whole = run(&model);
        assert_eq!(whole.len(), 6);
        assert!(whole.iter().all(Result::is_ok));
        let cut = run(&model);
        assert_eq!(cut.len(), 3);
        assert_eq!(cut[..2], [Ok(" Hé".to_owned()), Ok("  said:".to_owned())]);
        assert!(cut[2].as_ref().unwrap_err().contains("cut"));
        // Fewer chunks than `after_chunks`: all of them, then the failure.
        let late = run(&model);
        assert_eq!(late.len(), 7);
        assert!(late[6].as_ref().unwrap_err().contains("late"));
        assert!(late[..6].iter().all(Result::is_ok));
    }
}
