//! Context budgets: how many tokens an agent may send its model ([`ContextBudget`]), how they
//! are counted ([`TokenCounter`], [`estimate_tokens`]), where the oldest part of a
//! conversation is cut off to be summarised ([`plan_compaction`]), who writes the summary
//! ([`Summarizer`], [`ModelSummarizer`]), and the record a compaction leaves in the
//! history ([`CompactionRecord`]), so that a later turn, a resumed run or a recovered one sees
//! the same summary instead of writing it again. [`UsageCalibration`] corrects the count with
//! the prompt tokens the model reports, so that the budget holds as the model counts.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::event::Action;
use crate::message::{Message, MessageRef, Role};
use crate::model::{ChatModel, ChatRequest, ModelParams};

/// Counts the tokens of a message, as a budget sees them.
///
/// The default, [`EstimatedTokens`], estimates; a [`ContextBudget`] corrects the estimate with
/// the usage the model reports ([`UsageCalibration`]). Give a counter backed by your model's
/// tokenizer for exact counts before the first reply.
pub trait TokenCounter: Send + Sync + 'static {
    /// The tokens `message` takes in a request.
    fn count(&self, message: &Message) -> usize;
}

impl<F> TokenCounter for F
where
    F: Fn(&Message) -> usize + Send + Sync + 'static,
{
    fn count(&self, message: &Message) -> usize {
        self(message)
    }
}

/// The default [`TokenCounter`]: [`estimate_tokens`].
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimatedTokens;

impl TokenCounter for EstimatedTokens {
    fn count(&self, message: &Message) -> usize {
        estimate_tokens(message)
    }
}

/// Tokens a message is estimated to take: a fixed 4 per message (role, separators), plus one
/// per 4 bytes of its text, its tool calls' names and arguments, its tool name, and 85 per
/// part beyond the text (an image's low-detail cost). English text averages about 4 bytes a
/// token in the GPT and Claude tokenizers; code and other scripts take more tokens per byte,
/// so leave room or give a [`TokenCounter`] of your own.
///
/// ```
/// use agentweave_runtime::history::estimate_tokens;
/// use agentweave_runtime::Message;
/// assert_eq!(estimate_tokens(&Message::user("")), 4);
/// assert_eq!(estimate_tokens(&Message::user("twelve bytes")), 4 + 3);
/// ```
pub fn estimate_tokens(message: &Message) -> usize {
    let mut bytes = message.content.len();
    for call in &message.tool_calls {
        bytes += call.name.len() + call.arguments.len() + call.id.len();
    }
    bytes += message.tool_name.as_deref().map_or(0, str::len);
    bytes += message.tool_call_id.as_deref().map_or(0, str::len);
    text_tokens(bytes) + 85 * message.parts.len()
}

/// [`estimate_tokens`] of a message of `bytes` bytes of text and nothing else.
#[inline]
fn text_tokens(bytes: usize) -> usize {
    4 + bytes.div_ceil(4)
}

/// [`estimate_tokens`] of `form`, a message [`rewrite_for_context`] made, read off its text's
/// length without looking at the rest (a context form has no tool calls, tool name or other
/// parts): what the input cache counts as it rewrites another agent's message.
///
/// [`rewrite_for_context`]: crate::context_form::rewrite_for_context
#[inline]
pub(crate) fn context_form_tokens(form: &Message) -> u64 {
    debug_assert!(
        form.tool_calls.is_empty()
            && form.parts.is_empty()
            && form.tool_name.is_none()
            && form.tool_call_id.is_none(),
        "a context form is text alone"
    );
    text_tokens(form.content.len()) as u64
}

