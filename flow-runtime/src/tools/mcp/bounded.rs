//! The stdio server's output, bounded before the SDK parses it: each line (one JSON-RPC
//! message) is read within [`McpLimits::max_message_bytes`](super::McpLimits) and, for a
//! call's result, [`McpLimits::max_result_blocks`](super::McpLimits) content blocks, counted
//! as the bytes arrive. A line past either is never handed on whole: it is dropped as it
//! comes and replaced by a JSON-RPC error answering the same request id, which the call
//! reports as [`McpError::LimitExceeded`](super::McpError::LimitExceeded).
//!
//! Parsing a message costs far more memory than its bytes (a content block of 27 bytes of
//! JSON takes over a kilobyte once parsed), so the bound has to hold before parsing: the SDK
//! only caps a line's bytes.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// The JSON-RPC error code of a message replaced for being over a limit.
pub(super) const OVER_LIMIT_CODE: i32 = -32099;

/// The most bytes of a message's `id` kept to answer it.
const MAX_ID_BYTES: usize = 128;

/// `inner`'s lines, each within the limits (see the module documentation).
pub(super) struct BoundedLines<R> {
    inner: R,
    max_bytes: usize,
    max_blocks: usize,
    /// The line read so far (dropped once it is over a limit).
    line: Vec<u8>,
    scan: Scan,
    /// Which limit the current line went over; its bytes are skipped to its end.
    over: Option<(&'static str, usize)>,
    /// Bytes ready for the reader.
    out: VecDeque<u8>,
    eof: bool,
}

impl<R> BoundedLines<R> {
    pub(super) fn new(inner: R, max_bytes: usize, max_blocks: usize) -> Self {
        BoundedLines {
            inner,
            max_bytes,
            max_blocks,
            line: Vec::new(),
            scan: Scan::default(),
            over: None,
            out: VecDeque::new(),
            eof: false,
        }
    }

    /// Takes in `bytes` read from the server.
    fn take(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
                continue;
            }
            self.scan.feed(b);
            if self.over.is_some() {
                continue;
            }
            self.line.push(b);
            let over = if self.line.len() > self.max_bytes {
                Some(("max_message_bytes", self.max_bytes))
            } else if self.scan.blocks > self.max_blocks {
                Some(("max_result_blocks", self.max_blocks))
            } else {
                None
            };
            if over.is_some() {
                self.over = over;
                self.line = Vec::new();
            }
        }
    }

    fn end_line(&mut self) {
        match self.over.take() {
            None => {
                self.out.extend(self.line.drain(..));
                self.out.push_back(b'\n');
            }
            Some((field, limit)) => {
                // Answer the request the line answered (a line without an id is dropped).
                if let Some(id) = self.scan.id() {
                    let error = format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{OVER_LIMIT_CODE},\
                         \"message\":\"the server's answer is over McpLimits::{field} ({limit}); \
                         it was dropped unread\",\"data\":{{\"field\":\"{field}\",\"limit\":{limit}}}}}}}\n"
                    );
                    self.out.extend(error.as_bytes());
                }
            }
        }
        self.line.clear();
        if self.line.capacity() > 64 * 1024 {
            self.line = Vec::new();
        }
        self.scan = Scan::default();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                let (a, b) = this.out.as_slices();
                let from_a = n.min(a.len());
                buf.put_slice(&a[..from_a]);
                buf.put_slice(&b[..n - from_a]);
                this.out.drain(..n);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let filled = read.filled();
                    if filled.is_empty() {
                        // The end: an unfinished line within the limits goes on as it is.
                        this.eof = true;
                        if this.over.is_none() {
                            this.out.extend(this.line.drain(..));
                        }
                    } else {
                        let filled = filled.to_vec();
                        this.take(&filled);
                    }
                }
            }
        }
    }
}

