//! The checks A2A 1.0 asks of a request's parameters that a lenient reading would let through
//! (an unknown enum name reads as "unspecified", a missing field as its default): each refusal
//! is `-32602` with what was wrong and what is accepted.
//!
//! | parameters | refused |
//! | --- | --- |
//! | a `message` (`SendMessage`, `SendStreamingMessage`) | no `messageId`, or no `role`, or a role other than `ROLE_USER` |
//! | `ListTasks` | `pageSize` outside 1 to 100; `historyLength` below 0; a `status` that is not a task state; a `statusTimestampAfter` that is not RFC 3339 |
//! | `GetTask` | `historyLength` below 0 |

use agentweave_a2a::rpc::RpcError;
use chrono::{DateTime, FixedOffset};
use serde_json::Value;

/// The largest `ListTasks` page.
pub(crate) const MAX_PAGE: i64 = 100;

/// The task state names a `status` filter may carry (proto names, and the JSON names of
/// earlier versions).
const STATES: [&str; 17] = [
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
    "submitted",
    "working",
    "completed",
    "failed",
    "canceled",
    "input-required",
    "rejected",
    "auth-required",
];

fn invalid(message: String) -> RpcError {
    RpcError::InvalidParams(message)
}

/// The `message` of a send: it has a `messageId` and the role `ROLE_USER`.
pub(crate) fn message(params: &Value) -> Result<(), RpcError> {
    let Some(message) = params.get("message").filter(|m| m.is_object()) else {
        return Err(invalid(
            "the parameters have no \"message\" object: send {\"message\": {\"messageId\", \
             \"role\": \"ROLE_USER\", \"parts\": [...]}}"
                .into(),
        ));
    };
    match message.get("messageId").and_then(Value::as_str) {
        Some(id) if !id.trim().is_empty() => {}
        _ => {
            return Err(invalid(
                "the message has no \"messageId\": give every message a unique id (a UUID); \
                 the same id sent again is the same message"
                    .into(),
            ))
        }
    }
    match message.get("role").and_then(Value::as_str) {
        Some("ROLE_USER" | "user") => Ok(()),
        Some(other) => Err(invalid(format!(
            "the message's role is '{}': a client's message has the role \"ROLE_USER\"",
            other.chars().take(32).collect::<String>()
        ))),
        None => Err(invalid(
            "the message has no \"role\": a client's message has the role \"ROLE_USER\"".into(),
        )),
    }
}

/// A `historyLength`, when given, is 0 or more.
pub(crate) fn history_length(params: &Value) -> Result<(), RpcError> {
    match params.get("historyLength") {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_u64().is_some() => Ok(()),
        Some(v) => Err(invalid(format!(
            "historyLength is {v}: it is the number of recent messages to return, 0 or more \
             (leave it out for the whole history)"
        ))),
    }
}

/// `ListTasks`' parameters (see the module documentation). Returns the
/// `statusTimestampAfter` instant, if given.
pub(crate) fn list_tasks(params: &Value) -> Result<Option<DateTime<FixedOffset>>, RpcError> {
    match params.get("pageSize") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_i64() {
            Some(n) if (1..=MAX_PAGE).contains(&n) => {}
            _ => {
                return Err(invalid(format!(
                    "pageSize is {v}: a page holds 1 to {MAX_PAGE} tasks (leave it out for 50)"
                )))
            }
        },
    }
    history_length(params)?;
    match params.get("status") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if STATES.contains(&s.as_str()) => {}
        Some(v) => {
            return Err(invalid(format!(
                "status {} is not a task state: send one of TASK_STATE_SUBMITTED, \
                 TASK_STATE_WORKING, TASK_STATE_COMPLETED, TASK_STATE_FAILED, \
                 TASK_STATE_CANCELED, TASK_STATE_INPUT_REQUIRED, TASK_STATE_REJECTED, \
                 TASK_STATE_AUTH_REQUIRED, or none for every state",
                v.to_string().chars().take(48).collect::<String>()
            )))
        }
    }
    match params.get("statusTimestampAfter") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => timestamp(s).map(Some).ok_or_else(|| {
            invalid(format!(
                "statusTimestampAfter '{}' is not an RFC 3339 timestamp (for example \
                 2026-01-31T12:00:00Z)",
                s.chars().take(48).collect::<String>()
            ))
        }),
        Some(v) => Err(invalid(format!(
            "statusTimestampAfter is {v}: send an RFC 3339 timestamp as a string"
        ))),
    }
}

/// An RFC 3339 timestamp.
pub(crate) fn timestamp(s: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_tasks_refuses_pages_lengths_states_and_times_out_of_range() {
        for bad in [
            json!({"pageSize": 0}),
            json!({"pageSize": -1}),
            json!({"pageSize": 150}),
            json!({"pageSize": "ten"}),
            json!({"historyLength": -1}),
            json!({"status": "TASK_STATE_SLEEPING"}),
            json!({"statusTimestampAfter": "yesterday"}),
        ] {
            let e = list_tasks(&bad).unwrap_err();
            assert_eq!(e.code(), -32602, "{bad}");
        }
        assert!(list_tasks(
            &json!({"pageSize": 100, "historyLength": 0, "status": "TASK_STATE_COMPLETED"})
        )
        .unwrap()
        .is_none());
        let after = list_tasks(&json!({"statusTimestampAfter": "2026-01-31T12:00:00.5+01:00"}))
            .unwrap()
            .unwrap();
        assert_eq!(after.timestamp_millis(), 1_769_857_200_500);
    }

    #[test]
    fn a_message_needs_an_id_and_the_user_role() {
        let ok = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": []}});
        assert!(message(&ok).is_ok());
        for bad in [
            json!({"message": {"role": "ROLE_USER", "parts": []}}),
            json!({"message": {"messageId": "", "role": "ROLE_USER", "parts": []}}),
            json!({"message": {"messageId": "m1", "parts": []}}),
            json!({"message": {"messageId": "m1", "role": "ROLE_AGENT", "parts": []}}),
            json!({}),
        ] {
            assert_eq!(message(&bad).unwrap_err().code(), -32602, "{bad}");
        }
    }
}