/// How the prompt tokens a model reports compare with a budget's count of the same request.
///
/// A [`ContextBudget`] counts with its [`TokenCounter`] (an estimate by default); the model
/// counts with its own tokenizer and says how many prompt tokens a request took in the
/// [`Usage`](crate::Usage) of its reply. After each call, the agent [observes](Self::observe)
/// both figures for the request it sent; the next request's count is scaled by their ratio
/// ([`to_model`](Self::to_model)), and the budget's limits are brought into the counter's units
/// by the inverse ([`to_counted`](Self::to_counted)). So a model whose tokenizer takes twice
/// the estimate makes the budget compact twice as early, and a request stays within the budget
/// as the model counts it (as far as the last request's ratio holds for the next one).
///
/// Until a call reported usage (or when it reports none) the ratio is 1: the counter's own
/// figures are used. A resumed or recovered run starts from the usage recorded on the agent's
/// last reply in its history (see [`ContextBudget::calibrate_from_usage`]).
///
/// ```
/// use agentweave_runtime::history::UsageCalibration;
/// let calibration = UsageCalibration::new();
/// assert_eq!(calibration.to_model(100), 100);
/// // The model counted 300 tokens where the estimate said 200.
/// calibration.observe(200, 300);
/// assert_eq!(calibration.to_model(100), 150);
/// assert_eq!(calibration.to_counted(3_000), 2_000);
/// ```
#[derive(Debug, Default)]
pub struct UsageCalibration {
    /// The last observation: (counted, reported), both non-zero.
    last: Mutex<Option<(u64, u64)>>,
}

impl UsageCalibration {
    /// No observation yet: a ratio of 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that a request counted as `counted` tokens took `reported` prompt tokens as the
    /// model counts them. Either figure 0 (no usage reported) is ignored.
    pub fn observe(&self, counted: usize, reported: u64) {
        if counted == 0 || reported == 0 {
            return;
        }
        *self.last.lock().expect("calibration lock") = Some((counted as u64, reported));
    }

    /// Whether a request's usage was observed.
    pub fn is_calibrated(&self) -> bool {
        self.last().is_some()
    }

    /// The model's tokens per counted token, from the last observation.
    pub fn ratio(&self) -> Option<f64> {
        self.last().map(|(c, r)| r as f64 / c as f64)
    }

    /// `counted` tokens as the model would count them (rounded up).
    pub fn to_model(&self, counted: usize) -> usize {
        match self.last() {
            None => counted,
            Some((c, r)) => {
                let scaled = (counted as u128 * r as u128).div_ceil(c as u128);
                usize::try_from(scaled).unwrap_or(usize::MAX)
            }
        }
    }

    /// `model` tokens, as the model counts them, in the counter's units (rounded down).
    pub fn to_counted(&self, model: usize) -> usize {
        match self.last() {
            None => model,
            Some((c, r)) => {
                let scaled = model as u128 * c as u128 / r as u128;
                usize::try_from(scaled).unwrap_or(usize::MAX)
            }
        }
    }

    fn last(&self) -> Option<(u64, u64)> {
        *self.last.lock().expect("calibration lock")
    }
}

/// Writes the summary that stands for the oldest part of a conversation when a
/// [`ContextBudget`] compacts it: agentflow's one summarizer (the summary is written once and
/// recorded; every later input, resume and recovery starts from it).
///
/// `older` is what is being replaced, oldest first: when the conversation was compacted before,
/// its first message is the previous summary, so the new summary must keep what that one said
/// (a rolling summary). Implemented for closures
/// `Fn(&str, &[MessageRef]) -> Result<String, String>` (agent name, older messages) and by
/// [`ModelSummarizer`] for any [`ChatModel`].
#[async_trait]
pub trait Summarizer: Send + Sync + 'static {
    /// The summary of `older`, for `agent`; an error leaves the conversation as it was.
    async fn summarize(&self, agent: &str, older: &[MessageRef]) -> Result<String, String>;
}

#[async_trait]
impl<F> Summarizer for F
where
    F: Fn(&str, &[MessageRef]) -> Result<String, String> + Send + Sync + 'static,
{
    async fn summarize(&self, agent: &str, older: &[MessageRef]) -> Result<String, String> {
        self(agent, older)
    }
}

/// The instruction [`ModelSummarizer`] gives its model by default.
pub const DEFAULT_SUMMARY_PROMPT: &str = "You compact the conversation of an AI agent so that it \
fits its context window. Below is the oldest part of the conversation, as a transcript (it may \
begin with an earlier summary). Write a summary the agent can go on from: keep every fact the \
user gave (names, numbers, dates, identifiers, decisions, preferences), every commitment the \
agent made, what tools returned that still matters, and what is still open. Keep everything an \
earlier summary kept. Write plain sentences, no preamble, as short as the facts allow.";

