//! `run_skill_script`: runs a script of a loaded skill in a child process, only where the
//! application allowed it ([`Skills::with_scripts`](super::Skills::with_scripts) with a
//! [`ScriptPolicy`]). Each run is confined:
//!
//! - **approval**: by default a human approves each run (the tool stops with an approval
//!   interrupt naming the skill, the script and its arguments, as
//!   [`NeedsApproval`](crate::NeedsApproval) does); a denied run does not happen and the model is
//!   told. [`ScriptPolicy::without_approval`] lets scripts run unasked.
//! - **environment**: empty (nothing of the parent's: no keys, no tokens), no input, the skill's
//!   folder as its working directory.
//! - **file system** (Linux, Landlock): the script may read the system's program and library
//!   folders, `/dev/null` and the like, and its skill's folder; it may write only in its skill's
//!   folder (and the folders [`ScriptPolicy::write_path`] adds). The home folder, the
//!   application's files and `/proc` (where the parent's environment could be read) are out of
//!   reach. Where the kernel lacks Landlock, scripts are refused unless the application chose
//!   [`ScriptPolicy::allow_unconfined_files`].
//! - **memory**: an address-space limit (`RLIMIT_AS`), past which the script's allocations fail.
//! - **time and output**: past either limit the script (and every process it started) is killed.
//!
//! Its output (standard output, then standard error) is the tool's result; every refusal and
//! every stop is a tool error the model sees, with the reason. On systems other than Unix-like
//! ones, scripts are refused.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::skill::Skill;
use super::skills::{Skills, LOAD_SKILL_TOOL_NAME};
use crate::llm::tool::{parse_arguments, schema_for, Tool, ToolContext, ToolError};
use crate::NeedsApproval;

/// The name of the tool that runs a skill's script.
pub const RUN_SKILL_SCRIPT_TOOL_NAME: &str = "run_skill_script";

/// The folders a script may read by default (those that exist): the system's programs and
/// libraries, so that an interpreter starts. The skill's own folder is added to each run.
pub const DEFAULT_READ_PATHS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
];

/// How skill scripts may run: whether a human approves each run, the limits on time, output
/// and memory, the folders a script may read and write beyond its own, and the interpreter of
/// each file extension (a script without a known extension is run as a program).
///
/// A script runs only from a loaded skill's `scripts/`, with an interpreter per extension
/// (`.py`: `python3`, `.sh`: `sh`), in a child process confined five ways:
///
/// | | default | change it with |
/// | --- | --- | --- |
/// | approval | a human approves each run: the turn stops with an approval interrupt (`{"approval": {"tool", "arguments"}, "question"}`, naming the skill, the script and its arguments); answered `true` it runs once, `false` it does not run and the model is told | [`without_approval`](Self::without_approval) |
/// | environment | empty (no keys, no tokens, no `HOME`), no input, the skill's folder as working directory | (fixed) |
/// | files (Linux, Landlock) | reads only the system's program and library folders ([`DEFAULT_READ_PATHS`]) and its skill's folder; writes only in its skill's folder; the home folder, the application's files and `/proc` are out of reach | [`read_path`](Self::read_path), [`write_path`](Self::write_path) |
/// | memory | 512 MiB of address space (`RLIMIT_AS`): an allocation past it fails | [`max_memory`](Self::max_memory), [`unlimited_memory`](Self::unlimited_memory) |
/// | time, output | 30 s, 64 KiB; past either the script and every process it started are killed | [`timeout`](Self::timeout), [`max_output`](Self::max_output) |
///
/// Every refusal and every stop is a tool error the model reads, with the reason ("`scripts/x.sh`
/// of skill `probe` ran past its time limit of 30 s and was stopped; its output so far: ...").
///
/// The file rules need Linux 5.13 or later with Landlock enabled. Where the kernel cannot
/// confine a script's files (no Landlock, or a Unix-like system other than Linux), scripts are
/// refused unless the application calls
/// [`allow_unconfined_files`](Self::allow_unconfined_files): then a script reads and writes
/// whatever this process's user may, while the other limits still hold; choose it only for
/// scripts you wrote, or inside a container of their own. On a system that is not Unix-like
/// scripts are refused. The memory limit is on address space, not pages in use: runtimes that
/// reserve large ranges up front (the JVM, Go) need a higher one. An interpreter installed
/// outside the system folders (a version manager's shims in the home folder) is not readable by
/// the script; name one that is ([`interpreter`](Self::interpreter)) or add its folder with
/// [`read_path`](Self::read_path).
///
/// ```
/// use std::time::Duration;
/// use agentweave_runtime::kit::ScriptPolicy;
///
/// // Approved by a human each time (the default), 10 s, 256 MiB, and a scratch folder.
/// let policy = ScriptPolicy::new()
///     .timeout(Duration::from_secs(10))
///     .max_memory(256 * 1024 * 1024)
///     .write_path("/var/tmp/skills-scratch")
///     .interpreter("py", "/usr/bin/python3");
/// # drop(policy);
/// ```
#[derive(Debug, Clone)]
pub struct ScriptPolicy {
    timeout: Duration,
    max_output: usize,
    max_memory: Option<u64>,
    approval: bool,
    unconfined_files: bool,
    read: Arc<[PathBuf]>,
    write: Arc<[PathBuf]>,
    interpreters: Arc<[(String, String)]>,
}

