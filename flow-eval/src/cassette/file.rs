//! The cassette file: what it holds ([`CassetteFile`]), how it is read and written, and how
//! reading it fails ([`CassetteError`]).

use std::path::{Path, PathBuf};

use agentweave_runtime::model::{ModelParams, ToolDefinition};
use agentweave_runtime::{ChatRequest, Message, ModelError};
use serde::{Deserialize, Serialize};

/// The format version this crate writes and reads (the file's `agentflow_cassette` field).
pub const CASSETTE_FORMAT: u32 = 1;

/// A cassette as stored: pretty-printed JSON, one interaction after another in the order they
/// completed.
///
/// ```json
/// {
///   "agentflow_cassette": 1,
///   "flow": { "shape": "triage(refund,complaint)", "fingerprint": "9c0d…" },
///   "interactions": [
///     { "model": { "name": "gpt-4o-mini", "request": { "messages": [ … ] },
///                  "response": { "message": { "role": "assistant", "content": "…" } } } },
///     { "tool": { "name": "lookup_order", "agent": "desk/refund",
///                 "arguments": { "order_id": 42 }, "result": { "ok": "order 42: …" } } }
///   ]
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteFile {
    /// The format version ([`CASSETTE_FORMAT`]).
    pub agentflow_cassette: u32,
    /// The flow the cassette was recorded with, if it was attached to one
    /// ([`Cassette::check_flow`](super::Cassette::check_flow)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowStamp>,
    /// What was asked and answered, in the order the answers completed.
    #[serde(default)]
    pub interactions: Vec<Interaction>,
    /// The definitions of the tools of each named toolset fetched live when recording (an MCP
    /// server's, see [`Cassette::record_toolset`](super::Cassette::record_toolset)): replaying
    /// makes the tools from them, without the server.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub toolsets: std::collections::BTreeMap<String, Vec<ToolDefinition>>,
}

impl Default for CassetteFile {
    fn default() -> Self {
        CassetteFile {
            agentflow_cassette: CASSETTE_FORMAT,
            flow: None,
            interactions: Vec::new(),
            toolsets: std::collections::BTreeMap::new(),
        }
    }
}

/// Which flow a cassette belongs to: the tree's shape and its fingerprint
/// ([`FlowAgent::shape`](agentweave_runtime::FlowAgent::shape)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowStamp {
    /// The tree's shape, e.g. `triage(refund,complaint)`.
    pub shape: String,
    /// Its fingerprint, in hex.
    pub fingerprint: String,
}

/// One recorded exchange: a model call or a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interaction {
    /// A model was asked and answered (boxed: the larger kind).
    Model(Box<ModelInteraction>),
    /// A tool was called and answered.
    Tool(ToolInteraction),
}

/// A model call: the model's name, the request, the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInteraction {
    /// The model's name ([`ChatModel::model_name`](agentweave_runtime::ChatModel::model_name)).
    pub name: String,
    /// What it was asked.
    pub request: RecordedRequest,
    /// What it answered.
    pub response: RecordedResponse,
}

/// A [`ChatRequest`] as recorded: plain data, compared field by field on replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRequest {
    /// The conversation sent.
    pub messages: Vec<Message>,
    /// The tools offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// The schema the answer had to match, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<RecordedSchema>,
    /// Sampling parameters that were set.
    #[serde(default, skip_serializing_if = "ModelParams::is_empty")]
    pub params: ModelParams,
}

impl RecordedRequest {
    /// The recorded form of `request`.
    pub fn of(request: &ChatRequest) -> Self {
        RecordedRequest {
            messages: request.messages.iter().map(|m| (**m).clone()).collect(),
            tools: request.tools.to_vec(),
            output_schema: request.output_schema.as_ref().map(|s| RecordedSchema {
                name: s.name.clone(),
                schema: s.schema.clone(),
                strict: s.strict,
            }),
            params: request.params.clone(),
        }
    }
}

/// The output schema of a recorded request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedSchema {
    /// The schema's name.
    pub name: String,
    /// The JSON Schema.
    pub schema: serde_json::Value,
    /// Whether strict mode was asked.
    #[serde(default)]
    pub strict: bool,
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedResponse {
    /// A whole message ([`ChatModel::generate`](agentweave_runtime::ChatModel::generate)).
    Message(Message),
    /// Streamed chunks ([`ChatModel::stream`](agentweave_runtime::ChatModel::stream)), and the
    /// error that broke the stream off, if one did.
    Stream {
        /// The chunks, in order.
        chunks: Vec<Message>,
        /// The error that ended the stream part-way.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<RecordedError>,
    },
    /// The call failed before answering.
    Error(RecordedError),
}

impl RecordedResponse {
    /// The whole answer: the message, or the chunks concatenated; the recorded error if the call
    /// or its stream failed.
    pub fn whole(&self, model: &str) -> Result<Message, ModelError> {
        match self {
            RecordedResponse::Message(m) => Ok(m.clone()),
            RecordedResponse::Stream { chunks, error } => match error {
                Some(e) => Err(e.to_model_error(model)),
                None => Ok(Message::concat(chunks)),
            },
            RecordedResponse::Error(e) => Err(e.to_model_error(model)),
        }
    }
}

