//! [`Judge`]: an LLM judge that scores an answer against a rubric, through any `ChatModel`.

use std::sync::Arc;

use agentweave_runtime::{ChatModel, ChatRequest, Message};

use super::{Score, Subject};

/// The judge's prompt. Placeholders, replaced before sending: `{rubric}` (the rubric's points,
/// one per line, numbered), `{conversation}` (the conversation so far, `User:` and
/// `Assistant:` lines), `{response}` (the answer judged). The judge must answer with one JSON
/// object, `{"score": <0 to 1>, "reason": "<why>"}`; anything else is scored as a failure with
/// the answer quoted in the reason.
pub const DEFAULT_JUDGE_PROMPT: &str = "\
You are grading the answer of an assistant in a conversation with a user.

Rubric (what a good answer does):
{rubric}

Conversation:
{conversation}

Answer to grade:
{response}

Decide how well the answer meets the rubric, from 0 (not at all) to 1 (fully), giving each \
rubric point equal weight. Reply with one JSON object and nothing else: \
{\"score\": <number from 0 to 1>, \"reason\": \"<one or two sentences naming what was met and what was missed>\"}";

/// An LLM judge: asks a model to grade an answer against a rubric.
///
/// The prompt is [`DEFAULT_JUDGE_PROMPT`] unless replaced with
/// [`with_prompt`](Judge::with_prompt). The judge's reasoning becomes the score's reason. A
/// judge that fails (its model errs) or answers something that is not the expected JSON gives
/// a failed score saying so, never a panic.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_eval::criteria::{Exchange, Judge, Subject};
/// use agentweave_eval::trajectory::{Metrics, Trajectory};
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
///
/// let model = ScriptedModel::new([ScriptStep::text(
///     r#"{"score": 0.9, "reason": "Polite and names the amount."}"#,
/// )]);
/// let judge = Judge::new(model);
/// let conversation = [Exchange { user: "Refund order 42".into(), answer: Some("39 EUR are on their way.".into()) }];
/// let subject = Subject {
///     conversation: &conversation,
///     response: Some("39 EUR are on their way."),
///     trajectory: &Trajectory::default(),
///     metrics: &Metrics::default(),
/// };
/// let score = judge.grade(&["Names the refunded amount.".into()], 0.7, &subject).await;
/// assert!(score.passed);
/// assert_eq!((score.score, score.reason.as_str()), (0.9, "Polite and names the amount."));
/// # });
/// ```
#[derive(Clone)]
pub struct Judge {
    model: Arc<dyn ChatModel>,
    prompt: String,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("model", &self.model.model_name())
            .finish_non_exhaustive()
    }
}

impl Judge {
    /// A judge asking `model` with the default prompt.
    pub fn new(model: impl ChatModel) -> Self {
        Judge::from_arc(Arc::new(model))
    }

    /// A judge asking a shared model.
    pub fn from_arc(model: Arc<dyn ChatModel>) -> Self {
        Judge {
            model,
            prompt: DEFAULT_JUDGE_PROMPT.to_owned(),
        }
    }

    /// The same judge with another prompt template (same placeholders and answer format as
    /// [`DEFAULT_JUDGE_PROMPT`]).
    pub fn with_prompt(mut self, template: impl Into<String>) -> Self {
        self.prompt = template.into();
        self
    }

    /// The prompt sent for `rubric` and `subject`.
    pub fn prompt_for(&self, rubric: &[String], subject: &Subject<'_>) -> String {
        let rubric_text = rubric
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{}. {r}", i + 1))
            .collect::<Vec<_>>()
            .join("\n");
        let mut conversation = String::new();
        for exchange in subject.conversation {
            conversation.push_str(&format!("User: {}\n", exchange.user));
            if let Some(answer) = &exchange.answer {
                conversation.push_str(&format!("Assistant: {answer}\n"));
            }
        }
        self.prompt
            .replace("{rubric}", &rubric_text)
            .replace("{conversation}", conversation.trim_end())
            .replace("{response}", subject.response.unwrap_or("(no answer)"))
    }

    /// Grades `subject` against `rubric`; passes at `threshold` or above.
    pub async fn grade(&self, rubric: &[String], threshold: f64, subject: &Subject<'_>) -> Score {
        const NAME: &str = "judge";
        let request = ChatRequest::new([Arc::new(Message::user(self.prompt_for(rubric, subject)))]);
        let answer = match self.model.generate(&request).await {
            Ok(m) => m.content,
            Err(e) => return Score::fail(NAME, format!("the judge's model failed: {e}")),
        };
        match read_verdict(&answer) {
            Some((score, reason)) => Score::new(NAME, score, score >= threshold, reason),
            None => {
                let shown: String = answer.chars().take(200).collect();
                Score::fail(
                    NAME,
                    format!(
                        "the judge's answer is not {{\"score\": 0..1, \"reason\": \"...\"}}: {shown:?}"
                    ),
                )
            }
        }
    }
}

/// The score and reason in a judge's answer: the JSON object in it (from its first `{` to
/// its last `}`), whose `score` is a number from 0 to 1.
fn read_verdict(answer: &str) -> Option<(f64, String)> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    let value: serde_json::Value = serde_json::from_str(answer.get(start..=end)?).ok()?;
    let score = value.get("score")?.as_f64()?;
    if !(0.0..=1.0).contains(&score) {
        return None;
    }
    let reason = value
        .get("reason")
        .and_then(|r| r.as_str())
        .unwrap_or("(the judge gave no reason)")
        .to_owned();
    Some((score, reason))
}

#[cfg(test)]
mod tests {
    use super::read_verdict;

    #[test]
    fn verdicts_are_read_from_the_json_object_only() {
        assert_eq!(
            read_verdict("Sure! {\"score\": 1, \"reason\": \"ok\"} Hope that helps."),
            Some((1.0, "ok".into()))
        );
        assert_eq!(read_verdict("{\"score\": 7}"), None);
        assert_eq!(read_verdict("great answer, 10/10"), None);
        assert_eq!(read_verdict("{\"score\": \"high\"}"), None);
    }
}