/// A [`Summarizer`] that asks a [`ChatModel`]: a system message with the prompt
/// ([`DEFAULT_SUMMARY_PROMPT`] unless [overridden](ModelSummarizer::prompt)), then one user
/// message holding the older messages as a transcript (`role: text` lines; tool calls as
/// `assistant called NAME(ARGS)`; tool results as `tool NAME: TEXT`). The summary is the
/// model's answer.
///
/// ```
/// use agentweave_runtime::history::ModelSummarizer;
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
/// let summarizer = ModelSummarizer::new(ScriptedModel::new([ScriptStep::text("The user is Ada.")]))
///     .prompt("Summarise in one line.");
/// # let _ = summarizer;
/// ```
pub struct ModelSummarizer {
    model: Arc<dyn ChatModel>,
    prompt: Arc<str>,
    params: ModelParams,
}

impl ModelSummarizer {
    /// A summarizer over `model`, with the default prompt.
    pub fn new(model: impl ChatModel) -> Self {
        Self::with_arc(Arc::new(model))
    }

    /// A summarizer over a shared model.
    pub fn with_arc(model: Arc<dyn ChatModel>) -> Self {
        ModelSummarizer {
            model,
            prompt: Arc::from(DEFAULT_SUMMARY_PROMPT),
            params: ModelParams::default(),
        }
    }

    /// Replaces the prompt.
    pub fn prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// Model parameters for the summary calls (a `max_tokens` bounds the summary's length).
    pub fn params(mut self, params: ModelParams) -> Self {
        self.params = params;
        self
    }

    /// The transcript of `older` the model is given.
    pub fn transcript(older: &[MessageRef]) -> String {
        let mut out = String::new();
        for m in older {
            match m.role {
                Role::Tool => {
                    out.push_str("tool ");
                    out.push_str(m.tool_name.as_deref().unwrap_or(""));
                    out.push_str(": ");
                    out.push_str(&m.content);
                    out.push('\n');
                }
                role => {
                    if !m.content.is_empty() {
                        out.push_str(&format!("{role}: {}\n", m.content));
                    }
                    for call in &m.tool_calls {
                        out.push_str(&format!(
                            "{role} called {}({})\n",
                            call.name, call.arguments
                        ));
                    }
                }
            }
        }
        out
    }
}

