//! A reader for Google ADK's evalset JSON (`*.evalset.json`, ADK's `EvalSet` model), so eval
//! sets made for ADK agents run against an agentflow flow.
//!
//! ADK's format, as its pydantic models publish it: an `EvalSet` has `eval_set_id`, `name`,
//! `description` and `eval_cases`; an `EvalCase` has `eval_id` and either a `conversation` (a
//! list of `Invocation`s) or a `conversation_scenario` (`starting_prompt`,
//! `conversation_plan`), plus `session_input` and `rubrics`; an `Invocation` has
//! `user_content` and `final_response` (genai `Content`: `role` and `parts`, each part with
//! `text` or `function_call`), `intermediate_data` (`tool_uses`, a list of `FunctionCall`s
//! with `name` and `args`, or `invocation_events` whose parts hold function calls), and
//! `rubrics`. Field names are accepted in snake_case and camelCase, as ADK writes both.
//!
//! How a case maps to agentflow's [`EvalCase`]:
//!
//! | ADK | agentflow |
//! | --- | --- |
//! | `eval_id` | `id` |
//! | each invocation's `user_content` text | a turn's `user` |
//! | `intermediate_data` tool uses | the turn's trajectory: tool calls, `exact` mode, `exact` args (ADK's `tool_trajectory_avg_score`) |
//! | `final_response` text | the turn's `rouge_l` against it, with [`AdkOptions::response_min`] (ADK's `response_match_score`) |
//! | invocation and case `rubrics` (`rubric_content.text_property`) | a judge with those points |
//! | `conversation_scenario` | a simulation: `starting_prompt` opens, `conversation_plan` is the goal |
//!
//! `session_input` (app, user, initial state) and `final_session_state` are read and ignored:
//! an agentflow case starts on a new thread.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::format::{
    ArgsMatch, EvalCase, EvalSet, EvalSetError, Expectations, ExpectedStep, JudgeExpectation,
    MatchMode, ResponseExpectation, Simulation, TrajectoryExpectation, TurnCase,
};

/// Choices for reading an ADK evalset.
#[derive(Debug, Clone, PartialEq)]
pub struct AdkOptions {
    /// The least ROUGE-L F-measure of a turn's answer against ADK's `final_response` (default
    /// 0.8, ADK's default `response_match_score` threshold). `None` leaves the answer
    /// unchecked.
    pub response_min: Option<f64>,
    /// The judge threshold for ADK rubrics (default 0.5).
    pub rubric_threshold: f64,
}

impl Default for AdkOptions {
    fn default() -> Self {
        AdkOptions {
            response_min: Some(0.8),
            rubric_threshold: 0.5,
        }
    }
}

#[derive(Deserialize)]
struct AdkSet {
    #[serde(alias = "evalSetId")]
    eval_set_id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(alias = "evalCases")]
    eval_cases: Vec<AdkCase>,
}

#[derive(Deserialize)]
struct AdkCase {
    #[serde(alias = "evalId")]
    eval_id: String,
    #[serde(default)]
    conversation: Option<Vec<AdkInvocation>>,
    #[serde(default, alias = "conversationScenario")]
    conversation_scenario: Option<AdkScenario>,
    #[serde(default)]
    rubrics: Option<Vec<AdkRubric>>,
}

#[derive(Deserialize)]
struct AdkScenario {
    #[serde(alias = "startingPrompt")]
    starting_prompt: String,
    #[serde(alias = "conversationPlan")]
    conversation_plan: String,
}

#[derive(Deserialize)]
struct AdkInvocation {
    #[serde(alias = "userContent")]
    user_content: AdkContent,
    #[serde(default, alias = "finalResponse")]
    final_response: Option<AdkContent>,
    #[serde(default, alias = "intermediateData")]
    intermediate_data: Option<AdkIntermediate>,
    #[serde(default)]
    rubrics: Option<Vec<AdkRubric>>,
}

#[derive(Deserialize)]
struct AdkContent {
    #[serde(default)]
    parts: Vec<AdkPart>,
}

impl AdkContent {
    fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect::<Vec<_>>()
            .join("")
    }
}

#[derive(Deserialize)]
struct AdkPart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default, alias = "functionCall")]
    function_call: Option<AdkFunctionCall>,
}

