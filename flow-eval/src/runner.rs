//! [`EvalRunner`]: runs an eval set against a flow and makes the [`Report`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use agentweave_runtime::{
    ChatModel, EventJson, FlowAgent, InMemoryStore, InterruptInfo, Message, Runner, Tool,
    TurnOutcome,
};
use futures::future::BoxFuture;
use futures::StreamExt;

use crate::cassette::{Cassette, MatchPolicy, Mode};
use crate::criteria::{
    check_budget, check_response, match_trajectory, Criterion, Exchange, Judge, Score, Subject,
};
use crate::memory::EvalMemory;
use crate::report::{wilson_interval, CaseResult, FlowPicture, Report, RunResult, TurnResult};
use crate::set::{EvalCase, EvalSet, Expectations, ResumeAnswer};
use crate::simulate::{next_user_turn, NextTurn};
use crate::trajectory::{Metrics, Trajectory, TrajectoryRecorder};
use agentweave_runtime::memory::{Memory, Tenant};
use agentweave_runtime::TurnRequest;

/// What the flow builder is given for one run of a case: the case, the cassette its models
/// and tools record into or replay from (when the runner has a cassette folder), and the
/// runner's [toolsets](EvalRunner::toolset) for the run.
#[derive(Clone)]
pub struct CaseEnv {
    /// The case's id.
    pub case_id: String,
    /// Which run of the case (from 1).
    pub run: u32,
    /// The run's cassette, if the runner records or replays.
    pub cassette: Option<Cassette>,
    toolsets: Arc<BTreeMap<String, Vec<Arc<dyn Tool>>>>,
    memory: Option<(Memory, Tenant)>,
}