#[async_trait]
impl Summarizer for ModelSummarizer {
    async fn summarize(&self, _agent: &str, older: &[MessageRef]) -> Result<String, String> {
        let request = ChatRequest {
            messages: vec![
                Arc::new(Message::system(self.prompt.to_string())),
                Arc::new(Message::user(Self::transcript(older))),
            ],
            tools: Arc::from(Vec::new()),
            output_schema: None,
            params: self.params.clone(),
        };
        match self.model.generate(&request).await {
            Ok(reply) if reply.content.trim().is_empty() => Err(format!(
                "model '{}' answered with an empty summary",
                self.model.model_name()
            )),
            Ok(reply) => Ok(reply.content),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A token budget for what an agent sends its model, and what to do when a request would
/// exceed it.
///
/// Before every model call the agent counts its request (messages, and the tool definitions as
/// JSON) with the budget's [`TokenCounter`], scaled by the prompt tokens the model reported for
/// its last request against the count of that request ([`UsageCalibration`]; turn it off with
/// [`calibrate_from_usage`](ContextBudget::calibrate_from_usage)): every limit of the budget
/// is in tokens as the model counts them. Over [`max_tokens`](ContextBudget::max_tokens),
/// it compacts: the oldest part of the conversation is replaced by a summary that the
/// [`Summarizer`] writes, keeping the newest messages whole (up to
/// [`keep_tokens`](ContextBudget::keep_tokens)), never cutting between a tool call and its
/// results. The summary is recorded once, as an event of the agent (a system message carrying
/// a [`CompactionRecord`]); every later input of the agent, in this turn or later ones of a
/// thread, after a resume or a recovery, starts from it instead of the messages it replaced.
/// Other agents never see it.
///
/// With [`set_aside_tool_results_over`](ContextBudget::set_aside_tool_results_over), a tool
/// result longer than that many tokens is sent as a short stub with a handle (its start and
/// its length); the model reads the rest through the built-in `read_tool_result` tool. The
/// record keeps the whole result: the stub is only what the model is sent.
///
/// ```
/// use agentweave_runtime::history::ContextBudget;
/// let budget = ContextBudget::new(8_000, |_agent: &str, older: &[agentweave_runtime::MessageRef]| {
///     Ok::<_, String>(format!("{} earlier messages about the order.", older.len()))
/// })
/// .keep_tokens(2_000)
/// .set_aside_tool_results_over(1_000);
/// assert_eq!(budget.max_tokens(), 8_000);
/// ```
#[derive(Clone)]
pub struct ContextBudget {
    max_tokens: usize,
    keep_tokens: usize,
    set_aside_over: Option<usize>,
    summarizer: Arc<dyn Summarizer>,
    counter: Arc<dyn TokenCounter>,
    calibrate: bool,
}

impl ContextBudget {
    /// A budget of `max_tokens` per request, compacting through `summarizer`; keeps up to half
    /// the budget whole after a compaction; sets no tool result aside.
    pub fn new(max_tokens: usize, summarizer: impl Summarizer) -> Self {
        Self::with_summarizer(max_tokens, Arc::new(summarizer))
    }

    /// A budget with a shared summarizer.
    pub fn with_summarizer(max_tokens: usize, summarizer: Arc<dyn Summarizer>) -> Self {
        ContextBudget {
            max_tokens,
            keep_tokens: max_tokens / 2,
            set_aside_over: None,
            summarizer,
            counter: Arc::new(EstimatedTokens),
            calibrate: true,
        }
    }

    /// How many tokens of the newest messages a compaction keeps whole, at most (the newest
    /// message and the tool calls it answers are kept even if they take more).
    pub fn keep_tokens(mut self, tokens: usize) -> Self {
        self.keep_tokens = tokens;
        self
    }

    /// Sends tool results over `tokens` as a stub the model reads on through
    /// `read_tool_result`.
    pub fn set_aside_tool_results_over(mut self, tokens: usize) -> Self {
        self.set_aside_over = Some(tokens);
        self
    }

    /// Counts tokens with `counter` instead of [`EstimatedTokens`].
    pub fn counter(mut self, counter: impl TokenCounter) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Whether the count is corrected by the prompt tokens the model reports (the default:
    /// `true`; see [`UsageCalibration`]). Each agent keeps its own calibration (its model's
    /// tokenizer against this budget's counter), learnt from its last request, or, when it has
    /// made none yet in this process, from the usage recorded on its last reply in the
    /// history it is given. Turn it off when the counter is exact or the model's usage is not
    /// about the request (a proxy that adds or hides messages).
    pub fn calibrate_from_usage(mut self, calibrate: bool) -> Self {
        self.calibrate = calibrate;
        self
    }

    /// Whether the count is corrected by the model's reported usage.
    pub fn calibrates(&self) -> bool {
        self.calibrate
    }

    /// The most tokens a request may take.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The most tokens of newest messages a compaction keeps whole.
    pub fn kept_tokens(&self) -> usize {
        self.keep_tokens
    }

    /// The size over which tool results are set aside, if they are.
    pub fn set_aside_over(&self) -> Option<usize> {
        self.set_aside_over
    }

    /// The summarizer.
    pub fn summarizer(&self) -> &Arc<dyn Summarizer> {
        &self.summarizer
    }

    /// The tokens of `message`, as this budget counts them.
    pub fn count(&self, message: &Message) -> usize {
        self.counter.count(message)
    }

    /// The tokens of `messages`.
    pub fn count_all<'a>(&self, messages: impl IntoIterator<Item = &'a MessageRef>) -> usize {
        messages.into_iter().map(|m| self.counter.count(m)).sum()
    }
}

impl fmt::Debug for ContextBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextBudget")
            .field("max_tokens", &self.max_tokens)
            .field("keep_tokens", &self.keep_tokens)
            .field("set_aside_over", &self.set_aside_over)
            .field("calibrate", &self.calibrate)
            .finish_non_exhaustive()
    }
}

/// Where to cut `conversation` (oldest first, no system instruction) so that what follows the
/// cut takes at most `keep` tokens: the smallest index `i >= 1` such that
/// `conversation[i..]` fits, where `conversation[i]` is not a tool result (a call and its
/// results stay on one side). If even the newest message does not fit, the cut is as late as
/// it can be. `None` when there is nothing to cut (fewer than two messages, or no place that
/// does not split a call from its results).
///
/// ```
/// use std::sync::Arc;
/// use agentweave_runtime::history::{plan_compaction, ContextBudget};
/// use agentweave_runtime::{Message, MessageRef};
/// let budget = ContextBudget::new(100, |_: &str, _: &[MessageRef]| Ok::<_, String>(String::new()));
/// let conversation: Vec<MessageRef> = (0..10).map(|i| Arc::new(Message::user(format!("message {i}")))).collect();
/// // Each message is 4 + 3 tokens: three fit in 21.
/// assert_eq!(plan_compaction(&conversation, &budget, 21), Some(7));
/// ```
pub fn plan_compaction(
    conversation: &[MessageRef],
    budget: &ContextBudget,
    keep: usize,
) -> Option<usize> {
    if conversation.len() < 2 {
        return None;
    }
    let mut tail = 0usize;
    let mut best: Option<usize> = None;
    for i in (1..conversation.len()).rev() {
        tail += budget.count(&conversation[i]);
        if conversation[i].role == Role::Tool {
            continue;
        }
        if tail > keep && best.is_some() {
            break;
        }
        best = Some(i);
        if tail > keep {
            // The newest whole group alone is over: cut as late as possible.
            break;
        }
    }
    best
}

/// The mark a compaction leaves on the event that records its summary: how many of the
/// agent's messages just before it were kept whole. Everything older is what the summary
/// stands for. Carried as [`Action::Custom`] (`{"agentflow.compaction": {"kept": N}}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionRecord {
    /// The messages before the summary event that it does not replace.
    pub kept: usize,
}