impl Default for ScriptPolicy {
    /// Approval by a human before each run, 30 s, 64 KiB of output, 512 MiB of address space,
    /// files confined (refused where the kernel cannot confine them), [`DEFAULT_READ_PATHS`]
    /// readable, `.py` run with `python3` and `.sh` with `sh`.
    fn default() -> Self {
        ScriptPolicy {
            timeout: Duration::from_secs(30),
            max_output: 64 * 1024,
            max_memory: Some(512 * 1024 * 1024),
            approval: true,
            unconfined_files: false,
            read: DEFAULT_READ_PATHS.iter().map(PathBuf::from).collect(),
            write: Arc::from([]),
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

    /// How many bytes of address space a script's process may map (`RLIMIT_AS`, default
    /// 512 MiB): past it, its allocations fail (Python raises `MemoryError`, most programs
    /// exit). Runtimes that reserve large address ranges up front (the JVM, Go) need more.
    pub fn max_memory(mut self, bytes: u64) -> ScriptPolicy {
        self.max_memory = Some(bytes);
        self
    }

    /// Runs scripts with no memory limit of their own.
    pub fn unlimited_memory(mut self) -> ScriptPolicy {
        self.max_memory = None;
        self
    }

    /// Runs scripts without asking a human first (the default asks before every run).
    /// Choose it only for skills whose scripts you wrote or reviewed.
    pub fn without_approval(mut self) -> ScriptPolicy {
        self.approval = false;
        self
    }

    /// Lets scripts also read under `path` (a folder or a file): an interpreter installed
    /// outside [`DEFAULT_READ_PATHS`], data the skill needs.
    pub fn read_path(mut self, path: impl Into<PathBuf>) -> ScriptPolicy {
        self.read = self.read.iter().cloned().chain([path.into()]).collect();
        self
    }

    /// Lets scripts also read and write under `path` (a scratch folder), besides their skill's
    /// folder.
    pub fn write_path(mut self, path: impl Into<PathBuf>) -> ScriptPolicy {
        self.write = self.write.iter().cloned().chain([path.into()]).collect();
        self
    }

    /// Runs scripts even where the kernel cannot confine their file access (Linux without
    /// Landlock, or other Unix-like systems): there a script reads and writes whatever this
    /// process's user may, its home folder and the application's files among them. The
    /// environment, time, output and memory limits still apply. The default refuses such runs;
    /// choose this only for scripts you trust, or inside a container of their own.
    pub fn allow_unconfined_files(mut self) -> ScriptPolicy {
        self.unconfined_files = true;
        self
    }

    /// Runs scripts ending in `.{extension}` with `program` (looked up on this process's
    /// `PATH`, since the script's own environment is empty). The program must sit where
    /// scripts may read (see [`read_path`](Self::read_path)).
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

/// `run_skill_script` as the policy asks: behind an approval (the default) or not.
pub(super) fn script_tool(skills: Skills, policy: ScriptPolicy) -> Arc<dyn Tool> {
    let approval = policy.approval;
    let run = Arc::new(ScriptTool { skills, policy });
    if !approval {
        return run;
    }
    let gate = NeedsApproval::always(run.clone()).question(|_, args| {
        let text = |key: &str| args[key].as_str().unwrap_or("?").to_owned();
        let argv: Vec<String> = args["args"]
            .as_array()
            .map(|a| a.iter().map(|v| v.to_string()).collect())
            .unwrap_or_default();
        format!(
            "Allow skill '{}' to run its script '{}' with arguments [{}]?",
            text("skill"),
            text("script"),
            argv.join(", ")
        )
    });
    Arc::new(Approved { run, gate })
}

/// The script tool behind an approval: a call the tool would refuse anyway (no such skill or
/// script, a skill not loaded, bad arguments) is refused before a human is asked.
struct Approved {
    run: Arc<ScriptTool>,
    gate: NeedsApproval,
}

#[async_trait]
impl Tool for Approved {
    fn name(&self) -> &str {
        self.run.name()
    }

    fn description(&self) -> &str {
        self.run.description()
    }

    fn parameters(&self) -> Value {
        self.run.parameters()
    }

    fn idempotent(&self) -> bool {
        false
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        self.run.check(cx, arguments)?;
        self.gate.call(cx, arguments).await
    }
}

struct ScriptTool {
    skills: Skills,
    policy: ScriptPolicy,
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

fn failed(message: String) -> ToolError {
    ToolError::failed(RUN_SKILL_SCRIPT_TOOL_NAME, message)
}

impl ScriptTool {
    /// The skill and the arguments of a call, if the call may run at all.
    fn check(&self, cx: &ToolContext, arguments: &str) -> Result<(Skill, RunArgs), ToolError> {
        if !cfg!(unix) {
            return Err(failed(
                "skill scripts run only on Unix-like systems, where the child's environment, \
                 folder and limits can be set; answer without running it"
                    .to_owned(),
            ));
        }
        let args: RunArgs = parse_arguments(RUN_SKILL_SCRIPT_TOOL_NAME, arguments)?;
        let skill = self
            .skills
            .get(&args.skill)
            .ok_or_else(|| failed(format!("no skill is named `{}`", args.skill)))?;
        if !Skills::active(cx).contains(&skill.name) {
            return Err(failed(format!(
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
            return Err(failed(format!(
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
        Ok((skill.clone(), args))
    }

    /// A note for a failed run: the memory limit, which a failed allocation may have hit.
    fn memory_note(&self) -> String {
        match self.policy.max_memory {
            Some(bytes) => format!(
                " (its memory is limited to {} MiB: an allocation past that fails, \
                 which may be why)",
                bytes / (1024 * 1024)
            ),
            None => String::new(),
        }
    }
}

#[async_trait]
impl Tool for ScriptTool {
    fn name(&self) -> &str {
        RUN_SKILL_SCRIPT_TOOL_NAME
    }

    fn description(&self) -> &str {
        "Runs a script of a loaded skill (a path under its `scripts/`, as `load_skill` listed \
         it) with the given arguments, in the skill's folder, and returns what it printed. \
         The script may write only in its skill's folder; a run may first need a human's \
         approval."
    }

    fn parameters(&self) -> Value {
        schema_for::<RunArgs>()
    }

    fn idempotent(&self) -> bool {
        false
    }

    async fn call(&self, cx: &ToolContext, arguments: &str) -> Result<String, ToolError> {
        let (skill, args) = self.check(cx, arguments)?;
        let ext = args.script.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let mut command = match self.policy.interpreters.iter().find(|(e, _)| e == ext) {
            Some((_, program)) => {
                let program = find_program(program).ok_or_else(|| {
                    failed(format!(
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
        let mut child = confine::spawn(&mut command, &skill, &self.policy)
            .map_err(|reason| failed(format!("cannot run `{}`: {reason}", args.script)))?;
        let pid = child.id();
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
        if !matches!(ended, Ended::Exited(_)) {
            // The child is not reaped yet, so its process group is still its own: stop every
            // process the script started, not only the script.
            confine::kill_group(pid);
        }
        let mut text = String::from_utf8_lossy(&out[..out.len().min(limit)]).into_owned();
        if !err.is_empty() {
            let room = limit.saturating_sub(out.len());
            text.push_str("\n[stderr]\n");
            text.push_str(&String::from_utf8_lossy(&err[..err.len().min(room)]));
        }
        match ended {
            Ended::Exited(status) if status.success() => Ok(text),
            Ended::Exited(status) => Err(failed(format!(
                "`{}` of skill `{}` failed ({status}){}; its output:\n{text}",
                args.script,
                skill.name,
                self.memory_note()
            ))),
            Ended::TimedOut => Err(failed(format!(
                "`{}` of skill `{}` ran past its time limit of {} s and was stopped; its output \
                 so far:\n{text}",
                args.script,
                skill.name,
                self.policy.timeout.as_secs_f64()
            ))),
            Ended::TooMuchOutput => Err(failed(format!(
                "`{}` of skill `{}` wrote more than {limit} bytes of output and was stopped; the \
                 first {limit} bytes:\n{text}",
                args.script, skill.name
            ))),
        }
    }
}

/// The child's confinement: its own process group, the memory limit and (Linux) the Landlock
/// ruleset, applied between fork and exec with plain system calls (nothing that allocates).
#[cfg(unix)]
mod confine {
    use std::os::fd::{AsRawFd, OwnedFd};

    use super::{ScriptPolicy, Skill};

    /// Starts `command` confined as `policy` says, or says why it may not start.
    pub(super) fn spawn(
        command: &mut tokio::process::Command,
        skill: &Skill,
        policy: &ScriptPolicy,
    ) -> Result<tokio::process::Child, String> {
        let ruleset = match ruleset(skill, policy)? {
            Some(fd) => Some(fd),
            None if policy.unconfined_files => None,
            None => {
                return Err(format!(
                    "this system cannot confine a script's file access (Linux with Landlock is \
                     needed), and the application did not allow unconfined scripts \
                     (`ScriptPolicy::allow_unconfined_files`); answer without running skill \
                     `{}`'s script",
                    skill.name
                ))
            }
        };
        let fd = ruleset.as_ref().map(AsRawFd::as_raw_fd);
        let memory = policy.max_memory;
        command.process_group(0);
        // SAFETY: the closure runs in the forked child before exec and makes only
        // async-signal-safe system calls (setrlimit, prctl, landlock_restrict_self), reading
        // values copied in before the fork; the ruleset's descriptor stays open in the parent
        // until `spawn` returns.
        unsafe {
            command.pre_exec(move || {
                if let Some(bytes) = memory {
                    let limit = libc::rlimit {
                        rlim_cur: bytes as libc::rlim_t,
                        rlim_max: bytes as libc::rlim_t,
                    };
                    if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(fd) = fd {
                    restrict(fd)?;
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| e.to_string());
        drop(ruleset);
        child
    }

    /// Kills the process group `pid` leads (the script and what it started).
    pub(super) fn kill_group(pid: Option<u32>) {
        if let Some(pid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: a plain kill(2) of a group this tool created; an error (the group is
            // gone) is nothing to act on.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }

    /// The Landlock ruleset for a run of `skill`'s script: read (and execute) under the
    /// policy's read paths, read and write under the skill's folder and the policy's write
    /// paths, nothing else. `None` where the kernel has no Landlock.
    #[cfg(target_os = "linux")]
    fn ruleset(skill: &Skill, policy: &ScriptPolicy) -> Result<Option<OwnedFd>, String> {
        use landlock::{
            path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI,
        };
        let abi = ABI::V5;
        let writable: Vec<&std::path::Path> = std::iter::once(skill.root.as_path())
            .chain(policy.write.iter().map(|p| p.as_path()))
            .collect();
        let created = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(&*policy.read, AccessFs::from_read(abi))))
            .and_then(|r| r.add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_all(abi))))
            .and_then(|r| r.add_rules(path_beneath_rules(writable, AccessFs::from_all(abi))))
            .map_err(|e| format!("cannot build the script's file rules: {e}"))?;
        Ok(created.into())
    }

    /// No Landlock outside Linux.
    #[cfg(not(target_os = "linux"))]
    fn ruleset(_: &Skill, _: &ScriptPolicy) -> Result<Option<OwnedFd>, String> {
        Ok(None)
    }

    /// Restricts the calling (child) process with the ruleset `fd`: no new privileges, then
    /// `landlock_restrict_self`.
    #[cfg(target_os = "linux")]
    fn restrict(fd: std::os::fd::RawFd) -> std::io::Result<()> {
        // SAFETY: two system calls on integers; no memory is shared with the kernel.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    fn restrict(_: std::os::fd::RawFd) -> std::io::Result<()> {
        Ok(())
    }
}

/// Not Unix-like: [`ScriptTool::check`] refuses every run before this is reached.
#[cfg(not(unix))]
mod confine {
    use super::{ScriptPolicy, Skill};

    pub(super) fn spawn(
        _: &mut tokio::process::Command,
        _: &Skill,
        _: &ScriptPolicy,
    ) -> Result<tokio::process::Child, String> {
        Err("skill scripts run only on Unix-like systems".to_owned())
    }

    pub(super) fn kill_group(_: Option<u32>) {}
}
