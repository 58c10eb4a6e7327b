//! Declarative approvals for tools: a tool, or every tool whose name matches a pattern (an MCP
//! server's tools among them), stops for a human's yes or no before it runs, always or when a
//! predicate over its arguments says so, without the tool calling
//! [`ToolContext::interrupt`] itself. A denial is answered to the model as the tool's result,
//! which it can act on.
//!
//! The interrupt's info is `{"approval": {"tool", "arguments"}, "question"}`; the answer (the
//! resume data of its interrupt id) is `true` / `false`, or `{"approve": BOOL, "reason"?}`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::tool::{Tool, ToolContext, ToolError};

/// A predicate over a call's arguments (the model's JSON): `true` when it needs approval.
pub type ApprovalPredicate = dyn Fn(&Value) -> bool + Send + Sync;

/// The marker saved with an approval interrupt, telling a resume apart from one of the inner
/// tool's own interrupts.
const MARKER: &str = "agentflow.tool_approval";

/// A tool that asks for approval before running the tool it wraps (see
/// [`ToolApprovals`](crate::ToolApprovals) for approvals declared by tool name).
pub struct NeedsApproval {
    inner: Arc<dyn Tool>,
    when: Option<Arc<ApprovalPredicate>>,
}

impl std::fmt::Debug for NeedsApproval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NeedsApproval")
            .field("tool", &self.inner.name())
            .field("conditional", &self.when.is_some())
            .finish()
    }
}

impl NeedsApproval {
    /// `tool`, asking for approval before every call.
    pub fn always(tool: Arc<dyn Tool>) -> Self {
        NeedsApproval {
            inner: tool,
            when: None,
        }
    }

    /// `tool`, asking for approval before the calls whose arguments `predicate` holds for
    /// (arguments that are not JSON always ask).
    pub fn when(tool: Arc<dyn Tool>, predicate: Arc<ApprovalPredicate>) -> Self {
        NeedsApproval {
            inner: tool,
            when: Some(predicate),
        }
    }
}

/// The decision in a resume answer: `true`/`false`, or `{"approve": BOOL, "reason"?}`.
fn decision(answer: &Value) -> (bool, Option<&str>) {
    match answer {
        Value::Bool(b) => (*b, None),
        Value::Object(o) => (
            o.get("approve").and_then(Value::as_bool).unwrap_or(false),
            o.get("reason").and_then(Value::as_str),
        ),
        _ => (false, None),
    }
}

#[async_trait]
impl Tool for NeedsApproval {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> Value {
        self.inner.parameters()
    }

    fn idempotent(&self) -> bool {
        self.inner.idempotent()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let marked = cx.saved_state().and_then(|s| s.get(MARKER)).is_some();
        if marked {
            let (approved, reason) = decision(cx.resume_data().unwrap_or(&Value::Null));
            if !approved {
                let reason = reason.map(|r| format!(" ({r})")).unwrap_or_default();
                return Ok(format!(
                    "the call to tool '{}' was not approved by a human{reason}; it did not run. \
                     Tell the user, and do not call it again unless they ask",
                    self.inner.name()
                ));
            }
            return self.inner.call(cx, arguments).await;
        }
        let parsed: Option<Value> = serde_json::from_str(arguments).ok();
        let ask = match (&self.when, &parsed) {
            (None, _) | (Some(_), None) => true,
            (Some(predicate), Some(args)) => predicate(args),
        };
        if !ask {
            return self.inner.call(cx, arguments).await;
        }
        let shown = parsed.unwrap_or_else(|| Value::String(arguments.to_owned()));
        Err(cx.interrupt_with_state(
            json!({
                "approval": {"tool": self.inner.name(), "arguments": shown},
                "question": format!("Allow the call to tool '{}'?", self.inner.name()),
            }),
            json!({ MARKER: true }),
        ))
    }
}

/// Rules saying which tools need approval, by name or `prefix*` pattern, applied to a list of
/// tools (an MCP toolset's, say) with [`apply`](Self::apply).
///
/// ```
/// use std::sync::Arc;
/// use flow_runtime::ToolApprovals;
///
/// let approvals = ToolApprovals::new()
///     .always("delete_*")
///     .when("transfer_money", |args| args["amount"].as_f64().unwrap_or(0.0) > 100.0);
/// # let tools: Vec<Arc<dyn flow_runtime::Tool>> = Vec::new();
/// let tools = approvals.apply(tools);
/// # let _ = tools;
/// ```
#[derive(Clone, Default)]
pub struct ToolApprovals {
    rules: Vec<(Arc<str>, Option<Arc<ApprovalPredicate>>)>,
}

impl std::fmt::Debug for ToolApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|(p, w)| (p, w.is_some())))
            .finish()
    }
}

impl ToolApprovals {
    /// No rule: no tool needs approval.
    pub fn new() -> Self {
        ToolApprovals::default()
    }

    /// Tools matching `pattern` (a name, or a prefix ending in `*`) ask before every call.
    pub fn always(mut self, pattern: impl Into<Arc<str>>) -> Self {
        self.rules.push((pattern.into(), None));
        self
    }

    /// Tools matching `pattern` ask before the calls whose arguments `predicate` holds for.
    pub fn when(
        mut self,
        pattern: impl Into<Arc<str>>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.rules.push((pattern.into(), Some(Arc::new(predicate))));
        self
    }

    /// `tools`, each one the first matching rule names wrapped in [`NeedsApproval`].
    pub fn apply(&self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        tools
            .into_iter()
            .map(|tool| {
                let rule = self
                    .rules
                    .iter()
                    .find(|(pattern, _)| match pattern.strip_suffix('*') {
                        Some(prefix) => tool.name().starts_with(prefix),
                        None => **pattern == *tool.name(),
                    });
                match rule {
                    None => tool,
                    Some((_, None)) => Arc::new(NeedsApproval::always(tool)) as Arc<dyn Tool>,
                    Some((_, Some(p))) => Arc::new(NeedsApproval::when(tool, Arc::clone(p))),
                }
            })
            .collect()
    }
}
