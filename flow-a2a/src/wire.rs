//! The A2A v1.0 objects in their JSON form.
//!
//! The specification defines its objects in protobuf and their JSON as ProtoJSON: fields in
//! camelCase, enums by name (`TASK_STATE_COMPLETED`, `ROLE_USER`), empty fields left out. Every
//! type here writes that form and reads it leniently: unknown fields are ignored, missing ones
//! take their default, an unknown enum name reads as `Unspecified` (as the official SDKs do).
//! Task states and roles also read the lowercase names of protocol version 0.3
//! (`input-required`, `user`).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Whether a vector is empty (for `skip_serializing_if`).
fn is_empty<T>(v: &[T]) -> bool {
    v.is_empty()
}

/// Whether a string is empty (for `skip_serializing_if`).
fn is_blank(s: &str) -> bool {
    s.is_empty()
}

/// Whether a flag is off (for `skip_serializing_if`).
fn is_false(b: &bool) -> bool {
    !*b
}

/// What an agent publishes about itself at `/.well-known/agent-card.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What it does, for people and for other agents choosing whom to ask.
    pub description: String,
    /// Where and how it is reached (the first is the preferred one).
    #[serde(skip_serializing_if = "is_empty")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    pub version: String,
    /// Where its documentation is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// What the agent can do beyond the basics.
    pub capabilities: AgentCapabilities,
    /// The authentication schemes it takes, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes a caller must satisfy (any one of the list).
    #[serde(skip_serializing_if = "is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// The media types it reads.
    #[serde(skip_serializing_if = "is_empty")]
    pub default_input_modes: Vec<String>,
    /// The media types it writes.
    #[serde(skip_serializing_if = "is_empty")]
    pub default_output_modes: Vec<String>,
    /// What it is good at.
    #[serde(skip_serializing_if = "is_empty")]
    pub skills: Vec<AgentSkill>,
}

/// One way to reach an agent: a URL and the protocol binding spoken there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub protocol_binding: String,
    /// The tenant to name in requests, if the endpoint serves several.
    #[serde(skip_serializing_if = "is_blank")]
    pub tenant: String,
    /// The A2A version spoken there (`1.0`).
    #[serde(skip_serializing_if = "is_blank")]
    pub protocol_version: String,
}

/// Who runs an agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AgentProvider {
    /// The provider's web site.
    pub url: String,
    /// The provider's name.
    pub organization: String,
}

/// What an agent can do beyond the basics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// It streams (`SendStreamingMessage`, `SubscribeToTask`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// It posts task updates to a webhook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// It has a fuller card for authenticated callers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// One skill of an agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AgentSkill {
    /// Its id, unique in the card.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    #[serde(skip_serializing_if = "is_empty")]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(skip_serializing_if = "is_empty")]
    pub examples: Vec<String>,
}

/// An authentication scheme (only the kinds agentflow serves are typed; others read as empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SecurityScheme {
    /// HTTP authentication (`Authorization: Bearer ...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_auth_security_scheme: Option<HttpAuthSecurityScheme>,
    /// An API key in a header, query parameter or cookie.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_security_scheme: Option<ApiKeySecurityScheme>,
}

/// HTTP authentication, such as a bearer token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// What it is.
    #[serde(skip_serializing_if = "is_blank")]
    pub description: String,
    /// The scheme (`Bearer`).
    pub scheme: String,
    /// The token's format, as a hint.
    #[serde(skip_serializing_if = "is_blank")]
    pub bearer_format: String,
}

/// An API key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// What it is.
    #[serde(skip_serializing_if = "is_blank")]
    pub description: String,
    /// `header`, `query` or `cookie`.
    pub location: String,
    /// The header, parameter or cookie name.
    pub name: String,
}

/// The schemes a caller must satisfy together, by name, with the scopes each needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SecurityRequirement {
    /// Scheme name -> scopes.
    pub schemes: BTreeMap<String, StringList>,
}

/// A list of strings (ProtoJSON's wrapper for a repeated field inside a map).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StringList {
    /// The strings.
    #[serde(skip_serializing_if = "is_empty")]
    pub list: Vec<String>,
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// The client (a person, or the agent calling).
    #[serde(rename = "ROLE_USER", alias = "user")]
    User,
    /// The agent answering.
    #[serde(rename = "ROLE_AGENT", alias = "agent")]
    Agent,
    /// Not said (also any name this version does not know).
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED", other)]
    Unspecified,
}

/// One message of a conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Message {
    /// Its id, chosen by its sender.
    pub message_id: String,
    /// The conversation it belongs to.
    #[serde(skip_serializing_if = "is_blank")]
    pub context_id: String,
    /// The task it belongs to.
    #[serde(skip_serializing_if = "is_blank")]
    pub task_id: String,
    /// Who sent it.
    pub role: Role,
    /// Its content.
    pub parts: Vec<Part>,
    /// Anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Tasks it refers to.
    #[serde(skip_serializing_if = "is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// The text of its text parts, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect();
        texts.join("\n")
    }

    /// The value of its first data part.
    pub fn data(&self) -> Option<&Value> {
        self.parts.iter().find_map(|p| p.data.as_ref())
    }
}

