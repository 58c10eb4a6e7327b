//! The eval set format of agentflow: [`EvalSet`], its cases, turns and expectations, as JSON
//! (its JSON Schema is `flow-eval/evalset.schema.json`, made by [`json_schema`]).

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A set of eval cases, read from JSON.
///
/// ```json
/// {
///   "$schema": "../../flow-eval/evalset.schema.json",
///   "name": "customer-service desk",
///   "cases": [
///     { "id": "refund",
///       "turns": [
///         { "user": "I want a refund for order 42.",
///           "expect": {
///             "trajectory": { "mode": "in_order", "args": "subset", "steps": [
///               { "transfer": "refund" },
///               { "tool": "lookup_order", "args": { "order_id": 42 } },
///               { "tool": "issue_refund", "args": { "order_id": 42 } } ] },
///             "response": [ { "contains": "39 EUR" } ],
///             "budget": { "max_model_calls": 6, "max_tool_calls": 2 } } } ] }
///   ]
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalSet {
    /// The JSON Schema this file follows (for editors; not checked).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The set's name, shown in reports.
    pub name: String,
    /// What the set checks.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The cases.
    pub cases: Vec<EvalCase>,
}

/// One case: a conversation on a new thread, scripted turn by turn or simulated, with what
/// each turn (and the whole case) must show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalCase {
    /// The case's id: unique in its set; names its cassette (`ID.json`) and its test.
    pub id: String,
    /// What the case checks.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The user's turns, in order, each on the same thread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnCase>,
    /// A simulated user instead of (or after) the scripted turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<Simulation>,
    /// Checked once the conversation is over, on all of it: the trajectory of every turn in
    /// order, the last answer, the summed budget, the judge reading the whole conversation.
    #[serde(default, skip_serializing_if = "Expectations::is_empty")]
    pub expect: Expectations,
    /// How many times to run the case (default 1); with more, the case reports its pass rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// The least pass rate (0 to 1) for the case to pass when repeated (default 1: every run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_rate: Option<f64>,
    /// Items of long-term memory the case starts with (in the runner's memory, see
    /// `EvalRunner::memory`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemorySeed>,
}

/// An item of long-term memory a case starts with, in the runner's tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySeed {
    /// Whose: `app`, `user:ID`, `thread:ID` or `KIND:ID`.
    pub scope: String,
    /// Its namespace, `a/b`.
    pub namespace: String,
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: serde_json::Value,
    /// The text it is found by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// What a turn (or a case) must show of long-term memory: what its recall put before the
/// model (the `memory_recall` events), and what is kept once it is over.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryExpectation {
    /// Items (`namespace/key`) the recall must have given the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recalled: Vec<String>,
    /// Items (`namespace/key`) the recall must not have given it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_recalled: Vec<String>,
    /// Items that must be kept afterwards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored: Vec<StoredItem>,
    /// Items that must not be kept afterwards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<StoredItem>,
}

/// An item of long-term memory a [`MemoryExpectation`] looks for, in the runner's tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoredItem {
    /// Whose: `app`, `user:ID`, `thread:ID` or `KIND:ID`.
    pub scope: String,
    /// Its namespace, `a/b`.
    pub namespace: String,
    /// Its key.
    pub key: String,
    /// Its text must contain this (ignoring case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_contains: Option<String>,
    /// Its value must equal this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

/// One user turn and what it must show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnCase {
    /// What the user says.
    pub user: String,
    /// The answers to the interrupts the turn stops at (an approval's yes or no), in the order
    /// they come: when the turn stops, each interrupt takes the answer naming its id, else the
    /// next answer naming none; the turn then continues with them (and may stop again). A turn
    /// that stops with an interrupt left unanswered fails, naming it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resume: Vec<ResumeAnswer>,
    /// What the turn must show (of the whole turn, its continuations included).
    #[serde(default, skip_serializing_if = "Expectations::is_empty")]
    pub expect: Expectations,
}

