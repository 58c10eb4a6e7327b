//! The file tools over a [`FileBackend`]: `list_files`, `read_file` (a range of lines),
//! `write_file`, `edit_file` (an exact replacement of text that occurs once) and
//! `search_files` (lines containing a text).

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::files::{FileBackend, FileError, ThreadFiles};
use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};

/// The most lines `read_file` returns at once.
pub const MAX_READ_LINES: usize = 2000;
/// The most matching lines `search_files` returns.
pub const MAX_SEARCH_HITS: usize = 100;

/// The file tools over one backend.
///
/// ```
/// use agentweave_runtime::kit::FileTools;
/// let names: Vec<String> = FileTools::in_thread().all().iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(names, ["list_files", "read_file", "write_file", "edit_file", "search_files"]);
/// ```
#[derive(Debug, Clone)]
pub struct FileTools {
    backend: Arc<dyn FileBackend>,
}

impl FileTools {
    /// The tools over `backend`.
    pub fn new(backend: impl FileBackend) -> FileTools {
        FileTools {
            backend: Arc::new(backend),
        }
    }

    /// The tools over the thread's own files ([`ThreadFiles`], the default).
    pub fn in_thread() -> FileTools {
        FileTools::new(ThreadFiles)
    }

    /// The five tools.
    pub fn all(&self) -> Vec<Arc<dyn Tool>> {
        [Op::List, Op::Read, Op::Write, Op::Edit, Op::Search]
            .into_iter()
            .map(|op| {
                Arc::new(FileTool {
                    backend: self.backend.clone(),
                    op,
                }) as Arc<dyn Tool>
            })
            .collect()
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    List,
    Read,
    Write,
    Edit,
    Search,
}

struct FileTool {
    backend: Arc<dyn FileBackend>,
    op: Op,
}

/// `list_files`' arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// A folder to list (all files if left out).
    #[serde(default)]
    dir: String,
}

/// `read_file`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// The file's path.
    path: String,
    /// The first line to return, counting from 1 (1 if left out).
    offset: Option<usize>,
    /// How many lines to return (up to 2000).
    limit: Option<usize>,
}

/// `write_file`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// The file's path.
    path: String,
    /// The whole new text of the file.
    text: String,
}

/// `edit_file`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// The file's path.
    path: String,
    /// The exact text to replace; it must occur exactly once in the file.
    old_text: String,
    /// The text to put in its place.
    new_text: String,
}

/// `search_files`' arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// The text to find (case-sensitive).
    text: String,
    /// A folder to search in (all files if left out).
    #[serde(default)]
    dir: String,
}

#[async_trait]
impl Tool for FileTool {
    fn name(&self) -> &str {
        match self.op {
            Op::List => "list_files",
            Op::Read => "read_file",
            Op::Write => "write_file",
            Op::Edit => "edit_file",
            Op::Search => "search_files",
        }
    }

    fn description(&self) -> &str {
        match self.op {
            Op::List => "Lists your files (under a folder, or all).",
            Op::Read => {
                "Reads a file's lines, numbered, from `offset` (1 by default) for `limit` lines \
                 (up to 2000)."
            }
            Op::Write => "Writes a file, replacing its text if it exists.",
            Op::Edit => {
                "Replaces `old_text`, which must occur exactly once in the file, with `new_text`."
            }
            Op::Search => "Finds the lines of your files that contain a text.",
        }
    }

    fn parameters(&self) -> Value {
        match self.op {
            Op::List => schema_for::<ListArgs>(),
            Op::Read => schema_for::<ReadArgs>(),
            Op::Write => schema_for::<WriteArgs>(),
            Op::Edit => schema_for::<EditArgs>(),
            Op::Search => schema_for::<SearchArgs>(),
        }
    }

    /// A write or an edit of files kept in the thread's values: a recovered run does it again.
    fn session_only(&self) -> bool {
        matches!(self.op, Op::Write | Op::Edit) && self.backend.in_session()
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let tool = self.name();
        let fail = |e: FileError| ToolError::failed(tool, e);
        let b = &self.backend;
        match self.op {
            Op::List => {
                let args: ListArgs = parse_arguments(tool, arguments)?;
                let files = b.list(cx, &args.dir).map_err(fail)?;
                Ok(if files.is_empty() {
                    "no files".to_owned()
                } else {
                    files.join("\n")
                })
            }
            Op::Read => {
                let args: ReadArgs = parse_arguments(tool, arguments)?;
                let text = b.read(cx, &args.path).map_err(fail)?;
                let from = args.offset.unwrap_or(1).max(1);
                let limit = args
                    .limit
                    .unwrap_or(MAX_READ_LINES)
                    .clamp(1, MAX_READ_LINES);
                let lines: Vec<&str> = text.lines().collect();
                if lines.is_empty() {
                    return Ok(format!("`{}` is empty", args.path));
                }
                if from > lines.len() {
                    return Err(ToolError::failed(
                        tool,
                        format!(
                            "`{}` has {} lines; start at most at line {}",
                            args.path,
                            lines.len(),
                            lines.len()
                        ),
                    ));
                }
                let to = (from - 1 + limit).min(lines.len());
                let mut out = String::new();
                for (i, line) in lines[from - 1..to].iter().enumerate() {
                    out.push_str(&format!("{:>6}\t{line}\n", from + i));
                }
                if to < lines.len() {
                    out.push_str(&format!(
                        "[lines {from}-{to} of {}; read on with offset {}]\n",
                        lines.len(),
                        to + 1
                    ));
                }
                Ok(out)
            }
            Op::Write => {
                let args: WriteArgs = parse_arguments(tool, arguments)?;
                b.write(cx, &args.path, &args.text).map_err(fail)?;
                Ok(format!("wrote `{}` ({} bytes)", args.path, args.text.len()))
            }
            Op::Edit => {
                let args: EditArgs = parse_arguments(tool, arguments)?;
                if args.old_text.is_empty() {
                    return Err(ToolError::invalid_arguments(tool, "`old_text` is empty"));
                }
                let text = b.read(cx, &args.path).map_err(fail)?;
                match text.matches(&args.old_text).count() {
                    1 => {
                        let new = text.replacen(&args.old_text, &args.new_text, 1);
                        b.write(cx, &args.path, &new).map_err(fail)?;
                        Ok(format!("edited `{}`", args.path))
                    }
                    0 => Err(ToolError::failed(
                        tool,
                        format!("`old_text` does not occur in `{}`: read the file and copy the text exactly", args.path),
                    )),
                    n => Err(ToolError::failed(
                        tool,
                        format!("`old_text` occurs {n} times in `{}`: include more of the surrounding text so it occurs once", args.path),
                    )),
                }
            }
            Op::Search => {
                let args: SearchArgs = parse_arguments(tool, arguments)?;
                if args.text.is_empty() {
                    return Err(ToolError::invalid_arguments(tool, "`text` is empty"));
                }
                let mut hits = Vec::new();
                'files: for path in b.list(cx, &args.dir).map_err(fail)? {
                    let Ok(text) = b.read(cx, &path) else {
                        continue;
                    };
                    for (i, line) in text.lines().enumerate() {
                        if line.contains(&args.text) {
                            hits.push(format!("{path}:{}: {line}", i + 1));
                            if hits.len() == MAX_SEARCH_HITS {
                                break 'files;
                            }
                        }
                    }
                }
                Ok(if hits.is_empty() {
                    "no match".to_owned()
                } else {
                    hits.join("\n")
                })
            }
        }
    }
}
