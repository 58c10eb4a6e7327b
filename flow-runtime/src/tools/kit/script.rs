//! `run_skill_script`: runs a script of a loaded skill in a child process, only where the
//! application allowed it ([`Skills::with_scripts`](super::Skills::with_scripts) with a
//! [`ScriptPolicy`]). The child gets an empty environment (nothing of the parent's: no keys,
//! no tokens), the skill's folder as its working directory, no input, a time limit and an
//! output limit; past either it is killed and the model is told why. Its output (standard
//! output, then standard error) is the tool's result.
//!
//! What this does not do: confine the script's file system access or memory (a script can
//! still write where the process's user may). Run agents whose skills carry scripts you did not
//! write in a container or a sandbox of their own.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::skills::{Skills, LOAD_SKILL_TOOL_NAME};
use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};

/// The name of the tool that runs a skill's script.
pub const RUN_SKILL_SCRIPT_TOOL_NAME: &str = "run_skill_script";

/// How skill scripts may run: the time limit, the output limit, and the interpreter of each
/// file extension (a script without a known extension is run as a program).
#[derive(Debug, Clone)]
pub struct ScriptPolicy {
    timeout: Duration,
    max_output: usize,
    interpreters: Arc<[(String, String)]>,
}

impl Default for ScriptPolicy {
    /// 30 s, 64 KiB of output, `.py` with `python3` and `.sh` with `sh`.
    fn default() -> Self {
        ScriptPolicy {
            timeout: Duration::from_secs(30),
            max_output: 64 * 1024,
            interpreters: Arc::from([
                ("py".to_owned(), "python3".to_owned()),
                ("sh".to_owned(), "sh".to_owned()),
            ]),
        }
    }
}

impl ScriptPolicy {
    /// The default policy (see [`Default`]).
    pub fn new() -> ScriptPolicy {
        ScriptPolicy::default()
    }

    /// How long a script may run before it is killed.
    pub fn timeout(mut self, limit: Duration) -> ScriptPolicy {
        self.timeout = limit;
        self
    }

    /// How many bytes of output (standard output and error together) a script may write
    /// before it is killed.
    pub fn max_output(mut self, bytes: usize) -> ScriptPolicy {
        self.max_output = bytes;
        self
    }

    /// Runs scripts ending in `.{extension}` with `program` (looked up on this process's
    /// `PATH`, since the script's own environment is empty).
    pub fn interpreter(mut self, extension: &str, program: &str) -> ScriptPolicy {
        let mut v: Vec<(String, String)> = self
            .interpreters
            .iter()
            .filter(|(e, _)| e != extension)
            .cloned()
            .collect();
        v.push((extension.to_owned(), program.to_owned()));
        self.interpreters = v.into();
        self
    }
}

/// `run_skill_script`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// The skill's name.
    skill: String,
    /// The script's path inside the skill, as `load_skill` listed it (`scripts/fill.py`).
    script: String,
    /// The script's command-line arguments.
    #[serde(default)]
    args: Vec<String>,
}

pub(super) struct ScriptTool {
    skills: Skills,
    policy: ScriptPolicy,
}

impl ScriptTool {
    pub(super) fn new(skills: Skills, policy: ScriptPolicy) -> ScriptTool {
        ScriptTool { skills, policy }
    }
}

/// `program` found on this process's `PATH` (an absolute or relative path is kept as it is).
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// How a script run ended.
enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
    TooMuchOutput,
}

#[async_trait]
impl Tool for ScriptTool {
    fn name(&self) -> &str {
        RUN_SKILL_SCRIPT_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Runs a script of a loaded skill (a path under its `scripts/`, as `load_skill` listed \
         it) with the given arguments, in the skill's folder, and returns what it printed."
    }

    fn parameters(&self) -> Value {
        schema_for::<RunArgs>()
    }