/// The answer to one interrupt of a turn: `{"approve": true}`, `{"approve": false, "reason":
/// "..."}` (a tool approval's yes or no), or `{"data": ...}` (any other resume data), with
/// `"interrupt": "desk/refund"` to answer that interrupt id only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeAnswer {
    /// The interrupt it answers (its id, e.g. `desk/refund`); without it, the next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<String>,
    /// An approval's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<bool>,
    /// Why (with `approve`; a denial's reason reaches the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Resume data as it is, for an interrupt that is not an approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ResumeAnswer {
    /// Approves the next interrupt.
    pub fn approve() -> Self {
        ResumeAnswer {
            interrupt: None,
            approve: Some(true),
            reason: None,
            data: None,
        }
    }

    /// Denies the next interrupt, saying why.
    pub fn deny(reason: impl Into<String>) -> Self {
        ResumeAnswer {
            approve: Some(false),
            reason: Some(reason.into()),
            ..ResumeAnswer::approve()
        }
    }

    /// Answers the next interrupt with `data` as its resume data.
    pub fn data(data: serde_json::Value) -> Self {
        ResumeAnswer {
            approve: None,
            data: Some(data),
            ..ResumeAnswer::approve()
        }
    }

    /// The same answer, for interrupt `id` only.
    pub fn for_interrupt(mut self, id: impl Into<String>) -> Self {
        self.interrupt = Some(id.into());
        self
    }

    /// The resume data it gives: `data`, or `{"approve": BOOL, "reason"?}`; an error naming
    /// what is wrong when it gives both or neither.
    pub fn resume_data(&self) -> Result<serde_json::Value, String> {
        match (&self.data, self.approve) {
            (Some(data), None) if self.reason.is_none() => Ok(data.clone()),
            (None, Some(approve)) => Ok(match &self.reason {
                Some(reason) => serde_json::json!({ "approve": approve, "reason": reason }),
                None => serde_json::json!({ "approve": approve }),
            }),
            _ => Err(
                "a resume answer gives either \"approve\" (with an optional \"reason\") or \
                 \"data\", not both and not neither"
                    .to_owned(),
            ),
        }
    }
}

/// What a turn (or a whole case) must show. Each present part is one criterion with a score
/// and a reason; the turn passes when all pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    /// The agents, tool calls and transfers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<TrajectoryExpectation>,
    /// Checks of the final answer's text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response: Vec<ResponseExpectation>,
    /// An LLM judge with a rubric (the runner provides the judge's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeExpectation>,
    /// Limits on what the turn may cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// What the turn recalled from long-term memory, and what is kept after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryExpectation>,
}

impl Expectations {
    /// Whether nothing is expected.
    pub fn is_empty(&self) -> bool {
        *self == Expectations::default()
    }
}

/// How the actual steps must line up with the expected ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// The same steps, in the same order, nothing else (of the kinds compared).
    #[default]
    Exact,
    /// The expected steps in this order; other steps may come between them.
    InOrder,
    /// The expected steps in any order; other steps may come too.
    AnyOrder,
}

/// How a tool call's arguments are compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArgsMatch {
    /// Equal JSON (key order aside).
    #[default]
    Exact,
    /// Every field given in the expectation is there with an equal value (recursively);
    /// the call may have more.
    Subset,
    /// Not compared: the tool's name is enough.
    Ignore,
}

/// The expected trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrajectoryExpectation {
    /// How the steps must line up (default `exact`).
    #[serde(default)]
    pub mode: MatchMode,
    /// How arguments are compared (default `exact`).
    #[serde(default)]
    pub args: ArgsMatch,
    /// The expected steps. Only the kinds of step listed here are compared (a list of tool
    /// calls says nothing of agents); an empty list expects no tool call.
    pub steps: Vec<ExpectedStep>,
}