/// One piece of a message or an artifact: text, structured data, a file's bytes or a URL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A file by URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured data (any JSON value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Anything else about the part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A file name.
    #[serde(skip_serializing_if = "is_blank")]
    pub filename: String,
    /// The media type.
    #[serde(skip_serializing_if = "is_blank")]
    pub media_type: String,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A data part.
    pub fn data(data: Value) -> Self {
        Part {
            data: Some(data),
            ..Part::default()
        }
    }
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    /// Received, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED", alias = "submitted")]
    Submitted,
    /// Running.
    #[serde(rename = "TASK_STATE_WORKING", alias = "working")]
    Working,
    /// Ended with an answer (final).
    #[serde(rename = "TASK_STATE_COMPLETED", alias = "completed")]
    Completed,
    /// Ended in an error (final).
    #[serde(rename = "TASK_STATE_FAILED", alias = "failed")]
    Failed,
    /// Cancelled by the client (final).
    #[serde(rename = "TASK_STATE_CANCELED", alias = "canceled")]
    Canceled,
    /// Waits for the client's next message.
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED", alias = "input-required")]
    InputRequired,
    /// Refused by the agent (final).
    #[serde(rename = "TASK_STATE_REJECTED", alias = "rejected")]
    Rejected,
    /// Waits for the client to authenticate.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED", alias = "auth-required")]
    AuthRequired,
    /// Not said (also any name this version does not know).
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED", other)]
    Unspecified,
}

impl TaskState {
    /// Whether the task can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Whether a stream of the task ends here: a final state, or one waiting on the client.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// A task's state, with the agent's message about it and when it was reached.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// What the agent says about it (its question when input is required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When, as RFC 3339 text in UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status reached now.
    pub fn now(state: TaskState, message: Option<Message>) -> Self {
        TaskStatus {
            state,
            message,
            timestamp: Some(rfc3339_now()),
        }
    }
}

/// One unit of work an agent does for a client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Task {
    /// Its id, chosen by the agent.
    pub id: String,
    /// The conversation it belongs to.
    pub context_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What it produced.
    #[serde(skip_serializing_if = "is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged in it.
    #[serde(skip_serializing_if = "is_empty")]
    pub history: Vec<Message>,
    /// Anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Something a task produced: its answer, a structured result, a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Artifact {
    /// Its id, unique in the task.
    pub artifact_id: String,
    /// Its name.
    #[serde(skip_serializing_if = "is_blank")]
    pub name: String,
    /// What it is.
    #[serde(skip_serializing_if = "is_blank")]
    pub description: String,
    /// Its content.
    pub parts: Vec<Part>,
    /// Anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task's new status, streamed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// An artifact (or a piece of one), streamed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The artifact or its piece.
    pub artifact: Artifact,
    /// Whether this piece extends an artifact sent before.
    #[serde(skip_serializing_if = "is_false")]
    pub append: bool,
    /// Whether this is the artifact's last piece.
    #[serde(skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    /// Anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One event of a stream (`SendStreamingMessage`, `SubscribeToTask`): exactly one field is
/// set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StreamResponse {
    /// The task as it is now (a stream's first event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    /// A message that is the whole answer (no task).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// A status change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_update: Option<TaskStatusUpdateEvent>,
    /// An artifact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_update: Option<TaskArtifactUpdateEvent>,
}

impl StreamResponse {
    /// An event carrying `task`.
    pub fn task(task: Task) -> Self {
        StreamResponse {
            task: Some(task),
            ..StreamResponse::default()
        }
    }

    /// An event carrying a status change.
    pub fn status(update: TaskStatusUpdateEvent) -> Self {
        StreamResponse {
            status_update: Some(update),
            ..StreamResponse::default()
        }
    }

    /// An event carrying an artifact.
    pub fn artifact(update: TaskArtifactUpdateEvent) -> Self {
        StreamResponse {
            artifact_update: Some(update),
            ..StreamResponse::default()
        }
    }
}

/// `SendMessage` and `SendStreamingMessage`'s parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant, for endpoints serving several.
    #[serde(skip_serializing_if = "is_blank")]
    pub tenant: String,
    /// The message.
    pub message: Message,
    /// How to answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// How the agent should answer a `SendMessage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// The media types the client takes.
    #[serde(skip_serializing_if = "is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// Where the task's push notifications go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many messages of the task's history to return.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Answer at once with the task, without waiting for it to end or wait for input.
    #[serde(skip_serializing_if = "is_false")]
    pub return_immediately: bool,
}

/// `SendMessage`'s result: a task, or a message that is the whole answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SendMessageResponse {
    /// The task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    /// The message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
}

