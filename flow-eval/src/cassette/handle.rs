//! [`Cassette`]: one cassette file, shared by the models and tools that record into it or
//! replay from it; [`Mode`] says which; [`ReplayError`] is what a replay that cannot answer
//! reports.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agentweave_runtime::{ChatModel, FlowAgent, Tool};

use super::file::{
    CassetteError, CassetteFile, FlowStamp, Interaction, RecordedRequest, RecordedResponse,
    ToolInteraction, ToolResult,
};
use super::matching::{Diff, MatchPolicy};
use super::model::{RecordingModel, ReplayModel};
use super::tool::{RecordedTool, RecordingTool, ReplayTool};

/// The environment variable that makes [`Cassette::open`] record: `AGENTFLOW_RECORD=1 cargo
/// test` records every cassette the tests open, calling the real models and tools.
pub const RECORD_ENV: &str = "AGENTFLOW_RECORD";

/// Whether a cassette records or replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Calls the real models and tools and writes what they answered.
    Record,
    /// Answers from the file; the real models and tools are never called.
    Replay,
}

impl Mode {
    /// [`Mode::Record`] when [`RECORD_ENV`] is `1`, else [`Mode::Replay`].
    pub fn from_env() -> Mode {
        if std::env::var(RECORD_ENV).is_ok_and(|v| v == "1") {
            Mode::Record
        } else {
            Mode::Replay
        }
    }
}

/// A replayed call the cassette has no answer for.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A model was asked something the cassette did not record. Calls are matched by their
    /// request (the model's name only breaks ties), so this is a change in what the flow asks.
    #[error(
        "cassette {}: model '{model}' was asked something the cassette did not record (its \
         call {call}); the request differs from the next unanswered recorded one (of \
         '{recorded_as}'):\n{diff}\nrecord it again with AGENTFLOW_RECORD=1 if the change is \
         intended, or ignore the field in the cassette's MatchPolicy", path.display()
    )]
    RequestMismatch {
        /// The cassette.
        path: PathBuf,
        /// The model asked.
        model: String,
        /// The name of the model of the recorded call it was compared with.
        recorded_as: String,
        /// Which of its calls (1-based).
        call: usize,
        /// How the request differs from the next recorded request of that model.
        diff: Diff,
    },
    /// The flow asked its models more often than the cassette recorded: every recorded model
    /// call (of any model's name) was answered already.
    #[error(
        "cassette {}: model '{model}' made call {call}, but all {recorded} model calls the \
         cassette recorded{} were answered already: the flow now asks its models more often \
         than when it was recorded; record it again with AGENTFLOW_RECORD=1 if that is \
         intended", path.display(),
        others_text(others)
    )]
    Exhausted {
        /// The cassette.
        path: PathBuf,
        /// The model asked.
        model: String,
        /// Which of its calls (1-based).
        call: usize,
        /// How many model calls were recorded, of every model.
        recorded: usize,
        /// The models the cassette has calls for.
        others: Vec<String>,
    },
    /// A tool was called with arguments the cassette did not record.
    #[error(
        "cassette {}: tool '{tool}' was called with arguments it did not record (its call \
         {call}):\n{diff}\nrecord it again with AGENTFLOW_RECORD=1 if the change is intended",
        path.display()
    )]
    ToolMismatch {
        /// The cassette.
        path: PathBuf,
        /// The tool.
        tool: String,
        /// Which of its calls (1-based).
        call: usize,
        /// How the arguments differ from those of its next recorded call.
        diff: Diff,
    },
    /// A tool was called more often than the cassette recorded.
    #[error(
        "cassette {}: tool '{tool}' was called {call} times, but the cassette recorded {recorded} \
         calls of it; record it again with AGENTFLOW_RECORD=1", path.display()
    )]
    ToolExhausted {
        /// The cassette.
        path: PathBuf,
        /// The tool.
        tool: String,
        /// Which of its calls (1-based).
        call: usize,
        /// How many calls of it were recorded.
        recorded: usize,
    },
}

fn others_text(others: &[String]) -> String {
    if others.is_empty() {
        " (it has none)".to_owned()
    } else {
        format!(" (of {})", others.join(", "))
    }
}