impl std::fmt::Debug for CaseEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaseEnv")
            .field("case_id", &self.case_id)
            .field("run", &self.run)
            .field("cassette", &self.cassette)
            .field("toolsets", &self.toolsets.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl CaseEnv {
    /// The tools of the runner's toolset `name` ([`EvalRunner::toolset`]): fetched live and
    /// recorded, or replayed from the cassette without fetching. Empty for a name the runner
    /// has no toolset for, and when the flow is built only to draw the report's picture.
    pub fn toolset(&self, name: &str) -> Vec<Arc<dyn Tool>> {
        self.toolsets.get(name).cloned().unwrap_or_default()
    }

    /// The run's long-term memory ([`EvalRunner::memory`]): fresh for each run of each case,
    /// holding the case's `memory` items when the flow is built. Give it to the flow's
    /// `MemoryRecall`, `MemoryExtraction` or memory tools, in [`tenant`](Self::tenant).
    pub fn memory(&self) -> Option<&Memory> {
        self.memory.as_ref().map(|(m, _)| m)
    }

    /// The tenant of the run's memory items ([`EvalRunner::memory`]).
    pub fn tenant(&self) -> Option<&Tenant> {
        self.memory.as_ref().map(|(_, t)| t)
    }

    /// `model`, recorded or replayed through the run's cassette if it has one.
    pub fn model(&self, model: impl ChatModel) -> Arc<dyn ChatModel> {
        match &self.cassette {
            Some(c) => c.model(model),
            None => Arc::new(model),
        }
    }

    /// `tool`, recorded or replayed through the run's cassette if it has one.
    pub fn tool(&self, tool: impl Tool) -> Arc<dyn Tool> {
        match &self.cassette {
            Some(c) => c.tool(tool),
            None => Arc::new(tool),
        }
    }
}

type BuildFn = dyn Fn(&CaseEnv) -> FlowAgent + Send + Sync;

/// What fetches a toolset's tools live (see [`EvalRunner::toolset`]).
type FetchFn = dyn Fn() -> BoxFuture<'static, Result<Vec<Arc<dyn Tool>>, String>> + Send + Sync;

/// Runs eval sets against a flow.
///
/// The flow is built anew for each run of each case by the function given to
/// [`new`](EvalRunner::new) (so no state leaks between cases); it wraps its models and tools
/// with the [`CaseEnv`] to record or replay them. Each case runs on a new thread of an
/// in-memory store, one [`Runner::turn`] per user turn; a [`TrajectoryRecorder`] gathers each
/// turn's steps and costs; then every expectation is scored. The store keeps the checkpoints of
/// interrupts too: a turn that stops for an approval continues with the answers of its
/// case's `resume` ([`ResumeAnswer`]), as a thread's turn does for a human.
///
/// ```
/// # futures::executor::block_on(async {
/// use agentweave_eval::runner::EvalRunner;
/// use agentweave_eval::set::EvalSet;
/// use agentweave_runtime::model::{ScriptStep, ScriptedModel};
/// use agentweave_runtime::{ChatModelAgent, FlowAgent};
///
/// let set = EvalSet::from_json("inline.json", r#"{"name": "greeting", "cases": [
///     {"id": "hello", "turns": [{"user": "hi", "expect": {"response": [{"contains": "Hello"}]}}]}
/// ]}"#).unwrap();
/// let runner = EvalRunner::new(|env| {
///     let model = env.model(ScriptedModel::new([ScriptStep::text("Hello there!")]));
///     FlowAgent::new(ChatModelAgent::builder("greeter", model).build().unwrap())
/// });
/// let report = runner.run(&set).await;
/// assert!(report.passed(), "{}", report.table());
/// # });
/// ```
pub struct EvalRunner {
    build: Arc<BuildFn>,
    cassettes: Option<PathBuf>,
    mode: Option<Mode>,
    policy: MatchPolicy,
    judge: Option<(Arc<dyn ChatModel>, Option<String>)>,
    persona: Option<Arc<dyn ChatModel>>,
    criteria: Vec<Arc<dyn Criterion>>,
    repeats: Option<u32>,
    streaming: bool,
    toolsets: Vec<(String, Arc<FetchFn>)>,
    memory: Option<EvalMemory>,
}

impl EvalRunner {
    /// A runner building the flow with `build` for each run of each case.
    pub fn new(build: impl Fn(&CaseEnv) -> FlowAgent + Send + Sync + 'static) -> Self {
        EvalRunner {
            build: Arc::new(build),
            cassettes: None,
            mode: None,
            policy: MatchPolicy::exact(),
            judge: None,
            persona: None,
            criteria: Vec::new(),
            repeats: None,
            streaming: false,
            toolsets: Vec::new(),
            memory: None,
        }
    }

    /// Gives each run of each case a fresh long-term memory made by `make`, whose items are
    /// in `tenant`: the case's `memory` items are put into it before its first turn, the flow
    /// builder gets it ([`CaseEnv::memory`]), and the `memory` expectations (what a turn
    /// recalled, what is kept after it) are checked against it.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use agentweave_eval::runner::EvalRunner;
    /// use agentweave_eval::set::EvalSet;
    /// use agentweave_runtime::memory::{Memory, MemoryRecall, Scope, TransientMemoryStore};
    /// use agentweave_runtime::model::ScriptedModel;
    /// use agentweave_runtime::{ChatModelAgent, FlowAgent};
    ///
    /// let set = EvalSet::from_json("inline.json", r#"{"name": "desk", "cases": [{"id": "printer",
    ///     "memory": [{"scope": "user:alice", "namespace": "facts", "key": "printer",
    ///                 "value": "X200", "text": "Alice's printer is an X200"}],
    ///     "turns": [{"user": "my printer jams",
    ///                "expect": {"memory": {"recalled": ["facts/printer"]}}}]}]}"#).unwrap();
    /// let runner = EvalRunner::new(|env| {
    ///     let (memory, tenant) = (env.memory().unwrap().clone(), env.tenant().unwrap().clone());
    ///     let recall = MemoryRecall::new(memory, tenant, [Scope::user("alice").unwrap()], 200);
    ///     let model = env.model(ScriptedModel::new(["The X200?"]));
    ///     FlowAgent::new(ChatModelAgent::builder("desk", model).middleware(recall).build().unwrap())
    /// })
    /// .memory("acme", || Memory::new(TransientMemoryStore::new()));
    /// let report = runner.run(&set).await;
    /// assert!(report.passed(), "{}", report.table());
    /// # });
    /// ```
    pub fn memory(
        mut self,
        tenant: impl Into<String>,
        make: impl Fn() -> Memory + Send + Sync + 'static,
    ) -> Self {
        self.memory = Some(EvalMemory {
            tenant: tenant.into(),
            make: Arc::new(make),
        });
        self
    }

    /// A toolset whose tools are fetched live (an MCP server's: `fetch` connects and lists
    /// them), given to the flow builder as [`CaseEnv::toolset`]. Recording (or without
    /// cassettes), each run fetches it and its tools' definitions are kept in the cassette;
    /// replaying, its tools are made from the cassette and `fetch` is never called, so an
    /// offline replay needs no MCP server installed.
    ///
    /// ```no_run
    /// # use agentweave_eval::EvalRunner;
    /// # use agentweave_runtime::{ChatModelAgent, FlowAgent};
    /// # use agentweave_runtime::model::ScriptedModel;
    /// let runner = EvalRunner::new(|env| {
    ///     let agent = ChatModelAgent::builder("clerk", env.model(ScriptedModel::new(["ok"])))
    ///         .tools(env.toolset("files"))
    ///         .build()
    ///         .unwrap();
    ///     FlowAgent::new(agent)
    /// })
    /// .cassettes("tests/cassettes")
    /// .toolset("files", || async {
    ///     // e.g. McpServer::connect(config).await?.tools().await, errors as text
    ///     Ok(Vec::new())
    /// });
    /// ```
    pub fn toolset<F, Fut>(mut self, name: impl Into<String>, fetch: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Vec<Arc<dyn Tool>>, String>> + Send + 'static,
    {
        let fetch: Arc<FetchFn> = Arc::new(move || Box::pin(fetch()));
        self.toolsets.push((name.into(), fetch));
        self
    }

    /// The toolsets of one run: replayed from `cassette`, or fetched (and recorded).
    async fn toolsets_for(
        &self,
        cassette: Option<&Cassette>,
    ) -> Result<BTreeMap<String, Vec<Arc<dyn Tool>>>, String> {
        let mut out = BTreeMap::new();
        for (name, fetch) in &self.toolsets {
            let tools = match cassette {
                Some(c) if c.mode() == Mode::Replay => {
                    c.replay_toolset(name).map_err(|e| e.to_string())?
                }
                Some(c) => c.record_toolset(name, fetch_toolset(name, &**fetch).await?),
                None => fetch_toolset(name, &**fetch).await?,
            };
            out.insert(name.clone(), tools);
        }
        Ok(out)
    }

    /// Records or replays each run's models and tools (and the judge's and persona's) in a
    /// cassette in `dir`: `CASE.json`, or `CASE.run-N.json` for repeated cases. Replaying
    /// unless [`RECORD_ENV`](crate::cassette::RECORD_ENV) is `1` (or [`mode`](Self::mode)
    /// says otherwise).
    pub fn cassettes(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cassettes = Some(dir.into());
        self
    }

    /// Records or replays whatever the environment says.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// How replayed requests are matched (default: exact).
    pub fn match_policy(mut self, policy: MatchPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The model that judges `judge` expectations, with the default prompt.
    pub fn judge(mut self, model: impl ChatModel) -> Self {
        self.judge = Some((Arc::new(model), None));
        self
    }

    /// The judge's model, with a prompt of your own (see
    /// [`DEFAULT_JUDGE_PROMPT`](crate::criteria::DEFAULT_JUDGE_PROMPT)).
    pub fn judge_with_prompt(mut self, model: impl ChatModel, prompt: impl Into<String>) -> Self {
        self.judge = Some((Arc::new(model), Some(prompt.into())));
        self
    }

    /// The model that plays simulated users without a script.
    pub fn persona(mut self, model: impl ChatModel) -> Self {
        self.persona = Some(Arc::new(model));
        self
    }

    /// A criterion of your own, scored on every turn.
    pub fn criterion(mut self, criterion: impl Criterion) -> Self {
        self.criteria.push(Arc::new(criterion));
        self
    }

    /// Runs every case this many times (overriding the cases' `repeats`).
    pub fn repeats(mut self, runs: u32) -> Self {
        self.repeats = Some(runs.max(1));
        self
    }

    /// Whether the flow's agents stream their answers (default: no).
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Runs every case of `set`, in order.
    pub async fn run(&self, set: &EvalSet) -> Report {
        let mut cases = Vec::new();
        for case in &set.cases {
            cases.push(self.run_case(case).await);
        }
        let memory = self.memory.as_ref().and_then(|settings| {
            let tenant = Tenant::new(settings.tenant.as_str()).ok()?;
            Some(((settings.make)(), tenant))
        });
        let flow = (self.build)(&CaseEnv {
            case_id: String::new(),
            run: 0,
            cassette: None,
            toolsets: Arc::default(),
            memory,
        });
        Report {
            set: set.name.clone(),
            flow: Some(FlowPicture {
                shape: flow.shape(),
                svg: flow.to_svg(),
            }),
            cases,
        }
    }

    /// Runs the case `id` of `set` alone (for one test per case); `None` if the set has no
    /// such case.
    pub async fn run_one(&self, set: &EvalSet, id: &str) -> Option<CaseResult> {
        let case = set.cases.iter().find(|c| c.id == id)?;
        Some(self.run_case(case).await)
    }

    /// Runs one case as many times as it asks, and weighs its pass rate.
    pub async fn run_case(&self, case: &EvalCase) -> CaseResult {
        let repeats = self.repeats.or(case.repeats).unwrap_or(1).max(1);
        let mut runs = Vec::new();
        for run in 1..=repeats {
            runs.push(self.run_once(case, run, repeats).await);
        }
        let passes = runs.iter().filter(|r| r.passed).count() as u32;
        let pass_rate = f64::from(passes) / f64::from(repeats);
        let threshold = case.pass_rate.unwrap_or(1.0);
        CaseResult {
            id: case.id.clone(),
            description: case.description.clone(),
            passes,
            pass_rate,
            interval: wilson_interval(passes, repeats),
            threshold,
            passed: pass_rate >= threshold,
            runs,
        }
    }

    fn cassette_for(
        &self,
        case: &EvalCase,
        run: u32,
        repeats: u32,
    ) -> Result<Option<Cassette>, String> {
        let Some(dir) = &self.cassettes else {
            return Ok(None);
        };
        let file = if repeats > 1 {
            format!("{}.run-{run}.json", case.id)
        } else {
            format!("{}.json", case.id)
        };
        let path = dir.join(file);
        let cassette = match self.mode.unwrap_or_else(Mode::from_env) {
            Mode::Record => Cassette::new(&path, Mode::Record),
            Mode::Replay => Cassette::replay(&path).map_err(|e| e.to_string())?,
        };
        Ok(Some(cassette.with_policy(self.policy.clone())))
    }

    async fn run_once(&self, case: &EvalCase, run: u32, repeats: u32) -> RunResult {
        let failed = |error: String| RunResult {
            turns: Vec::new(),
            case_scores: Vec::new(),
            error: Some(error),
            passed: false,
        };
        let cassette = match self.cassette_for(case, run, repeats) {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        let toolsets = match self.toolsets_for(cassette.as_ref()).await {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let memory =
            match &self.memory {
                None if !case.memory.is_empty() => return failed(
                    "the case starts with memory items, but the runner has no memory: give one \
                     with EvalRunner::memory"
                        .into(),
                ),
                None => None,
                Some(settings) => {
                    let tenant = match Tenant::new(settings.tenant.as_str()) {
                        Ok(t) => t,
                        Err(e) => return failed(format!("the runner's memory tenant: {e}")),
                    };
                    let memory = (settings.make)();
                    if let Err(e) = crate::memory::seed(&memory, &tenant, &case.memory).await {
                        return failed(e);
                    }
                    Some((memory, tenant))
                }
            };
        let env = CaseEnv {
            case_id: case.id.clone(),
            run,
            cassette: cassette.clone(),
            toolsets: Arc::new(toolsets),
            memory,
        };
        let flow = (self.build)(&env);
        if let Some(c) = &cassette {
            if let Err(e) = c.check_flow(&flow) {
                return failed(e.to_string());
            }
        }
        let judge = self.judge.as_ref().map(|(model, prompt)| {
            let judge = Judge::from_arc(env.model(Arc::clone(model)));
            match prompt {
                Some(p) => judge.with_prompt(p.clone()),
                None => judge,
            }
        });
        let persona = self.persona.as_ref().map(|m| env.model(Arc::clone(m)));
        let recorder = TrajectoryRecorder::new();
        // One in-memory store per run, for the thread and the checkpoints of its interrupts
        // (a case's approvals resume from them).
        let runner = Runner::builder(flow)
            .streaming(self.streaming)
            .stores(InMemoryStore::new())
            .middleware(recorder.clone())
            .build();
        let thread: String = format!("eval-{}-{run}", case.id)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();

        let mut turns: Vec<TurnResult> = Vec::new();
        let mut conversation: Vec<Exchange> = Vec::new();
        let mut error = None;
        let mut planned: Vec<(String, Expectations, Vec<ResumeAnswer>)> = case
            .turns
            .iter()
            .map(|t| (t.user.clone(), t.expect.clone(), t.resume.clone()))
            .collect();
        if let (Some(sim), true) = (&case.simulation, case.turns.is_empty()) {
            planned.push((sim.opening.clone(), Expectations::default(), Vec::new()));
        }
        let mut next = 0;
        loop {
            let (user, expect, resume) = if next < planned.len() {
                planned[next].clone()
            } else if let Some(sim) = &case.simulation {
                match next_user_turn(sim, &conversation, persona.as_ref()).await {
                    Ok(NextTurn::Say(text)) => (text, Expectations::default(), Vec::new()),
                    Ok(NextTurn::Stop) => break,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            } else {
                break;
            };
            next += 1;
            let turn = self
                .run_turn(
                    &runner,
                    &recorder,
                    &thread,
                    &user,
                    &expect,
                    &resume,
                    &mut conversation,
                    judge.as_ref(),
                    env.memory.as_ref(),
                )
                .await;
            let failed_turn = turn.error.clone();
            turns.push(turn);
            if let Some(e) = failed_turn {
                error = Some(format!("turn {next}: {e}"));
                break;
            }
        }

        let mut case_scores = Vec::new();
        if !case.expect.is_empty() {
            let mut trajectory = Trajectory::default();
            let mut metrics = Metrics::default();
            for t in &turns {
                trajectory.steps.extend(t.trajectory.steps.iter().cloned());
                metrics.usage += t.metrics.usage;
                metrics.model_calls += t.metrics.model_calls;
                metrics.tool_calls += t.metrics.tool_calls;
                metrics.transfers += t.metrics.transfers;
                metrics.wall_ms += t.metrics.wall_ms;
            }
            let response = turns.last().and_then(|t| t.answer.clone());
            let subject = Subject {
                conversation: &conversation,
                response: response.as_deref(),
                trajectory: &trajectory,
                metrics: &metrics,
            };
            case_scores = score(&case.expect, &subject, judge.as_ref(), &[]).await;
            if let Some(m) = &case.expect.memory {
                let seen: Vec<&EventJson> = turns.iter().flat_map(|t| &t.events).collect();
                let memory = env.memory.as_ref().map(|(m, t)| (m, t));
                case_scores.push(crate::memory::check(m, &seen, memory).await);
            }
        }

        if let Some(c) = &cassette {
            // A replay error is the cause of whatever failed after it: it comes first.
            if let Some(first) = c.errors().first() {
                error = Some(format!("replay: {first}"));
            }
            if let Err(e) = c.save() {
                error.get_or_insert_with(|| e.to_string());
            }
        }
        let passed = error.is_none()
            && turns.iter().flat_map(|t| &t.scores).all(|s| s.passed)
            && case_scores.iter().all(|s| s.passed);
        RunResult {
            turns,
            case_scores,
            error,
            passed,
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_turn(
        &self,
        runner: &Runner,
        recorder: &TrajectoryRecorder,
        thread: &str,
        user: &str,
        expect: &Expectations,
        resume: &[ResumeAnswer],
        conversation: &mut Vec<Exchange>,
        judge: Option<&Judge>,
        memory: Option<&(Memory, Tenant)>,
    ) -> TurnResult {
        let started = Instant::now();
        let mut events: Vec<EventJson> = Vec::new();
        let mut error = None;
        let mut answer = None;
        let mut request = TurnRequest::new(thread, Message::user(user));
        let mut unused: Vec<&ResumeAnswer> = resume.iter().collect();
        // The turn, then each continuation with the case's answers to its interrupts.
        loop {
            let mut turn = match runner.turn(request).await {
                Ok(turn) => turn,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            };
            while let Some(event) = turn.next().await {
                match event.materialized().await {
                    Ok(json) => {
                        if let Some(e) = &json.error {
                            error.get_or_insert_with(|| e.message.clone());
                        }
                        events.push(json);
                    }
                    Err(e) => {
                        error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            match turn.outcome() {
                Some(TurnOutcome::Completed { answer: a, .. }) => answer = a.map(|m| m.content),
                Some(TurnOutcome::Interrupted { interrupts, .. }) if error.is_none() => {
                    match answers_for(&interrupts, &mut unused) {
                        Ok(answers) => {
                            request = TurnRequest::resume(thread, answers);
                            continue;
                        }
                        Err(e) => error = Some(e),
                    }
                }
                Some(TurnOutcome::Interrupted { .. }) => {}
                Some(TurnOutcome::Failed(e)) => {
                    error.get_or_insert_with(|| e.to_string());
                }
                None => {
                    error.get_or_insert_with(|| "the turn ended without an outcome".into());
                }
            }
            break;
        }
        if error.is_none() && !unused.is_empty() {
            error = Some(format!(
                "the turn ended with {} of its resume answers unused (it stopped at fewer \
                 interrupts than the case answers)",
                unused.len()
            ));
        }
        let (trajectory, mut metrics) = recorder.take();
        metrics.wall_ms = started.elapsed().as_millis() as u64;
        conversation.push(Exchange {
            user: user.to_owned(),
            answer: answer.clone(),
        });
        let subject = Subject {
            conversation,
            response: answer.as_deref(),
            trajectory: &trajectory,
            metrics: &metrics,
        };
        let mut scores = score(expect, &subject, judge, &self.criteria).await;
        if let Some(m) = &expect.memory {
            let seen: Vec<&EventJson> = events.iter().collect();
            let memory = memory.map(|(m, t)| (m, t));
            scores.push(crate::memory::check(m, &seen, memory).await);
        }
        TurnResult {
            user: user.to_owned(),
            answer,
            events,
            trajectory,
            metrics,
            scores,
            error,
        }
    }
}

/// Fetches toolset `name` live.
async fn fetch_toolset(name: &str, fetch: &FetchFn) -> Result<Vec<Arc<dyn Tool>>, String> {
    fetch()
        .await
        .map_err(|e| format!("toolset '{name}' could not be fetched: {e}"))
}

/// The answers to `interrupts` from the case's `unused` answers (taken from it): each
/// interrupt takes the answer naming its id, else the next answer naming none.
fn answers_for(
    interrupts: &[InterruptInfo],
    unused: &mut Vec<&ResumeAnswer>,
) -> Result<Vec<(String, serde_json::Value)>, String> {
    let mut answers = Vec::with_capacity(interrupts.len());
    for interrupt in interrupts {
        let id = interrupt.id.to_string();
        let k = unused
            .iter()
            .position(|a| a.interrupt.as_deref() == Some(id.as_str()))
            .or_else(|| unused.iter().position(|a| a.interrupt.is_none()))
            .ok_or_else(|| {
                format!(
                    "the turn stopped for outside input at interrupt '{id}' ({}), and the case \
                     gives no answer for it: add one to the turn's \"resume\" (e.g. \
                     {{\"approve\": true}})",
                    interrupt.info
                )
            })?;
        let answer = unused.remove(k);
        answers.push((id, answer.resume_data()?));
    }
    Ok(answers)
}

async fn score(
    expect: &Expectations,
    subject: &Subject<'_>,
    judge: Option<&Judge>,
    extra: &[Arc<dyn Criterion>],
) -> Vec<Score> {
    let mut scores = Vec::new();
    if let Some(t) = &expect.trajectory {
        scores.push(match_trajectory(t, subject.trajectory));
    }
    for r in &expect.response {
        scores.push(check_response(r, subject.response));
    }
    if let Some(j) = &expect.judge {
        scores.push(match judge {
            Some(judge) => judge.grade(&j.rubric, j.threshold, subject).await,
            None => Score::fail(
                "judge",
                "the case asks for a judge, but the runner has no judge model: give one with \
                 EvalRunner::judge",
            ),
        });
    }
    if let Some(b) = &expect.budget {
        scores.push(check_budget(b, subject.metrics));
    }
    for c in extra {
        scores.push(c.evaluate(subject).await);
    }
    scores
}
