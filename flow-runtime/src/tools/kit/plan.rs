//! The plan tool, `write_plan`: the agent writes its list of steps, each with a status, and
//! rewrites it as it works. The plan lives in the thread's values (session value
//! [`PLAN_KEY`]), so it carries to the thread's next turns and is what a fork, time travel or a
//! recovered turn sees at that point.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};
use crate::session::Session;

/// The name of the plan tool.
pub const WRITE_PLAN_TOOL_NAME: &str = "write_plan";
/// The session value (a thread value) holding the plan.
pub const PLAN_KEY: &str = "kit.plan";
/// The most steps a plan may have.
pub const MAX_PLAN_STEPS: usize = 50;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on (one step at a time).
    InProgress,
    /// Finished.
    Done,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step does, in a few words.
    pub step: String,
    /// Where it stands.
    pub status: StepStatus,
}

/// An agent's plan: its steps, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// The plan kept in `session` (the thread's values), if one was written.
    pub fn of(session: &Session) -> Option<Plan> {
        session.value::<Plan>(PLAN_KEY).ok().flatten()
    }

    /// The plan as lines, `[x] done step`, `[>] step in progress`, `[ ] pending step`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.steps {
            let mark = match s.status {
                StepStatus::Pending => "[ ]",
                StepStatus::InProgress => "[>]",
                StepStatus::Done => "[x]",
            };
            out.push_str(mark);
            out.push(' ');
            out.push_str(&s.step);
            out.push('\n');
        }
        out
    }
}

/// The plan tool (`write_plan`): give it to an agent with
/// [`ChatModelAgentBuilder::tool`](crate::ChatModelAgentBuilder::tool).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanTool;

#[async_trait]
impl Tool for PlanTool {
    fn name(&self) -> &str {
        WRITE_PLAN_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Writes your plan: the whole list of steps, each `pending`, `in_progress` or `done`. \
         Write it before a task of several steps and again whenever a step's status changes \
         (the new list replaces the old; keep one step `in_progress`)."
    }

    fn parameters(&self) -> Value {
        schema_for::<Plan>()
    }

    /// The plan is a thread value: a recovered run writes it again.
    fn session_only(&self) -> bool {
        true
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let tool = WRITE_PLAN_TOOL_NAME;
        let plan: Plan = parse_arguments(tool, arguments)?;
        if plan.steps.len() > MAX_PLAN_STEPS {
            return Err(ToolError::invalid_arguments(
                tool,
                format!(
                    "a plan has at most {MAX_PLAN_STEPS} steps, not {}: merge steps",
                    plan.steps.len()
                ),
            ));
        }
        if plan.steps.iter().any(|s| s.step.trim().is_empty()) {
            return Err(ToolError::invalid_arguments(
                tool,
                "a step needs a description",
            ));
        }
        let busy = plan
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::InProgress)
            .count();
        if busy > 1 {
            return Err(ToolError::invalid_arguments(
                tool,
                format!("{busy} steps are `in_progress`: keep one at a time"),
            ));
        }
        cx.run_context()
            .session()
            .set_value(PLAN_KEY, &plan)
            .map_err(|e| ToolError::failed(tool, e))?;
        Ok(format!("Plan saved:\n{}", plan.render()))
    }
}