/// One cassette: a file of recorded model and tool calls, and the models and tools that
/// record into it or replay from it.
///
/// Cloning shares it. Wrap each model of the flow under test with [`model`](Cassette::model)
/// and each tool with [`tool`](Cassette::tool):
///
/// - recording ([`Mode::Record`]), the real ones are called and every request and answer is
///   kept (streamed chunks one by one, tool calls, usage, errors); [`save`](Cassette::save)
///   writes the file (dropping the last handle saves too);
/// - replaying ([`Mode::Replay`]), nothing real is called: each request is looked up among the
///   recorded ones not answered yet, under the cassette's [`MatchPolicy`], in any order (so
///   parallel branches may come in another order than when recorded; equal requests are
///   answered in recorded order). The request identifies the call, not the model's name: those
///   of the same name are tried first, then any other, so a replay may build its models under
///   other names than the recording's (a scripted stand-in for the real model). A request that was not recorded gets a [`ReplayError`] with
///   the difference from the next recorded one, returned to the agent as a model error and
///   kept in [`errors`](Cassette::errors).
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_eval::cassette::{Cassette, Mode};
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
/// use agentweave_runtime::{ChatModel, ChatRequest, Message};
/// use std::sync::Arc;
///
/// let path = std::env::temp_dir().join(format!("doc-cassette-{}.json", std::process::id()));
/// let recording = Cassette::new(&path, Mode::Record);
/// let model = recording.model(ScriptedModel::new([ScriptStep::text("Hello!")]));
/// let ask = ChatRequest::new([Arc::new(Message::user("hi"))]);
/// assert_eq!(model.generate(&ask).await.unwrap().content, "Hello!");
/// recording.save().unwrap();
///
/// // Offline: the scripted model has nothing left, the cassette answers.
/// let replaying = Cassette::replay(&path).unwrap();
/// let model = replaying.model(ScriptedModel::new(Vec::<ScriptStep>::new()));
/// let drifted = ChatRequest::new([Arc::new(Message::user("hello"))]);
/// let error = model.generate(&drifted).await.unwrap_err().to_string();
/// assert!(error.contains("messages[0].content: recorded \"hi\", now \"hello\""));
/// assert_eq!(model.generate(&ask).await.unwrap().content, "Hello!");
/// # std::fs::remove_file(&path).unwrap();
/// # });
/// ```
#[derive(Clone)]
pub struct Cassette {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    mode: Mode,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    file: CassetteFile,
    policy: MatchPolicy,
    /// Replay: which interactions were answered.
    used: Vec<bool>,
    /// Calls seen so far, per model and per tool (keyed `model:NAME`, `tool:NAME`).
    calls: HashMap<String, usize>,
    errors: Vec<ReplayError>,
    /// Record: something was recorded since the last save.
    dirty: bool,
}

impl std::fmt::Debug for Cassette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cassette")
            .field("path", &self.inner.path)
            .field("mode", &self.inner.mode)
            .finish_non_exhaustive()
    }
}

impl Cassette {
    /// The cassette at `path`, recording if [`RECORD_ENV`] is `1` (the file is then written
    /// anew), else replaying it (it must exist and be valid).
    pub fn open(path: impl AsRef<Path>) -> Result<Cassette, CassetteError> {
        match Mode::from_env() {
            Mode::Record => Ok(Cassette::new(path, Mode::Record)),
            Mode::Replay => Cassette::replay(path),
        }
    }

    /// The cassette at `path`, replaying the file.
    pub fn replay(path: impl AsRef<Path>) -> Result<Cassette, CassetteError> {
        let path = path.as_ref();
        let file = CassetteFile::read(path)?;
        Ok(Cassette::from_file(path, file))
    }

    /// A cassette replaying `file` (`path` names it in errors; nothing is read).
    pub fn from_file(path: impl AsRef<Path>, file: CassetteFile) -> Cassette {
        let cassette = Cassette::new(path, Mode::Replay);
        {
            let mut state = cassette.state();
            state.used = vec![false; file.interactions.len()];
            state.file = file;
        }
        cassette
    }

