//! The model and tool activities: each finds the calling agent in the worker's flows and calls
//! its real model or tool (see [`crate::flows`]).

use std::sync::Arc;

use flow_core::Message;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::ApplicationFailure;

use crate::effects::{ModelCall, ToolCallInput, ToolOutcome};
use crate::flows::{call_model, call_tool, Flows, LookupError};
use crate::policy::ModelFailure;

/// The activities of a worker, over its flows.
#[derive(Debug, Clone)]
pub struct AgentflowActivities {
    flows: Flows,
}

impl AgentflowActivities {
    /// The activities of `flows`.
    pub fn new(flows: Flows) -> Self {
        AgentflowActivities { flows }
    }
}

fn lookup_failure(e: LookupError) -> ActivityError {
    ApplicationFailure::builder(e)
        .type_name("AgentflowLookup".to_owned())
        .non_retryable(true)
        .build()
        .into()
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Text(String);

#[activities]
impl AgentflowActivities {
    /// A model call: the calling agent's model answers the request. A failure that another
    /// attempt may fix (429, 5xx, a lost connection) is retried with backoff; another is not.
    #[activity(name = crate::policy::MODEL_ACTIVITY)]
    pub async fn model(
        self: Arc<Self>,
        _ctx: ActivityContext,
        call: ModelCall,
    ) -> Result<Message, ActivityError> {
        match call_model(&self.flows, &call)
            .await
            .map_err(lookup_failure)?
        {
            Ok(reply) => Ok(reply),
            Err(e) => {
                let failure = ModelFailure::of(&e);
                Err(ApplicationFailure::builder(Text(failure.message))
                    .type_name("ModelError".to_owned())
                    .non_retryable(!failure.retryable)
                    .build()
                    .into())
            }
        }
    }

    /// A tool call: the calling agent's tool runs, under the call's idempotency key.
    #[activity(name = crate::policy::TOOL_ACTIVITY)]
    pub async fn tool(
        self: Arc<Self>,
        _ctx: ActivityContext,
        call: ToolCallInput,
    ) -> Result<ToolOutcome, ActivityError> {
        call_tool(&self.flows, &call).await.map_err(lookup_failure)
    }
}
