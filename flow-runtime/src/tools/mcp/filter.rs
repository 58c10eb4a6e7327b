//! [`ToolFilter`]: which of a server's tools an agent gets (an allow-list, a deny-list, both),
//! by name or by a prefix pattern (`read_*`). A tool the filter leaves out is never offered to
//! the model, and a call to it is refused ([`McpError::ToolDenied`](super::McpError::ToolDenied)).

use std::sync::Arc;

/// Which of a server's tools are used. Default: all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    allow: Option<Vec<Arc<str>>>,
    deny: Vec<Arc<str>>,
}

impl ToolFilter {
    /// Only these tools (names or `prefix*` patterns), unless also denied.
    pub fn allow<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Arc<str>>,
    {
        self.allow
            .get_or_insert_with(Vec::new)
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Never these tools (names or `prefix*` patterns).
    pub fn deny<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Arc<str>>,
    {
        self.deny.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Whether the tool the server names `tool` is used.
    pub fn permits(&self, tool: &str) -> bool {
        let hit = |pattern: &Arc<str>| match pattern.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix),
            None => **pattern == *tool,
        };
        let allowed = match &self.allow {
            Some(allow) => allow.iter().any(hit),
            None => true,
        };
        allowed && !self.deny.iter().any(hit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_and_deny_by_name_and_prefix() {
        let all = ToolFilter::default();
        assert!(all.permits("get-env"));
        let f = ToolFilter::default().deny(["get-env", "debug_*"]);
        assert!(!f.permits("get-env"));
        assert!(!f.permits("debug_dump"));
        assert!(f.permits("echo"));
        let f = ToolFilter::default()
            .allow(["echo", "read_*"])
            .deny(["read_secret"]);
        assert!(f.permits("echo"));
        assert!(f.permits("read_file"));
        assert!(!f.permits("read_secret"));
        assert!(!f.permits("write_file"));
    }
}
