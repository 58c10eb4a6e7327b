//! One call of one of an agent's tools, inside its `execute_tool` span and its middleware.

use std::future::Future;

use futures::future::BoxFuture;
use futures::FutureExt;
use tracing::Instrument;

use super::agent::ChatModelAgent;
use super::tool_calls::CallOutcome;
use crate::agent::middleware::{self, HookContext, Middlewares};
use crate::agent::Context;
use crate::llm::telemetry;
use crate::llm::tool::ToolError;
use crate::message::ToolCall;

impl ChatModelAgent {
    /// The job of one tool call: `run` runs the tool on the arguments it is given. The
    /// `before_tool` hooks of `chain` may change the call or answer in the tool's place, the
    /// `after_tool` hooks may change the result text; a hook's error or panic comes out as
    /// [`ToolError::Middleware`], which ends the agent's run. `(idempotent, session_only)`:
    /// the tool's [`Tool::idempotent`](crate::Tool::idempotent) and
    /// [`Tool::session_only`](crate::Tool::session_only), for the hooks to read.
    pub(super) fn hooked_tool_call<F, Fut>(
        &self,
        cx: &Context,
        chain: &Middlewares,
        call: &ToolCall,
        (idempotent, session_only): (bool, bool),
        run: F,
    ) -> BoxFuture<'static, CallOutcome>
    where
        F: FnOnce(String) -> Fut + Send + 'static,
        Fut: Future<Output = CallOutcome> + Send + 'static,
    {
        let span = telemetry::tool_span(cx, call);
        let content = self.record_content;
        if chain.is_empty() {
            let arguments = call.arguments.clone();
            let recorded = span.clone();
            return async move {
                let shown = content.then(|| arguments.clone());
                let outcome = run(arguments).await;
                record(&recorded, shown.as_deref(), &outcome, content);
                outcome
            }
            .instrument(span)
            .boxed();
        }
        let hcx = HookContext::tool(cx.run_context(), call)
            .with_idempotent(idempotent)
            .with_session_only(session_only);
        let chain = chain.clone();
        let mut call = call.clone();
        let recorded = span.clone();
        async move {
            let (answer, ran) = match middleware::before_tool(&chain, &hcx, &mut call).await {
                Ok(done) => done,
                Err(error) => {
                    let error = ToolError::Middleware(error);
                    telemetry::record_tool_outcome(&recorded, "", Err(&error), false);
                    return Err(error);
                }
            };
            let outcome = match answer {
                Some(text) => Ok((text, None)),
                None => run(call.arguments.clone()).await,
            };
            record(&recorded, Some(&call.arguments), &outcome, content);
            let (mut text, action) = match outcome {
                Err(ToolError::Interrupted { .. }) => return outcome,
                Ok(done) => done,
                Err(error) => (error.to_model_text(), None),
            };
            if let Err(error) = middleware::after_tool(&chain, &hcx, ran, &mut text).await {
                let error = ToolError::Middleware(error);
                telemetry::record_tool_outcome(&recorded, "", Err(&error), false);
                return Err(error);
            }
            Ok((text, action))
        }
        .instrument(span)
        .boxed()
    }
}

fn record(span: &tracing::Span, arguments: Option<&str>, outcome: &CallOutcome, content: bool) {
    let outcome = match outcome {
        Ok((text, _)) => Ok(text.as_str()),
        Err(error) => Err(error),
    };
    telemetry::record_tool_outcome(span, arguments.unwrap_or(""), outcome, content);
}