/// The key of a compaction's mark in its custom action.
const COMPACTION_KEY: &str = "agentflow.compaction";

impl CompactionRecord {
    /// The action that marks a summary event.
    pub fn to_action(self) -> Action {
        Action::Custom(Arc::new(
            serde_json::json!({ COMPACTION_KEY: { "kept": self.kept } }),
        ))
    }

    /// The compaction an action marks, if it marks one.
    ///
    /// ```
    /// use agentweave_runtime::history::CompactionRecord;
    /// let record = CompactionRecord { kept: 3 };
    /// assert_eq!(CompactionRecord::of(&record.to_action()), Some(record));
    /// ```
    pub fn of(action: &Action) -> Option<CompactionRecord> {
        let Action::Custom(value) = action else {
            return None;
        };
        let kept = value.get(COMPACTION_KEY)?.get("kept")?.as_u64()?;
        Some(CompactionRecord {
            kept: usize::try_from(kept).ok()?,
        })
    }
}

/// The system message a summary is given to the agent as.
pub fn summary_message(summary: &str) -> Message {
    Message::system(format!(
        "Summary of the earlier conversation (it stands for the messages before this one): \
         {summary}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context_form::rewrite_for_context;
    use crate::message::{ContentPart, ToolCall};

    #[test]
    fn a_context_forms_tokens_read_off_its_text_are_its_estimate() {
        let call = ToolCall::new("call_7", "lookup_order", r#"{"order":"A-1234"}"#);
        let messages = [
            Message::assistant("the order shipped on Monday"),
            Message::assistant(""),
            Message::assistant_tool_calls("let me look", vec![call.clone(), call]),
            Message::assistant("see the photo")
                .with_image_url("https://example.com/a.png")
                .with_part(ContentPart::Text {
                    text: "and a caption".into(),
                }),
            Message::tool("{\"status\":\"shipped\"}", "call_7", "lookup_order"),
            Message::tool("", "call_8", "empty").with_image_url("https://example.com/b.png"),
            Message::user("a user's words, as another agent reads them"),
        ];
        for message in &messages {
            for agent in ["refund", "a much longer agent name than most"] {
                let form = rewrite_for_context(agent, message);
                assert_eq!(
                    context_form_tokens(&form),
                    estimate_tokens(&form) as u64,
                    "{form:?}"
                );
            }
        }
    }
}
