//! When a request matches a recorded one ([`MatchPolicy`]), and how two differ ([`Diff`]).

use std::fmt;

use serde_json::Value;

/// How a replayed request is compared with the recorded ones.
///
/// Both are compared as their recorded JSON form (see
/// [`RecordedRequest`](super::RecordedRequest)): `messages` (each with `role`, `content`,
/// `tool_calls`, `tool_call_id`, `tool_name`, `parts`, `usage`), `tools` (`name`,
/// `description`, `parameters`), `output_schema` and `params`. JSON objects compare without
/// regard to key order.
///
/// - [`MatchPolicy::exact`] (the default): every field must be equal.
/// - [`MatchPolicy::ignoring`]: the named fields are left out on both sides first. A name is
///   a path of object keys joined by dots, applied under every array element on the way:
///   `params` ignores the sampling parameters, `params.temperature` only the temperature,
///   `tools.description` the tools' descriptions, `messages.content` the text of every
///   message (keeping roles and tool calls), `messages.usage` the usage recorded on replies.
///
/// ```
/// use agentweave_eval::cassette::MatchPolicy;
/// use serde_json::json;
///
/// let policy = MatchPolicy::ignoring(["params.temperature", "tools.description"]);
/// let recorded = json!({"messages": [], "params": {"temperature": 0.2},
///                       "tools": [{"name": "t", "description": "old"}]});
/// let now = json!({"messages": [], "params": {"temperature": 0.9},
///                  "tools": [{"name": "t", "description": "new"}]});
/// assert!(policy.diff(&recorded, &now).is_empty());
/// assert!(!MatchPolicy::exact().diff(&recorded, &now).is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchPolicy {
    ignored: Vec<Vec<String>>,
}

impl MatchPolicy {
    /// Every field must be equal.
    pub fn exact() -> Self {
        MatchPolicy::default()
    }

    /// Every field but the named ones must be equal (see the type's docs for the names).
    pub fn ignoring<I, S>(fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        MatchPolicy {
            ignored: fields
                .into_iter()
                .map(|f| f.as_ref().split('.').map(str::to_owned).collect())
                .collect(),
        }
    }

    /// The fields this policy ignores, as dotted paths.
    pub fn ignored_fields(&self) -> Vec<String> {
        self.ignored.iter().map(|p| p.join(".")).collect()
    }

    /// The differences between `recorded` and `now` under this policy (empty if they match).
    pub fn diff(&self, recorded: &Value, now: &Value) -> Diff {
        let mut recorded = recorded.clone();
        let mut now = now.clone();
        for path in &self.ignored {
            remove_path(&mut recorded, path);
            remove_path(&mut now, path);
        }
        let mut diff = Diff::default();
        diff_values("", &recorded, &now, &mut diff.entries);
        diff
    }
}

fn remove_path(value: &mut Value, path: &[String]) {
    match value {
        Value::Array(items) => {
            for item in items {
                remove_path(item, path);
            }
        }
        Value::Object(map) => match path {
            [] => {}
            [last] => {
                map.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(inner) = map.get_mut(first) {
                    remove_path(inner, rest);
                }
            }
        },
        _ => {}
    }
}

/// One field that differs: where, what was recorded, what came now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The field's path, e.g. `messages[2].content` (empty for the whole value).
    pub path: String,
    /// The recorded value, as short JSON text (`(absent)` if it had none).
    pub recorded: String,
    /// The value now (`(absent)` if it has none).
    pub now: String,
}

/// The differences between a recorded value and the one made now, field by field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// The differing fields, in document order.
    pub entries: Vec<Difference>,
}

impl Diff {
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// At most this many differences are printed.
const SHOWN: usize = 12;

impl fmt::Display for Diff {
    /// One line per differing field: `  path: recorded X, now Y`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.entries.iter().take(SHOWN).enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let path = if d.path.is_empty() {
                "(whole)"
            } else {
                &d.path
            };
            write!(f, "  {path}: recorded {}, now {}", d.recorded, d.now)?;
        }
        if self.entries.len() > SHOWN {
            write!(f, "\n  … and {} more", self.entries.len() - SHOWN)?;
        }
        Ok(())
    }
}

const ABSENT: &str = "(absent)";

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn diff_values(path: &str, recorded: &Value, now: &Value, out: &mut Vec<Difference>) {
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, va) in a {
                match b.get(key) {
                    Some(vb) => diff_values(&join(path, key), va, vb, out),
                    None => out.push(Difference {
                        path: join(path, key),
                        recorded: short(va),
                        now: ABSENT.into(),
                    }),
                }
            }
            for (key, vb) in b {
                if !a.contains_key(key) {
                    out.push(Difference {
                        path: join(path, key),
                        recorded: ABSENT.into(),
                        now: short(vb),
                    });
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff_values(&format!("{path}[{i}]"), va, vb, out);
            }
            for (i, va) in a.iter().enumerate().skip(b.len()) {
                out.push(Difference {
                    path: format!("{path}[{i}]"),
                    recorded: short(va),
                    now: ABSENT.into(),
                });
            }
            for (i, vb) in b.iter().enumerate().skip(a.len()) {
                out.push(Difference {
                    path: format!("{path}[{i}]"),
                    recorded: ABSENT.into(),
                    now: short(vb),
                });
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Difference {
            path: path.to_owned(),
            recorded: short(a),
            now: short(b),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_names_each_differing_field_with_its_path() {
        let recorded = json!({"messages": [{"role": "user", "content": "refund order 42"}]});
        let now = json!({"messages": [{"role": "user", "content": "refund order 43"},
                                      {"role": "user", "content": "hi"}]});
        let diff = MatchPolicy::exact().diff(&recorded, &now);
        assert_eq!(
            diff.to_string(),
            "  messages[0].content: recorded \"refund order 42\", now \"refund order 43\"\n  \
             messages[1]: recorded (absent), now {\"content\":\"hi\",\"role\":\"user\"}"
        );
    }

    #[test]
    fn ignored_fields_apply_under_arrays() {
        let policy = MatchPolicy::ignoring(["messages.usage"]);
        let a = json!({"messages": [{"content": "x", "usage": {"input_tokens": 1}}]});
        let b = json!({"messages": [{"content": "x", "usage": {"input_tokens": 2}}]});
        assert!(policy.diff(&a, &b).is_empty());
        assert_eq!(policy.ignored_fields(), ["messages.usage"]);
    }
}
