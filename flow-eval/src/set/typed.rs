//! Eval sets written in Rust: [`TrajectoryExpectation`] from a flow's typed
//! [`TrajectorySpec`] (`Desk::trajectory()...`, made by `flow!`), and constructors of sets,
//! cases and turns.
//!
//! A trajectory written against the flow's generated types names only agents the flow has
//! (`DeskAgent::Refund`) and transfers it allows (`DeskTriageTarget::Refund`: triage to
//! refund): a typo or a transfer the tree does not allow is a compile error, not a case that
//! can never pass.

use agentweave_runtime::spec::expected::TrajectorySpec;
use agentweave_runtime::spec::expected::{ExpectedArgs, ExpectedMode, ExpectedStep as Typed};

use super::format::{
    ArgsMatch, EvalCase, EvalSet, Expectations, ExpectedStep, MatchMode, ResponseExpectation,
    ResumeAnswer, TrajectoryExpectation, TurnCase,
};

impl<F> From<TrajectorySpec<F>> for TrajectoryExpectation {
    /// The spec's steps, mode and argument matching, with the agents named by name.
    fn from(spec: TrajectorySpec<F>) -> Self {
        TrajectoryExpectation::from(&spec)
    }
}

impl<F> From<&TrajectorySpec<F>> for TrajectoryExpectation {
    /// The spec's steps, mode and argument matching, with the agents named by name.
    fn from(spec: &TrajectorySpec<F>) -> Self {
        let mode = match spec.mode() {
            ExpectedMode::Exact => MatchMode::Exact,
            ExpectedMode::InOrder => MatchMode::InOrder,
            ExpectedMode::AnyOrder => MatchMode::AnyOrder,
        };
        let args = match spec.args() {
            ExpectedArgs::Exact => ArgsMatch::Exact,
            ExpectedArgs::Subset => ArgsMatch::Subset,
            ExpectedArgs::Ignore => ArgsMatch::Ignore,
        };
        let steps = spec
            .steps()
            .iter()
            .map(|step| match step {
                Typed::Agent { agent } => ExpectedStep::agent(*agent),
                Typed::Transfer { from, to } => ExpectedStep::transfer(*to).by(*from),
                Typed::Tool { tool, args, agent } => ExpectedStep {
                    tool: Some(tool.clone()),
                    args: args.clone(),
                    agent: agent.map(str::to_owned),
                    ..ExpectedStep::default()
                },
            })
            .collect();
        TrajectoryExpectation { mode, args, steps }
    }
}

impl EvalSet {
    /// An empty set named `name`; add cases with [`case`](Self::case).
    pub fn new(name: impl Into<String>) -> Self {
        EvalSet {
            schema: None,
            name: name.into(),
            description: String::new(),
            cases: Vec::new(),
        }
    }

    /// The set with `case` added.
    pub fn case(mut self, case: EvalCase) -> Self {
        self.cases.push(case);
        self
    }
}

impl EvalCase {
    /// A case with id `id` and no turns yet; add them with [`turn`](Self::turn).
    pub fn new(id: impl Into<String>) -> Self {
        EvalCase {
            id: id.into(),
            description: String::new(),
            turns: Vec::new(),
            simulation: None,
            expect: Expectations::default(),
            repeats: None,
            pass_rate: None,
            memory: Vec::new(),
        }
    }

    /// The case with `turn` added after its other turns.
    pub fn turn(mut self, turn: TurnCase) -> Self {
        self.turns.push(turn);
        self
    }
}

impl TurnCase {
    /// The user says `user`; nothing is expected yet.
    pub fn new(user: impl Into<String>) -> Self {
        TurnCase {
            user: user.into(),
            resume: Vec::new(),
            expect: Expectations::default(),
        }
    }

    /// Answers the next interrupt the turn stops at (see [`ResumeAnswer`]).
    pub fn resume(mut self, answer: ResumeAnswer) -> Self {
        self.resume.push(answer);
        self
    }

    /// The turn must take this trajectory: a typed `Flow::trajectory()` spec, or a
    /// [`TrajectoryExpectation`].
    pub fn trajectory(mut self, trajectory: impl Into<TrajectoryExpectation>) -> Self {
        self.expect.trajectory = Some(trajectory.into());
        self
    }

    /// The turn's answer must pass this check too.
    pub fn response(mut self, check: ResponseExpectation) -> Self {
        self.expect.response.push(check);
        self
    }
}