/// Just enough of a JSON scanner for the bounds: nesting, strings, the keys that lead to each
/// container, the top-level `id`'s raw value, and the objects in `result.content`.
#[derive(Default)]
struct Scan {
    in_string: bool,
    escaped: bool,
    /// For each open container: whether it is an array, and the key it is the value of.
    stack: Vec<(bool, Key)>,
    /// The last string closed (its first bytes), and whether it is still being read.
    string: Vec<u8>,
    /// The key whose value comes next, in the innermost object.
    key: Key,
    /// Content blocks of `result.content` seen.
    blocks: usize,
    /// The top-level `id` value's raw bytes, while and after it is read.
    id: Vec<u8>,
    reading_id: bool,
    id_done: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Key {
    #[default]
    Other,
    Id,
    Result,
    Content,
}

impl Scan {
    fn feed(&mut self, b: u8) {
        if self.reading_id {
            let ends = !self.in_string && matches!(b, b',' | b'}') && self.stack.len() == 1;
            if ends {
                self.reading_id = false;
                self.id_done = true;
            } else if self.id.len() < MAX_ID_BYTES {
                if !(self.id.is_empty() && b.is_ascii_whitespace()) {
                    self.id.push(b);
                }
            } else {
                self.id.clear();
                self.reading_id = false;
                self.id_done = true;
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            } else if self.string.len() < 16 {
                self.string.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.string.clear();
            }
            b':' => {
                self.key = match self.string.as_slice() {
                    b"id" => Key::Id,
                    b"result" => Key::Result,
                    b"content" => Key::Content,
                    _ => Key::Other,
                };
                if self.key == Key::Id && self.stack.len() == 1 && !self.id_done {
                    self.reading_id = true;
                    self.id.clear();
                }
            }
            b'{' | b'[' => {
                // A block: an object directly in the array `content` of the object `result`
                // of the message.
                let in_content = self.stack.len() == 3
                    && self.stack[2] == (true, Key::Content)
                    && self.stack[1] == (false, Key::Result);
                if b == b'{' && in_content {
                    self.blocks += 1;
                }
                let key = if self.stack.last().is_some_and(|(array, _)| *array) {
                    Key::Other
                } else {
                    self.key
                };
                self.stack.push((b == b'[', key));
                self.key = Key::Other;
            }
            b'}' | b']' => {
                self.stack.pop();
            }
            b',' => self.key = Key::Other,
            _ => {}
        }
    }

    /// The top-level `id`, if it was read whole and is a number or a string.
    fn id(&self) -> Option<&str> {
        let id = std::str::from_utf8(&self.id).ok()?.trim();
        let number = !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit() || b == b'-');
        let string = id.len() >= 2
            && id.starts_with('"')
            && id.ends_with('"')
            && !id[1..id.len() - 1].contains(['"', '\\']);
        (self.id_done && (number || string)).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: &[u8], max_bytes: usize, max_blocks: usize) -> String {
        let mut reader = BoundedLines::new(input, max_bytes, max_blocks);
        let mut out = String::new();
        reader.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_within_the_limits_pass_unchanged() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a]{}\\\"\"}]}}\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n";
        assert_eq!(through(input, 1 << 20, 4).await.as_bytes(), input);
    }

    #[tokio::test]
    async fn too_many_blocks_are_answered_with_an_error_for_the_same_id() {
        let blocks: Vec<String> = (0..50)
            .map(|_| r#"{"type":"text","text":"b"}"#.to_owned())
            .collect();
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"req-7\",\"result\":{{\"content\":[{}]}}}}\n",
            blocks.join(",")
        );
        let out = through(line.as_bytes(), 1 << 20, 10).await;
        let answer: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(answer["id"], "req-7");
        assert_eq!(answer["error"]["code"], OVER_LIMIT_CODE);
        assert_eq!(answer["error"]["data"]["field"], "max_result_blocks");
        // Objects elsewhere (a tool list's schemas, annotations) are not blocks.
        let list = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"a":{}},{"b":{}},{"c":{}}]}}"#;
        assert_eq!(
            through(format!("{list}\n").as_bytes(), 1 << 20, 1).await,
            format!("{list}\n")
        );
    }

    #[tokio::test]
    async fn too_many_bytes_are_dropped_as_they_come() {
        let line = format!(
            "{{\"id\":12,\"jsonrpc\":\"2.0\",\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}}}}\n",
            "y".repeat(10_000)
        );
        let out = through(line.as_bytes(), 1000, 10).await;
        let answer: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(answer["id"], 12);
        assert_eq!(answer["error"]["data"]["field"], "max_message_bytes");
        // Without an id (a notification), the line is dropped.
        let note = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":\"{}\"}}\n",
            "z".repeat(5000)
        );
        assert_eq!(through(note.as_bytes(), 1000, 10).await, "");
    }
}