/// A model error as recorded: its text, whether it was retryable, its HTTP status if it was
/// an HTTP error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedError {
    /// The error's text.
    pub message: String,
    /// Whether trying again could help.
    #[serde(default)]
    pub retryable: bool,
    /// The HTTP status, for an HTTP error answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl RecordedError {
    /// The recorded form of `error`.
    pub fn of(error: &ModelError) -> Self {
        let status = match error {
            ModelError::Http { status, .. } => Some(*status),
            _ => None,
        };
        let message = match error {
            ModelError::Http { body, .. } => body.to_string(),
            other => other.to_string(),
        };
        RecordedError {
            message,
            retryable: error.retryable(),
            status,
        }
    }

    /// The error replayed: an HTTP error with its status, or [`ModelError::Other`].
    pub fn to_model_error(&self, model: &str) -> ModelError {
        match self.status {
            Some(status) => ModelError::http(model, status, &self.message),
            None => ModelError::other(model, self.message.as_str(), self.retryable),
        }
    }
}

/// A tool call: the tool, the agent that called it, the arguments, the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolInteraction {
    /// The tool's name.
    pub name: String,
    /// The run path of the agent that called it (informative; not matched).
    #[serde(default)]
    pub agent: String,
    /// The arguments: their JSON, or the text as the model wrote it when it is not JSON.
    pub arguments: serde_json::Value,
    /// What the tool answered.
    pub result: ToolResult,
}

/// A tool's answer as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResult {
    /// The result text.
    Ok(String),
    /// The tool failed: the message the model was given.
    Failed(String),
    /// The arguments were refused: the message the model was given.
    InvalidArguments(String),
}

/// The arguments of a tool call as a cassette keeps them: their JSON, or the text itself.
pub(crate) fn arguments_value(arguments: &str) -> serde_json::Value {
    if arguments.trim().is_empty() {
        return serde_json::json!({});
    }
    serde_json::from_str(arguments)
        .unwrap_or_else(|_| serde_json::Value::String(arguments.to_owned()))
}

/// Why a cassette could not be read or written, or does not belong here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be read (most often: it was never recorded).
    #[error(
        "cassette {}: cannot read it ({source}); record it by running the test with \
         AGENTFLOW_RECORD=1", path.display()
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a cassette: not JSON, or a field of the wrong shape.
    #[error(
        "cassette {}, line {line}, column {column}: field `{field}`: {message}; fix the file \
         or record it again with AGENTFLOW_RECORD=1", path.display()
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line (1-based) where reading stopped.
        line: usize,
        /// The column (1-based).
        column: usize,
        /// The path of the field, e.g. `interactions[2].model.response`.
        field: String,
        /// What was wrong.
        message: String,
    },
    /// The file was written by another version of the format.
    #[error(
        "cassette {}: format version {found}, this agentflow reads version {CASSETTE_FORMAT}; \
         record it again with AGENTFLOW_RECORD=1", path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        found: u32,
    },
    /// The cassette was recorded with another flow than the one it is used with.
    #[error(
        "cassette {} was recorded for another flow: it was recorded with `{recorded}`, this \
         flow is `{current}`; record it again with AGENTFLOW_RECORD=1 if the flow changed on \
         purpose", path.display()
    )]
    OtherFlow {
        /// The file.
        path: PathBuf,
        /// The shape it was recorded with.
        recorded: String,
        /// The shape of the flow it is used with.
        current: String,
    },
    /// A replayed toolset the cassette has no definitions for: it was recorded before the
    /// toolset was added (or under another name).
    #[error(
        "cassette {} recorded no toolset '{name}' (it recorded: {}); record it again with \
         AGENTFLOW_RECORD=1 (the toolset is fetched live then, and its tools' definitions are \
         kept for replay)", path.display(),
        if recorded.is_empty() { "none".to_owned() } else { recorded.join(", ") }
    )]
    NoToolset {
        /// The file.
        path: PathBuf,
        /// The toolset asked for.
        name: String,
        /// The toolsets it recorded.
        recorded: Vec<String>,
    },
    /// The file could not be written.
    #[error("cassette {}: cannot write it: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// Reads JSON text as `T`, naming the file, line, column and field of the first error.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<T, crate::JsonFieldError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        crate::JsonFieldError {
            line: inner.line(),
            column: inner.column(),
            field: if field == "." {
                "(top level)".into()
            } else {
                field
            },
            message: strip_position(&inner.to_string()),
        }
    })?;
    de.end().map_err(|e| crate::JsonFieldError {
        line: e.line(),
        column: e.column(),
        field: "(top level)".into(),
        message: strip_position(&e.to_string()),
    })?;
    Ok(value)
}

/// serde_json's message without its own ` at line L column C` (the error says it apart).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

impl CassetteFile {
    /// Reads the cassette at `path`.
    pub fn read(path: &Path) -> Result<CassetteFile, CassetteError> {
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Reads a cassette from `text` (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<CassetteFile, CassetteError> {
        // The version first, so a file of another version says so rather than failing on a
        // field it does not know.
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(text) {
            if let Some(found) = map.get("agentflow_cassette").and_then(|v| v.as_u64()) {
                if found != u64::from(CASSETTE_FORMAT) {
                    return Err(CassetteError::Version {
                        path: path.to_owned(),
                        found: found as u32,
                    });
                }
            }
        }
        parse_json(text).map_err(|e| CassetteError::Malformed {
            path: path.to_owned(),
            line: e.line,
            column: e.column,
            field: e.field,
            message: e.message,
        })
    }

    /// Writes the cassette to `path` (pretty JSON, ending with a newline), making its folder
    /// if needed.
    pub fn write(&self, path: &Path) -> Result<(), CassetteError> {
        let write_err = |source| CassetteError::Write {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(write_err)?;
        }
        let mut text = serde_json::to_string_pretty(self).expect("a cassette serialises");
        text.push('\n');
        std::fs::write(path, text).map_err(write_err)
    }
}