#[derive(Deserialize)]
struct AdkFunctionCall {
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
struct AdkIntermediate {
    #[serde(default, alias = "toolUses")]
    tool_uses: Vec<AdkFunctionCall>,
    #[serde(default, alias = "invocationEvents")]
    invocation_events: Vec<AdkEvent>,
}

#[derive(Deserialize)]
struct AdkEvent {
    #[serde(default)]
    content: Option<AdkContent>,
}

#[derive(Deserialize)]
struct AdkRubric {
    #[serde(alias = "rubricContent")]
    rubric_content: AdkRubricContent,
}

#[derive(Deserialize)]
struct AdkRubricContent {
    #[serde(alias = "textProperty")]
    text_property: String,
}

fn rubric_points(rubrics: &Option<Vec<AdkRubric>>) -> Vec<String> {
    rubrics
        .iter()
        .flatten()
        .map(|r| r.rubric_content.text_property.clone())
        .collect()
}

/// Reads an ADK evalset file as an agentflow [`EvalSet`] (see the module docs for the mapping).
pub fn read_adk_evalset(
    path: impl AsRef<Path>,
    options: &AdkOptions,
) -> Result<EvalSet, EvalSetError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| EvalSetError::Read {
        path: path.to_owned(),
        source,
    })?;
    adk_evalset_from_json(path, &text, options)
}

/// Reads ADK evalset JSON text (`path` names it in errors).
pub fn adk_evalset_from_json(
    path: impl AsRef<Path>,
    text: &str,
    options: &AdkOptions,
) -> Result<EvalSet, EvalSetError> {
    let path = path.as_ref();
    let adk: AdkSet = crate::cassette::parse_json(text).map_err(|e| EvalSetError::Malformed {
        path: path.to_owned(),
        line: e.line,
        column: e.column,
        field: e.field,
        message: e.message,
    })?;
    let mut cases = Vec::new();
    for (c, case) in adk.eval_cases.into_iter().enumerate() {
        let case_rubric = rubric_points(&case.rubrics);
        let mut out = EvalCase {
            id: case.eval_id,
            description: String::new(),
            turns: Vec::new(),
            simulation: None,
            expect: Expectations::default(),
            repeats: None,
            pass_rate: None,
            memory: Vec::new(),
        };
        match (case.conversation, case.conversation_scenario) {
            (Some(conversation), None) => {
                for invocation in conversation {
                    out.turns.push(turn_of(invocation, &case_rubric, options));
                }
            }
            (None, Some(scenario)) => {
                out.simulation = Some(Simulation {
                    opening: scenario.starting_prompt,
                    goal: scenario.conversation_plan,
                    persona: String::new(),
                    script: Vec::new(),
                    max_turns: 6,
                    stop: "DONE".into(),
                });
                if !case_rubric.is_empty() {
                    out.expect.judge = Some(JudgeExpectation {
                        rubric: case_rubric,
                        threshold: options.rubric_threshold,
                    });
                }
            }
            _ => {
                return Err(EvalSetError::Invalid {
                    path: path.to_owned(),
                    field: format!("eval_cases[{c}]"),
                    message: "an ADK eval case has exactly one of `conversation` and \
                              `conversation_scenario`"
                        .into(),
                })
            }
        }
        cases.push(out);
    }
    let set = EvalSet {
        schema: None,
        name: adk.name.unwrap_or_else(|| adk.eval_set_id.clone()),
        description: adk.description.unwrap_or_default(),
        cases,
    };
    set.validate(path)?;
    Ok(set)
}

fn turn_of(invocation: AdkInvocation, case_rubric: &[String], options: &AdkOptions) -> TurnCase {
    let mut expect = Expectations::default();
    if let Some(data) = &invocation.intermediate_data {
        let mut calls: Vec<&AdkFunctionCall> = data.tool_uses.iter().collect();
        for event in &data.invocation_events {
            if let Some(content) = &event.content {
                calls.extend(
                    content
                        .parts
                        .iter()
                        .filter_map(|p| p.function_call.as_ref()),
                );
            }
        }
        expect.trajectory = Some(TrajectoryExpectation {
            mode: MatchMode::Exact,
            args: ArgsMatch::Exact,
            steps: calls
                .into_iter()
                .map(|c| {
                    ExpectedStep::tool(
                        c.name.clone(),
                        c.args.clone().unwrap_or_else(|| serde_json::json!({})),
                    )
                })
                .collect(),
        });
    }
    if let (Some(reference), Some(min)) = (&invocation.final_response, options.response_min) {
        let reference = reference.text();
        if !reference.is_empty() {
            expect
                .response
                .push(ResponseExpectation::RougeL { reference, min });
        }
    }
    let mut rubric = case_rubric.to_vec();
    rubric.extend(rubric_points(&invocation.rubrics));
    if !rubric.is_empty() {
        expect.judge = Some(JudgeExpectation {
            rubric,
            threshold: options.rubric_threshold,
        });
    }
    TurnCase {
        user: invocation.user_content.text(),
        resume: Vec::new(),
        expect,
    }
}