/// `ListTasks`' parameters: which tasks, and which page of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant, for endpoints serving several.
    #[serde(skip_serializing_if = "is_blank")]
    pub tenant: String,
    /// Only the tasks of this context.
    #[serde(skip_serializing_if = "is_blank")]
    pub context_id: String,
    /// Only the tasks in this state (`Unspecified`: any).
    pub status: TaskState,
    /// How many tasks a page holds (the server bounds it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// The page to return: a `nextPageToken` of an earlier answer.
    #[serde(skip_serializing_if = "is_blank")]
    pub page_token: String,
    /// How many messages of each task's history to return.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Whether to return the tasks' artifacts.
    #[serde(skip_serializing_if = "is_false")]
    pub include_artifacts: bool,
    /// Only the tasks whose status changed after this instant (RFC 3339 text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
}

/// `ListTasks`' result: one page of tasks, most recently updated first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The tasks of the page.
    pub tasks: Vec<Task>,
    /// The token of the next page; empty on the last one.
    pub next_page_token: String,
    /// The page size used.
    pub page_size: i32,
    /// How many tasks match, over all pages.
    pub total_size: i32,
}

/// Where a task's push notifications go (`TaskPushNotificationConfig`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The tenant, for endpoints serving several.
    #[serde(skip_serializing_if = "is_blank")]
    pub tenant: String,
    /// The configuration's id (the server names it if the client does not).
    pub id: String,
    /// The task it is for.
    pub task_id: String,
    /// The webhook URL the task's updates are posted to.
    pub url: String,
    /// A token the client chose, sent back with each notification.
    #[serde(skip_serializing_if = "is_blank")]
    pub token: String,
    /// How the server authenticates to the webhook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// How a server authenticates to a push-notification webhook.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The scheme (`Bearer`, ...).
    pub scheme: String,
    /// The credentials for it.
    #[serde(skip_serializing_if = "is_blank")]
    pub credentials: String,
}

/// The parameters naming one push-notification configuration of a task (`Get...`,
/// `Delete...`), or all of them (`List...`, without `id`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PushConfigParams {
    /// The tenant, for endpoints serving several.
    #[serde(skip_serializing_if = "is_blank")]
    pub tenant: String,
    /// The task.
    pub task_id: String,
    /// The configuration.
    #[serde(skip_serializing_if = "is_blank")]
    pub id: String,
}

/// `ListTaskPushNotificationConfigs`' result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ListPushConfigsResponse {
    /// The task's configurations.
    pub configs: Vec<TaskPushNotificationConfig>,
    /// The token of the next page; empty on the last one.
    pub next_page_token: String,
}

/// `GetTask`, `CancelTask` and `SubscribeToTask`'s parameters: a task id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The tenant, for endpoints serving several.
    #[serde(skip_serializing_if = "is_blank")]
    pub tenant: String,
    /// The task.
    pub id: String,
    /// How many messages of the task's history to return (`GetTask`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
}

/// The current time as RFC 3339 text in UTC with milliseconds (`2026-01-31T12:00:00.000Z`).
pub fn rfc3339_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_millis() as u64)
}

/// `ms` milliseconds after the Unix epoch as RFC 3339 text in UTC, with milliseconds
/// (`1970-01-01T00:00:00.000Z`). A time past chrono's range (year 262,143) is written as its
/// last representable instant.
pub fn rfc3339(ms: u64) -> String {
    let at = i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_states_write_the_v1_names_and_read_the_v03_ones() {
        assert_eq!(
            serde_json::to_value(TaskState::InputRequired).unwrap(),
            json!("TASK_STATE_INPUT_REQUIRED")
        );
        let old: TaskState = serde_json::from_value(json!("input-required")).unwrap();
        assert_eq!(old, TaskState::InputRequired);
        let unknown: TaskState = serde_json::from_value(json!("TASK_STATE_DREAMING")).unwrap();
        assert_eq!(unknown, TaskState::Unspecified);
        assert!(TaskState::Canceled.is_terminal());
        assert!(!TaskState::InputRequired.is_terminal());
        assert!(TaskState::InputRequired.ends_stream());
    }

    #[test]
    fn a_stream_event_is_protojson() {
        let event = StreamResponse::status(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: Some(Message {
                    message_id: "m".into(),
                    role: Role::Agent,
                    parts: vec![Part::text("hi"), Part::data(json!({"a": 1}))],
                    ..Message::default()
                }),
                timestamp: None,
            },
            metadata: None,
        });
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {
                "state": "TASK_STATE_WORKING",
                "message": {"messageId": "m", "role": "ROLE_AGENT",
                            "parts": [{"text": "hi"}, {"data": {"a": 1}}]}}}})
        );
    }

    #[test]
    fn reading_ignores_unknown_fields_and_fills_defaults() {
        let m: Message = serde_json::from_value(json!({
            "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"text": "b"}],
            "extensions": ["x"], "somethingNew": true
        }))
        .unwrap();
        assert_eq!(m.text(), "a\nb");
        assert_eq!(m.context_id, "");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