/// One expected step: `{"agent": "refund"}`, `{"tool": "lookup_order", "args": {...}}`,
/// `{"transfer": "refund"}`. An agent is named by its name, or by its run path when the name
/// holds a `/` (`desk/refund`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectedStep {
    /// A tool call of this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool call's arguments (compared as the expectation's `args` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Value>,
    /// A transfer to this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<String>,
    /// With `transfer`: the agent that transfers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Alone: this agent ran. With `tool`: the agent that calls it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl ExpectedStep {
    /// An expected run of `agent` (a name, or a run path with `/`).
    pub fn agent(agent: impl Into<String>) -> Self {
        ExpectedStep {
            agent: Some(agent.into()),
            ..Default::default()
        }
    }

    /// An expected call of `tool` with `args`.
    pub fn tool(tool: impl Into<String>, args: serde_json::Value) -> Self {
        ExpectedStep {
            tool: Some(tool.into()),
            args: Some(args),
            ..Default::default()
        }
    }

    /// An expected transfer to `to`.
    pub fn transfer(to: impl Into<String>) -> Self {
        ExpectedStep {
            transfer: Some(to.into()),
            ..Default::default()
        }
    }

    /// The same step, made by `agent` (a tool's caller, or a transfer's source).
    pub fn by(mut self, agent: impl Into<String>) -> Self {
        if self.transfer.is_some() {
            self.from = Some(agent.into());
        } else {
            self.agent = Some(agent.into());
        }
        self
    }

    /// What kind of step this is, or why it is none.
    pub(crate) fn kind(&self) -> Result<StepKind, String> {
        match (&self.tool, &self.transfer, &self.agent) {
            (Some(_), Some(_), _) => Err("a step is a tool call or a transfer, not both".into()),
            (Some(_), None, _) if self.from.is_some() => {
                Err("`from` goes with `transfer`; a tool call's caller is `agent`".into())
            }
            (Some(_), None, _) => Ok(StepKind::Tool),
            (None, Some(_), Some(_)) => Err("a transfer's source is `from`, not `agent`".into()),
            (None, Some(_), None) => Ok(StepKind::Transfer),
            (None, None, Some(_)) if self.args.is_some() || self.from.is_some() => {
                Err("`args` goes with `tool`, `from` with `transfer`".into())
            }
            (None, None, Some(_)) => Ok(StepKind::Agent),
            (None, None, None) => Err("a step needs `agent`, `tool` or `transfer`".into()),
        }
    }
}

/// The kinds of trajectory step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StepKind {
    Agent,
    Tool,
    Transfer,
}

/// A check of the final answer's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ResponseExpectation {
    /// The answer is exactly this (surrounding white space aside).
    Exact(String),
    /// The answer contains this.
    Contains(String),
    /// The answer does not contain this.
    NotContains(String),
    /// The answer matches this regular expression (Rust `regex` syntax).
    Regex(String),
    /// The answer is close to a reference by ROUGE-L (F-measure of the longest common
    /// subsequence of words, lower-cased).
    RougeL {
        /// The reference answer.
        reference: String,
        /// The least F-measure to pass (0 to 1).
        min: f64,
    },
    /// The answer is JSON matching this JSON Schema.
    JsonSchema(serde_json::Value),
}

/// An LLM judge's rubric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeExpectation {
    /// What a good answer does, one point per entry.
    pub rubric: Vec<String>,
    /// The least score (0 to 1) to pass (default 0.5).
    #[serde(default = "default_judge_threshold")]
    pub threshold: f64,
}

fn default_judge_threshold() -> f64 {
    0.5
}

/// Limits on what a turn (or a case) may cost; each is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Most tokens (input plus output) the models may report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Most model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_calls: Option<u64>,
    /// Most tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Most transfers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_transfers: Option<u64>,
    /// Most wall time, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_ms: Option<u64>,
}

/// A simulated user: a scripted persona (offline, its messages in order) or a model playing
/// a persona with a goal (the runner provides its model), talking with the flow for up to
/// `max_turns` turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    /// The user's first message.
    pub opening: String,
    /// What the user wants to get done (the persona model's instructions).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub goal: String,
    /// Who the user is and how they talk.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub persona: String,
    /// A scripted persona: the user's next messages, in order (no model is asked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script: Vec<String>,
    /// The most user turns, the opening included (default 6).
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    /// The persona ends the conversation by saying this (default `DONE`).
    #[serde(default = "default_stop")]
    pub stop: String,
}

fn default_max_turns() -> u32 {
    6
}

fn default_stop() -> String {
    "DONE".into()
}

/// Why an eval set could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalSetError {
    /// The file could not be read.
    #[error("eval set {}: cannot read it: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Not JSON, or a field of the wrong shape.
    #[error("eval set {}, line {line}, column {column}: field `{field}`: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// The column (1-based).
        column: usize,
        /// The field's path, e.g. `cases[1].turns[0].expect.response[0]`.
        field: String,
        /// What was wrong.
        message: String,
    },
    /// Well-formed JSON that does not make sense (a step of no kind, a bad regular expression,
    /// two cases with one id, ...).
    #[error("eval set {}: field `{field}`: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The field's path.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
}

