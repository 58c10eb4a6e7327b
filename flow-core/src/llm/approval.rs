//! Declarative approvals for tools: a tool, or every tool whose name matches a pattern (an MCP
//! server's tools among them), stops for a human's yes or no before it runs, always or when a
//! predicate over its arguments says so, without the tool calling
//! [`ToolContext::interrupt`] itself. A denial is answered to the model as the tool's result,
//! which it can act on.
//!
//! The interrupt's info is `{"approval": {"tool", "arguments"}, "question"}`; the answer (the
//! resume data of its interrupt id) is `true` / `false`, or `{"approve": BOOL, "reason"?}`.
//! The application writes the question an approver reads ([`NeedsApproval::question`],
//! [`ToolApprovals::question`]; by default "Allow the call to tool 'NAME'?") and says what of
//! the arguments an approver may see ([`NeedsApproval::redact`], [`ToolApprovals::redact`]:
//! a password or a card number is replaced before the interrupt is recorded or shown; the
//! tool itself still gets the arguments as the model wrote them).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::tool::{Tool, ToolContext, ToolError};

/// A predicate over a call's arguments (the model's JSON): `true` when it needs approval.
pub type ApprovalPredicate = dyn Fn(&Value) -> bool + Send + Sync;

/// The question an approver is asked about a call: given the tool's name and the call's
/// arguments (as the model wrote them, before any redaction).
pub type ApprovalQuestion = dyn Fn(&str, &Value) -> String + Send + Sync;

/// What an approver may see of a call's arguments: given the tool's name and the arguments,
/// the arguments to record and show (a secret replaced, say).
pub type ApprovalRedaction = dyn Fn(&str, &Value) -> Value + Send + Sync;

/// The marker saved with an approval interrupt, telling a resume apart from one of the inner
/// tool's own interrupts.
const MARKER: &str = "agentflow.tool_approval";

/// A tool that asks for approval before running the tool it wraps (see
/// [`ToolApprovals`](crate::ToolApprovals) for approvals declared by tool name).
pub struct NeedsApproval {
    inner: Arc<dyn Tool>,
    when: Option<Arc<ApprovalPredicate>>,
    question: Option<Arc<ApprovalQuestion>>,
    redact: Option<Arc<ApprovalRedaction>>,
}

impl std::fmt::Debug for NeedsApproval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NeedsApproval")
            .field("tool", &self.inner.name())
            .field("conditional", &self.when.is_some())
            .field("question", &self.question.is_some())
            .field("redacted", &self.redact.is_some())
            .finish()
    }
}

impl NeedsApproval {
    /// `tool`, asking for approval before every call.
    pub fn always(tool: Arc<dyn Tool>) -> Self {
        NeedsApproval {
            inner: tool,
            when: None,
            question: None,
            redact: None,
        }
    }

    /// `tool`, asking for approval before the calls whose arguments `predicate` holds for
    /// (arguments that are not JSON always ask).
    pub fn when(tool: Arc<dyn Tool>, predicate: Arc<ApprovalPredicate>) -> Self {
        NeedsApproval {
            inner: tool,
            when: Some(predicate),
            question: None,
            redact: None,
        }
    }

    /// The question the approver is asked, written from the tool's name and the call's
    /// arguments (default: "Allow the call to tool 'NAME'?").
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use agentweave_core::{NeedsApproval, Tool};
    /// # fn wrap(reset_password: Arc<dyn Tool>) -> NeedsApproval {
    /// NeedsApproval::always(reset_password).question(|_, args| {
    ///     format!("Reset the password of {}?", args["user"].as_str().unwrap_or("?"))
    /// })
    /// # }
    /// ```
    pub fn question(
        mut self,
        question: impl Fn(&str, &Value) -> String + Send + Sync + 'static,
    ) -> Self {
        self.question = Some(Arc::new(question));
        self
    }

    /// What the approver sees of the call's arguments (and what the interrupt records): the
    /// arguments `redact` returns. The tool still runs with the arguments the model wrote.
    pub fn redact(
        mut self,
        redact: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.redact = Some(Arc::new(redact));
        self
    }

    /// [`question`](Self::question) and [`redact`](Self::redact) as shared hooks.
    fn hooks(
        mut self,
        question: Option<Arc<ApprovalQuestion>>,
        redact: Option<Arc<ApprovalRedaction>>,
    ) -> Self {
        self.question = question.or(self.question);
        self.redact = redact.or(self.redact);
        self
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

    fn session_only(&self) -> bool {
        // Asking a human is an effect outside the session.
        false
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
        let name = self.inner.name();
        let args = parsed.unwrap_or_else(|| Value::String(arguments.to_owned()));
        let question = match &self.question {
            Some(question) => question(name, &args),
            None => format!("Allow the call to tool '{name}'?"),
        };
        let shown = match &self.redact {
            Some(redact) => redact(name, &args),
            None => args,
        };
        Err(cx.interrupt_with_state(
            json!({
                "approval": {"tool": name, "arguments": shown},
                "question": question,
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
/// use agentweave_runtime::ToolApprovals;
///
/// let approvals = ToolApprovals::new()
///     .always("delete_*")
///     .when("transfer_money", |args| args["amount"].as_f64().unwrap_or(0.0) > 100.0);
/// # let tools: Vec<Arc<dyn agentweave_runtime::Tool>> = Vec::new();
/// let tools = approvals.apply(tools);
/// # let _ = tools;
/// ```
#[derive(Clone, Default)]
pub struct ToolApprovals {
    rules: Vec<(Arc<str>, Option<Arc<ApprovalPredicate>>)>,
    question: Option<Arc<ApprovalQuestion>>,
    redact: Option<Arc<ApprovalRedaction>>,
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

    /// The question approvers are asked about a call of any tool these rules wrap, written
    /// from the tool's name and the call's arguments (see [`NeedsApproval::question`]).
    ///
    /// ```
    /// use agentweave_runtime::ToolApprovals;
    ///
    /// let approvals = ToolApprovals::new()
    ///     .always("reset_password")
    ///     .question(|tool, args| match tool {
    ///         "reset_password" => format!(
    ///             "Reset the password of {}?",
    ///             args["user"].as_str().unwrap_or("an unnamed user")
    ///         ),
    ///         _ => format!("Allow {tool}?"),
    ///     })
    ///     // Approvers see who, never the new password.
    ///     .redact(|_, args| {
    ///         let mut shown = args.clone();
    ///         if let Some(p) = shown.get_mut("new_password") {
    ///             *p = "[redacted]".into();
    ///         }
    ///         shown
    ///     });
    /// # let _ = approvals;
    /// ```
    pub fn question(
        mut self,
        question: impl Fn(&str, &Value) -> String + Send + Sync + 'static,
    ) -> Self {
        self.question = Some(Arc::new(question));
        self
    }

    /// What approvers see of a call's arguments, for any tool these rules wrap (see
    /// [`NeedsApproval::redact`]).
    pub fn redact(
        mut self,
        redact: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.redact = Some(Arc::new(redact));
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
                let wrapped = match rule {
                    None => return tool,
                    Some((_, None)) => NeedsApproval::always(tool),
                    Some((_, Some(p))) => NeedsApproval::when(tool, Arc::clone(p)),
                };
                Arc::new(wrapped.hooks(self.question.clone(), self.redact.clone())) as Arc<dyn Tool>
            })
            .collect()
    }
}
