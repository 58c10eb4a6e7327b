//! JSON-RPC 2.0 as A2A uses it: one request per HTTP `POST`, the answer a JSON-RPC response
//! (HTTP 200 even for errors) or, for the streaming methods, Server-Sent Events whose `data`
//! are JSON-RPC responses carrying a [`StreamResponse`](crate::wire::StreamResponse).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The method names of A2A v1.0's JSON-RPC binding.
pub mod method {
    /// Send a message; the answer is a task or a message.
    pub const SEND_MESSAGE: &str = "SendMessage";
    /// Send a message; the answer streams.
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    /// A task as it is now.
    pub const GET_TASK: &str = "GetTask";
    /// Cancel a task.
    pub const CANCEL_TASK: &str = "CancelTask";
    /// Stream a running task's updates again.
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    /// List tasks.
    pub const LIST_TASKS: &str = "ListTasks";
    /// Set a webhook of a task.
    pub const CREATE_PUSH_CONFIG: &str = "CreateTaskPushNotificationConfig";
    /// One webhook of a task.
    pub const GET_PUSH_CONFIG: &str = "GetTaskPushNotificationConfig";
    /// The webhooks of a task.
    pub const LIST_PUSH_CONFIGS: &str = "ListTaskPushNotificationConfigs";
    /// Delete a webhook of a task.
    pub const DELETE_PUSH_CONFIG: &str = "DeleteTaskPushNotificationConfig";
}

/// A JSON-RPC request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The request's id (a string, a number or null), echoed in the response.
    #[serde(default)]
    pub id: Value,
    /// The method.
    pub method: String,
    /// Its parameters.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
}

impl Request {
    /// A request of `method` with `params` and id `id`.
    pub fn new(id: impl Into<Value>, method: &str, params: impl Serialize) -> Self {
        Request {
            jsonrpc: "2.0".into(),
            id: id.into(),
            method: method.into(),
            params: serde_json::to_value(params).unwrap_or(Value::Null),
        }
    }
}

/// A JSON-RPC response: a `result` or an `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The request's id.
    #[serde(default)]
    pub id: Value,
    /// The result, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl Response {
    /// A success.
    pub fn ok(id: Value, result: impl Serialize) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: Some(serde_json::to_value(result).unwrap_or(Value::Null)),
            error: None,
        }
    }

    /// A failure.
    pub fn err(id: Value, error: &RpcError) -> Self {
        Response {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(error.to_object()),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The code (see [`RpcError::code`]).
    pub code: i64,
    /// What happened, for a person.
    #[serde(default)]
    pub message: String,
    /// More, for a program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Every A2A and JSON-RPC error, each with its code. The message says what happened and what
/// to do; it never carries internal detail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// The body is not JSON (-32700).
    #[error("the request is not JSON: {0}")]
    Parse(String),
    /// The body is JSON but not a JSON-RPC 2.0 request (-32600).
    #[error("{0}")]
    InvalidRequest(String),
    /// The caller may not do this: a scope it lacks, its own approval, a read without `read`
    /// (-32600, sent with HTTP `403 Forbidden` and `data.code` `"forbidden"`).
    #[error("{0}")]
    Forbidden(String),
    /// No such method (-32601).
    #[error("no method '{0}': this agent speaks A2A 1.0 (SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask)")]
    MethodNotFound(String),
    /// The parameters are wrong (-32602).
    #[error("{0}")]
    InvalidParams(String),
    /// The agent failed (-32603).
    #[error("{0}")]
    Internal(String),
    /// No such task, or not the caller's (-32001).
    #[error("{0}")]
    TaskNotFound(String),
    /// The task cannot be cancelled (-32002).
    #[error("{0}")]
    TaskNotCancelable(String),
    /// Push notifications are not supported (-32003).
    #[error("this agent sends no push notifications; stream the task or poll it with GetTask")]
    PushNotificationNotSupported,
    /// The operation is not supported (-32004).
    #[error("{0}")]
    UnsupportedOperation(String),
    /// A part's media type is not supported (-32005).
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// The agent answered something that is not A2A (-32006).
    #[error("{0}")]
    InvalidAgentResponse(String),
    /// The protocol version the request speaks is not supported (-32009).
    #[error(
        "A2A version '{0}' is not supported here: this agent speaks 1.0 (send `A2A-Version: 1.0`)"
    )]
    VersionNotSupported(String),
    /// An error with a code this crate does not know (from a peer).
    #[error("error {code}: {message}")]
    Other {
        /// The code.
        code: i64,
        /// The message.
        message: String,
    },
}

