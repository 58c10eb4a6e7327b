//! [`McpLimits`]: how much of a server's answers this client reads before it gives up with a
//! typed error ([`McpError::LimitExceeded`](super::McpError::LimitExceeded)), so a hostile or
//! broken server cannot grow the client without bound.

/// Bounds on what one MCP server may send. The defaults fit real servers with room to spare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpLimits {
    /// Pages of a tool list read before giving up (a server that always returns another
    /// cursor). Default 64.
    pub max_list_pages: usize,
    /// Tools in a server's list. Default 1,024.
    pub max_tools: usize,
    /// Bytes of a tool's description kept; a longer one is cut (at a character boundary) and
    /// marked with `…`. Default 8 KiB.
    pub max_description_bytes: usize,
    /// Bytes of one call's result (text and data of its content blocks, or its structured
    /// content). Default 1 MiB.
    pub max_result_bytes: usize,
    /// Content blocks in one call's result. Default 1,024. A stdio server's answer is held to
    /// it while it is read, before it is parsed.
    pub max_result_blocks: usize,
    /// Bytes of one message from a stdio server (one line), held to as it is read. Default
    /// 16 MiB.
    pub max_message_bytes: usize,
}

impl Default for McpLimits {
    fn default() -> Self {
        McpLimits {
            max_list_pages: 64,
            max_tools: 1024,
            max_description_bytes: 8 * 1024,
            max_result_bytes: 1024 * 1024,
            max_result_blocks: 1024,
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

impl McpLimits {
    /// The default limits with another [`max_result_bytes`](Self::max_result_bytes).
    pub fn max_result_bytes(mut self, limit: usize) -> Self {
        self.max_result_bytes = limit;
        self
    }

    /// The default limits with another [`max_result_blocks`](Self::max_result_blocks).
    pub fn max_result_blocks(mut self, limit: usize) -> Self {
        self.max_result_blocks = limit;
        self
    }

    /// The default limits with another [`max_message_bytes`](Self::max_message_bytes).
    pub fn max_message_bytes(mut self, limit: usize) -> Self {
        self.max_message_bytes = limit;
        self
    }

    /// The default limits with another [`max_list_pages`](Self::max_list_pages).
    pub fn max_list_pages(mut self, limit: usize) -> Self {
        self.max_list_pages = limit;
        self
    }

    /// The default limits with another [`max_tools`](Self::max_tools).
    pub fn max_tools(mut self, limit: usize) -> Self {
        self.max_tools = limit;
        self
    }

    /// The default limits with another
    /// [`max_description_bytes`](Self::max_description_bytes).
    pub fn max_description_bytes(mut self, limit: usize) -> Self {
        self.max_description_bytes = limit;
        self
    }
}

/// `text` cut to at most `limit` bytes at a character boundary, marked with `…` when cut.
pub(super) fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