impl EvalSet {
    /// Reads an eval set in agentflow's format from `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<EvalSet, EvalSetError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| EvalSetError::Read {
            path: path.to_owned(),
            source,
        })?;
        EvalSet::from_json(path, &text)
    }

    /// Reads an eval set from JSON text (`path` names it in errors).
    pub fn from_json(path: impl AsRef<Path>, text: &str) -> Result<EvalSet, EvalSetError> {
        let path = path.as_ref();
        let set: EvalSet =
            crate::cassette::parse_json(text).map_err(|e| EvalSetError::Malformed {
                path: path.to_owned(),
                line: e.line,
                column: e.column,
                field: e.field,
                message: e.message,
            })?;
        set.validate(path)?;
        Ok(set)
    }

    /// Checks what the JSON shape cannot: ids, step kinds, patterns, thresholds.
    pub fn validate(&self, path: &Path) -> Result<(), EvalSetError> {
        let invalid = |field: String, message: String| EvalSetError::Invalid {
            path: path.to_owned(),
            field,
            message,
        };
        let mut seen = std::collections::HashSet::new();
        for (c, case) in self.cases.iter().enumerate() {
            let at = format!("cases[{c}]");
            if case.id.is_empty() || case.id.contains(['/', '\\']) {
                return Err(invalid(
                    format!("{at}.id"),
                    format!("`{}` is not a usable id: give a non-empty name without slashes (it names the case's cassette file)", case.id),
                ));
            }
            if !seen.insert(case.id.as_str()) {
                return Err(invalid(
                    format!("{at}.id"),
                    format!("two cases are named `{}`: give each its own id", case.id),
                ));
            }
            if case.turns.is_empty() && case.simulation.is_none() {
                return Err(invalid(
                    at,
                    format!(
                        "case `{}` has no turns and no simulation: give it at least one user turn",
                        case.id
                    ),
                ));
            }
            if let Some(rate) = case.pass_rate {
                if !(0.0..=1.0).contains(&rate) {
                    return Err(invalid(
                        format!("{at}.pass_rate"),
                        format!("{rate} is not between 0 and 1"),
                    ));
                }
            }
            if case.repeats == Some(0) {
                return Err(invalid(
                    format!("{at}.repeats"),
                    "a case runs at least once".into(),
                ));
            }
            for (t, turn) in case.turns.iter().enumerate() {
                validate_expectations(&turn.expect, &format!("{at}.turns[{t}].expect"))
                    .map_err(|(f, m)| invalid(f, m))?;
                for (r, answer) in turn.resume.iter().enumerate() {
                    answer
                        .resume_data()
                        .map_err(|m| invalid(format!("{at}.turns[{t}].resume[{r}]"), m))?;
                }
            }
            validate_expectations(&case.expect, &format!("{at}.expect"))
                .map_err(|(f, m)| invalid(f, m))?;
        }
        Ok(())
    }
}

fn validate_expectations(e: &Expectations, at: &str) -> Result<(), (String, String)> {
    if let Some(t) = &e.trajectory {
        for (i, step) in t.steps.iter().enumerate() {
            step.kind()
                .map_err(|m| (format!("{at}.trajectory.steps[{i}]"), m))?;
        }
    }
    for (i, r) in e.response.iter().enumerate() {
        let field = format!("{at}.response[{i}]");
        match r {
            ResponseExpectation::Regex(p) => {
                regex::Regex::new(p)
                    .map_err(|err| (field, format!("not a regular expression: {err}")))?;
            }
            ResponseExpectation::RougeL { min, .. } if !(0.0..=1.0).contains(min) => {
                return Err((field, format!("min {min} is not between 0 and 1")));
            }
            ResponseExpectation::JsonSchema(schema) => {
                jsonschema::validator_for(schema)
                    .map_err(|err| (field, format!("not a usable JSON Schema: {err}")))?;
            }
            _ => {}
        }
    }
    if let Some(j) = &e.judge {
        if j.rubric.is_empty() {
            return Err((
                format!("{at}.judge.rubric"),
                "a judge needs at least one rubric point".into(),
            ));
        }
        if !(0.0..=1.0).contains(&j.threshold) {
            return Err((
                format!("{at}.judge.threshold"),
                format!("{} is not between 0 and 1", j.threshold),
            ));
        }
    }
    Ok(())
}

/// The JSON Schema of the eval set format, as committed in `flow-eval/evalset.schema.json`.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(EvalSet)).expect("the schema serialises")
}