impl RpcError {
    /// Its JSON-RPC code.
    pub fn code(&self) -> i64 {
        match self {
            RpcError::Parse(_) => -32700,
            RpcError::InvalidRequest(_) | RpcError::Forbidden(_) => -32600,
            RpcError::MethodNotFound(_) => -32601,
            RpcError::InvalidParams(_) => -32602,
            RpcError::Internal(_) => -32603,
            RpcError::TaskNotFound(_) => -32001,
            RpcError::TaskNotCancelable(_) => -32002,
            RpcError::PushNotificationNotSupported => -32003,
            RpcError::UnsupportedOperation(_) => -32004,
            RpcError::ContentTypeNotSupported(_) => -32005,
            RpcError::InvalidAgentResponse(_) => -32006,
            RpcError::VersionNotSupported(_) => -32009,
            RpcError::Other { code, .. } => *code,
        }
    }

    /// The error object sent for it (a refusal carries its public code in `data.code`).
    pub fn to_object(&self) -> ErrorObject {
        ErrorObject {
            code: self.code(),
            message: self.to_string(),
            data: matches!(self, RpcError::Forbidden(_))
                .then(|| serde_json::json!({ "code": "forbidden" })),
        }
    }

    /// The HTTP status a JSON-RPC response carrying this error is sent with: `403` for a
    /// refusal of the caller's authority, `200` for every other error (JSON-RPC's rule).
    pub fn http_status(&self) -> u16 {
        match self {
            RpcError::Forbidden(_) => 403,
            _ => 200,
        }
    }

    /// The error a peer's error object stands for.
    pub fn from_object(object: &ErrorObject) -> Self {
        let m = object.message.clone();
        match object.code {
            -32700 => RpcError::Parse(m),
            -32600
                if object
                    .data
                    .as_ref()
                    .and_then(|d| d.get("code"))
                    .is_some_and(|c| c == "forbidden") =>
            {
                RpcError::Forbidden(m)
            }
            -32600 => RpcError::InvalidRequest(m),
            -32601 => RpcError::MethodNotFound(m),
            -32602 => RpcError::InvalidParams(m),
            -32603 => RpcError::Internal(m),
            -32001 => RpcError::TaskNotFound(m),
            -32002 => RpcError::TaskNotCancelable(m),
            -32003 => RpcError::PushNotificationNotSupported,
            -32004 => RpcError::UnsupportedOperation(m),
            -32005 => RpcError::ContentTypeNotSupported(m),
            -32006 => RpcError::InvalidAgentResponse(m),
            -32009 => RpcError::VersionNotSupported(m),
            code => RpcError::Other { code, message: m },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_error_keeps_its_code_through_the_wire() {
        let errors = [
            RpcError::Parse("x".into()),
            RpcError::InvalidRequest("x".into()),
            RpcError::MethodNotFound("x".into()),
            RpcError::InvalidParams("x".into()),
            RpcError::Internal("x".into()),
            RpcError::TaskNotFound("x".into()),
            RpcError::TaskNotCancelable("x".into()),
            RpcError::PushNotificationNotSupported,
            RpcError::UnsupportedOperation("x".into()),
            RpcError::ContentTypeNotSupported("x".into()),
            RpcError::InvalidAgentResponse("x".into()),
            RpcError::VersionNotSupported("x".into()),
        ];
        let codes: Vec<i64> = errors.iter().map(RpcError::code).collect();
        assert_eq!(
            codes,
            [
                -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32005,
                -32006, -32009
            ]
        );
        for e in &errors {
            let wire = serde_json::to_value(Response::err(json!(1), e)).unwrap();
            let back: Response = serde_json::from_value(wire).unwrap();
            assert_eq!(RpcError::from_object(&back.error.unwrap()).code(), e.code());
        }
        let other = RpcError::from_object(&ErrorObject {
            code: -31000,
            message: "m".into(),
            data: None,
        });
        assert_eq!(other.code(), -31000);
    }

    #[test]
    fn a_request_is_jsonrpc_2() {
        let r = Request::new("a", method::GET_TASK, json!({"id": "t"}));
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            json!({"jsonrpc": "2.0", "id": "a", "method": "GetTask", "params": {"id": "t"}})
        );
    }
}