    /// An empty cassette at `path` in `mode` (nothing is read; to replay a file use
    /// [`replay`](Cassette::replay)).
    pub fn new(path: impl AsRef<Path>, mode: Mode) -> Cassette {
        Cassette {
            inner: Arc::new(Inner {
                path: path.as_ref().to_owned(),
                mode,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The same cassette, comparing requests under `policy` (default: [`MatchPolicy::exact`]).
    pub fn with_policy(self, policy: MatchPolicy) -> Cassette {
        self.state().policy = policy;
        self
    }

    /// Whether it records or replays.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// `model` wrapped: a [`RecordingModel`] when recording, a [`ReplayModel`] (answering under
    /// `model`'s name, never calling it) when replaying.
    pub fn model(&self, model: impl ChatModel) -> Arc<dyn ChatModel> {
        match self.mode() {
            Mode::Record => Arc::new(RecordingModel::new(model, self.clone())),
            Mode::Replay => Arc::new(ReplayModel::new(model.model_name(), self.clone())),
        }
    }

    /// `tool` wrapped: a [`RecordingTool`] when recording, a [`ReplayTool`] (with `tool`'s
    /// name, description and parameters, never calling it) when replaying.
    pub fn tool(&self, tool: impl Tool) -> Arc<dyn Tool> {
        match self.mode() {
            Mode::Record => Arc::new(RecordingTool::new(tool, self.clone())),
            Mode::Replay => Arc::new(ReplayTool::new(tool, self.clone())),
        }
    }

    /// A toolset fetched live when recording (an MCP server's tools, found only by asking the
    /// server): recording, keeps each tool's definition under `name` and wraps each tool to
    /// record its calls ([`RecordingTool`]); replaying, ignores `tools` (give none) and gives
    /// [`replay_toolset`](Cassette::replay_toolset)'s. [`EvalRunner::toolset`](crate::EvalRunner::toolset)
    /// calls this for you.
    pub fn record_toolset(&self, name: &str, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
        if self.mode() == Mode::Replay {
            return self.replay_toolset(name).unwrap_or_default();
        }
        let definitions = tools
            .iter()
            .map(|t| agentweave_runtime::model::ToolDefinition {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                parameters: t.parameters(),
            })
            .collect();
        {
            let mut state = self.state();
            state.file.toolsets.insert(name.to_owned(), definitions);
            state.dirty = true;
        }
        tools
            .into_iter()
            .map(|t| Arc::new(RecordingTool::new(t, self.clone())) as Arc<dyn Tool>)
            .collect()
    }

    /// The tools of toolset `name` as recorded: each with its recorded name, description and
    /// parameters, answering from the cassette ([`ReplayTool`]); the live tools (an MCP
    /// server) are never needed. [`CassetteError::NoToolset`] if the cassette recorded none
    /// under that name.
    pub fn replay_toolset(&self, name: &str) -> Result<Vec<Arc<dyn Tool>>, CassetteError> {
        let state = self.state();
        let Some(definitions) = state.file.toolsets.get(name) else {
            return Err(CassetteError::NoToolset {
                path: self.inner.path.clone(),
                name: name.to_owned(),
                recorded: state.file.toolsets.keys().cloned().collect(),
            });
        };
        Ok(definitions
            .iter()
            .map(|d| {
                Arc::new(ReplayTool::new(RecordedTool(d.clone()), self.clone())) as Arc<dyn Tool>
            })
            .collect())
    }

    /// Ties the cassette to `flow`: recording, stamps the file with the flow's shape;
    /// replaying, checks that the file was recorded with the same flow
    /// ([`CassetteError::OtherFlow`] if not; a file with no stamp is accepted).
    pub fn check_flow(&self, flow: &FlowAgent) -> Result<(), CassetteError> {
        let current = FlowStamp {
            shape: flow.shape(),
            fingerprint: format!("{:016x}", flow.fingerprint()),
        };
        let mut state = self.state();
        match self.mode() {
            Mode::Record => {
                state.file.flow = Some(current);
                state.dirty = true;
                Ok(())
            }
            Mode::Replay => match &state.file.flow {
                Some(recorded) if recorded.fingerprint != current.fingerprint => {
                    Err(CassetteError::OtherFlow {
                        path: self.inner.path.clone(),
                        recorded: recorded.shape.clone(),
                        current: current.shape,
                    })
                }
                _ => Ok(()),
            },
        }
    }

    /// Recording: writes the file. Replaying: does nothing.
    pub fn save(&self) -> Result<(), CassetteError> {
        if self.mode() == Mode::Replay {
            return Ok(());
        }
        let mut state = self.state();
        state.file.write(&self.inner.path)?;
        state.dirty = false;
        Ok(())
    }

    /// What the cassette holds now (recording: what was recorded so far).
    pub fn file(&self) -> CassetteFile {
        self.state().file.clone()
    }

    /// The replayed calls it could not answer, in the order they came.
    pub fn errors(&self) -> Vec<ReplayError> {
        self.state().errors.clone()
    }

    /// Replaying: how many recorded interactions were not asked for (a flow that now makes
    /// fewer calls than when recorded).
    pub fn unused(&self) -> usize {
        self.state().used.iter().filter(|u| !**u).count()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn push(&self, interaction: Interaction) {
        let mut state = self.state();
        state.file.interactions.push(interaction);
        state.dirty = true;
    }

    /// Replay: the recorded answer to `request` of model `model`.
    pub(crate) fn take_model(
        &self,
        model: &str,
        request: &RecordedRequest,
    ) -> Result<RecordedResponse, ReplayError> {
        let mut state = self.state();
        let call = bump(&mut state.calls, "model:", model);
        let now = serde_json::to_value(request).expect("a request serialises");
        // The request identifies the call, not the model's name: a replay may build its models
        // under other names than the recording's (a scripted stand-in for a real model, another
        // deployment). The same name is preferred, so two models asked alike keep their answers.
        let mut first_unused: Option<usize> = None;
        let mut first_unused_any: Option<usize> = None;
        let mut recorded = 0;
        let mut found = None;
        let mut found_any = None;
        for (i, interaction) in state.file.interactions.iter().enumerate() {
            let Interaction::Model(m) = interaction else {
                continue;
            };
            let same = m.name == model;
            recorded += 1;
            if state.used[i] {
                continue;
            }
            first_unused_any.get_or_insert(i);
            if same {
                first_unused.get_or_insert(i);
            } else if found_any.is_some() {
                continue;
            }
            let then = serde_json::to_value(&m.request).expect("a request serialises");
            if state.policy.diff(&then, &now).is_empty() {
                if same {
                    found = Some(i);
                    break;
                }
                found_any = Some(i);
            }
        }
        let found = found.or(found_any);
        let first_unused = first_unused.or(first_unused_any);
        let error = match (found, first_unused) {
            (Some(i), _) => {
                state.used[i] = true;
                let Interaction::Model(m) = &state.file.interactions[i] else {
                    unreachable!("a model interaction was found")
                };
                return Ok(m.response.clone());
            }
            (None, Some(i)) => {
                let Interaction::Model(m) = &state.file.interactions[i] else {
                    unreachable!("a model interaction was found")
                };
                let then = serde_json::to_value(&m.request).expect("a request serialises");
                ReplayError::RequestMismatch {
                    path: self.inner.path.clone(),
                    model: model.to_owned(),
                    recorded_as: m.name.clone(),
                    call,
                    diff: state.policy.diff(&then, &now),
                }
            }
            (None, None) => {
                let mut others: Vec<String> = state
                    .file
                    .interactions
                    .iter()
                    .filter_map(|i| match i {
                        Interaction::Model(m) => Some(m.name.clone()),
                        Interaction::Tool(_) => None,
                    })
                    .collect();
                others.sort();
                others.dedup();
                ReplayError::Exhausted {
                    path: self.inner.path.clone(),
                    model: model.to_owned(),
                    call,
                    recorded,
                    others,
                }
            }
        };
        state.errors.push(error.clone());
        Err(error)
    }

    /// Replay: the recorded result of tool `tool` called with `arguments`.
    pub(crate) fn take_tool(
        &self,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<ToolResult, ReplayError> {
        let mut state = self.state();
        let call = bump(&mut state.calls, "tool:", tool);
        let mut first_unused: Option<usize> = None;
        let mut recorded = 0;
        for (i, interaction) in state.file.interactions.iter().enumerate() {
            let Interaction::Tool(t) = interaction else {
                continue;
            };
            if t.name != tool {
                continue;
            }
            recorded += 1;
            if state.used[i] {
                continue;
            }
            first_unused.get_or_insert(i);
            if t.arguments == *arguments {
                let result = t.result.clone();
                state.used[i] = true;
                return Ok(result);
            }
        }
        let error = match first_unused {
            Some(i) => {
                let Interaction::Tool(ToolInteraction {
                    arguments: then, ..
                }) = &state.file.interactions[i]
                else {
                    unreachable!("a tool interaction was found")
                };
                ReplayError::ToolMismatch {
                    path: self.inner.path.clone(),
                    tool: tool.to_owned(),
                    call,
                    diff: MatchPolicy::exact().diff(then, arguments),
                }
            }
            None => ReplayError::ToolExhausted {
                path: self.inner.path.clone(),
                tool: tool.to_owned(),
                call,
                recorded,
            },
        };
        state.errors.push(error.clone());
        Err(error)
    }
}

fn bump(calls: &mut HashMap<String, usize>, kind: &str, name: &str) -> usize {
    let n = calls.entry(format!("{kind}{name}")).or_default();
    *n += 1;
    *n
}

impl Drop for Inner {
    /// A recording cassette that was not saved since its last change is saved now.
    fn drop(&mut self) {
        if self.mode != Mode::Record {
            return;
        }
        let state = self
            .state
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if state.dirty {
            if let Err(e) = state.file.write(&self.path) {
                eprintln!("agentweave-eval: {e}");
            }
        }
    }
}
