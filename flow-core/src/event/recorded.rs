//! [`RecordedEvent`]: an event as stores keep it (in checkpoints and thread records).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Action;
use crate::message::Message;
use crate::run_path::RunPath;

/// One recorded event as a checkpoint stores it (streams materialised).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// The agent that emitted it.
    pub agent_name: Arc<str>,
    /// Where.
    pub run_path: RunPath,
    /// Its message, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Its action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
}