    fn idempotent(&self) -> bool {
        false
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let tool = RUN_SKILL_SCRIPT_TOOL_NAME;
        let fail = |m: String| ToolError::failed(tool, m);
        if !cfg!(unix) {
            return Err(fail(
                "skill scripts run only on Unix-like systems, where the child's environment, \
                 folder and limits can be set; answer without running it"
                    .to_owned(),
            ));
        }
        let args: RunArgs = parse_arguments(tool, arguments)?;
        let skill = self
            .skills
            .get(&args.skill)
            .ok_or_else(|| fail(format!("no skill is named `{}`", args.skill)))?;
        if !Skills::active(cx).contains(&skill.name) {
            return Err(fail(format!(
                "skill `{}` is not loaded: call `{LOAD_SKILL_TOOL_NAME}` with its name first",
                skill.name
            )));
        }
        if !args.script.starts_with("scripts/") || !skill.resources.contains(&args.script) {
            let scripts: Vec<&str> = skill
                .resources
                .iter()
                .filter(|r| r.starts_with("scripts/"))
                .map(String::as_str)
                .collect();
            return Err(fail(format!(
                "skill `{}` has no script `{}`; its scripts are: {}",
                skill.name,
                args.script,
                if scripts.is_empty() {
                    "none".to_owned()
                } else {
                    scripts.join(", ")
                }
            )));
        }
        let ext = args.script.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let mut command = match self.policy.interpreters.iter().find(|(e, _)| e == ext) {
            Some((_, program)) => {
                let program = find_program(program).ok_or_else(|| {
                    fail(format!(
                        "`{program}`, which runs `.{ext}` scripts, is not installed"
                    ))
                })?;
                let mut c = tokio::process::Command::new(program);
                c.arg(&args.script);
                c
            }
            None => tokio::process::Command::new(skill.root.join(&args.script)),
        };
        command
            .args(&args.args)
            .current_dir(&skill.root)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| fail(format!("cannot start `{}`: {e}", args.script)))?;
        let mut stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let limit = self.policy.max_output;
        let mut out = Vec::new();
        let mut err = Vec::new();
        let run = async {
            let mut a = [0u8; 8192];
            let mut b = [0u8; 8192];
            let (mut out_open, mut err_open) = (true, true);
            while out_open || err_open {
                tokio::select! {
                    n = stdout.read(&mut a), if out_open => match n {
                        Ok(0) | Err(_) => out_open = false,
                        Ok(n) => out.extend_from_slice(&a[..n]),
                    },
                    n = stderr.read(&mut b), if err_open => match n {
                        Ok(0) | Err(_) => err_open = false,
                        Ok(n) => err.extend_from_slice(&b[..n]),
                    },
                }
                if out.len() + err.len() > limit {
                    return Ended::TooMuchOutput;
                }
            }
            match child.wait().await {
                Ok(status) => Ended::Exited(status),
                Err(_) => Ended::TimedOut,
            }
        };
        let ended = match tokio::time::timeout(self.policy.timeout, run).await {
            Ok(ended) => ended,
            Err(_) => Ended::TimedOut,
        };
        let mut text = String::from_utf8_lossy(&out[..out.len().min(limit)]).into_owned();
        if !err.is_empty() {
            let room = limit.saturating_sub(out.len());
            text.push_str("\n[stderr]\n");
            text.push_str(&String::from_utf8_lossy(&err[..err.len().min(room)]));
        }
        match ended {
            Ended::Exited(status) if status.success() => Ok(text),
            Ended::Exited(status) => Err(fail(format!(
                "`{}` failed ({status}); its output:\n{text}",
                args.script
            ))),
            Ended::TimedOut => Err(fail(format!(
                "`{}` ran past its time limit of {} s and was stopped; its output so far:\n{text}",
                args.script,
                self.policy.timeout.as_secs_f64()
            ))),
            Ended::TooMuchOutput => Err(fail(format!(
                "`{}` wrote more than {limit} bytes of output and was stopped; the first \
                 {limit} bytes:\n{text}",
                args.script
            ))),
        }
    }
}
