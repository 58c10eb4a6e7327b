//! A run's budgets while it runs ([`RunBudgets`]): its limits, when its wall time started, what
//! it has spent in all ([`RunTotals`], read by every check) and per agent ([`AgentTally`], slots
//! charged without the session's lock and folded into the session's
//! [`BudgetLedger`](crate::budget::BudgetLedger) whenever the ledger is read or saved).
//!
//! A model call's charge is a few atomic additions: no lock, no ledger entry. The session's
//! ledger stays the record that is saved, resumed and read out ([`Session::budget_ledger`],
//! the session values, a checkpoint): every reader of it folds the slots in first, under the
//! session's lock (see `Session::with_budget_ledger`).
//!
//! A run's block is reused: [`RunBudgets::start`] takes one from its thread's small pool once
//! nothing else holds it, and resets it in place.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::budget::{BudgetLedger, Budgets, ClearCaps, Spent, TALLY_SLOTS as SLOTS};
use crate::session::Session;
use crate::usage::Usage;

/// A run's budgets, when its first check was made, and what the run has spent, in all and per
/// agent. Shared with the runs nested in it (as the session's values are).
#[derive(Debug)]
pub(crate) struct RunBudgets {
    pub(crate) budgets: Arc<Budgets>,
    /// The run's limits as a check's common path compares them.
    pub(crate) caps: ClearCaps,
    started: OnceLock<std::time::SystemTime>,
    /// The run's totals, as in the session's ledger: read by a check without the session's
    /// lock.
    totals: RunTotals,
    /// What each agent spent since the session's ledger last folded it in.
    agents: AgentTally,
}

/// The run scope's spending: read from the session's [`BudgetLedger`] once, when the run starts
/// (a resumed run's saved spending), and then added to at every charge. The ledger's `total`
/// holds the same sums once the [`AgentTally`] is folded into it.
#[derive(Debug, Default)]
struct RunTotals {
    /// The address of the session values the run charges (its home; a session that does not
    /// share them, which a run's context never has, is charged in its ledger under its lock).
    home: usize,
    input: AtomicU64,
    output: AtomicU64,
    model_calls: AtomicU64,
    tool_calls: AtomicU64,
    cost: AtomicU64,
}

/// The bit of a slot's cached or reasoning tokens that says a call reported them (a sum of
/// them never reaches it): a usage that reported none stays `None` in the ledger.
const REPORTED: u64 = 1 << 63;

/// Per-agent spending not yet folded into the session's ledger: one slot per agent, found by
/// its shared name's address among the slots' keys (an agent whose name was made twice may take
/// two slots, and the fold adds them up by name).
///
/// A run starts with a slot for each agent that spent under the same [`Budgets`] before (see
/// [`SeenAgents`](crate::budget::SeenAgents)): a runner's agents claim nothing after its first
/// runs, and a charge is a search of the keys and a few atomic additions.
#[derive(Debug)]
struct AgentTally {
    /// How many slots are claimed (at most [`SLOTS`]); written under `names`' lock.
    claimed: AtomicUsize,
    /// The stamp of the next agent to spend since the last fold (its place in the ledger).
    order: AtomicU64,
    /// The claimed slots' agents, by the address of their names' text.
    keys: [AtomicUsize; SLOTS],
    /// The names of the first slots: the agents seen in earlier runs.
    seen: Arc<[Arc<str>]>,
    /// The names of the slots claimed in this run, after `seen`'s.
    names: Mutex<Vec<Arc<str>>>,
    sums: [Sums; SLOTS],
}

/// One agent's spending since the last fold.
#[derive(Debug, Default)]
struct Sums {
    /// When it first spent since the last fold (an `order` stamp; zero: not yet).
    first: AtomicU64,
    input: AtomicU64,
    output: AtomicU64,
    /// Cached input tokens, with [`REPORTED`] once a call reported them.
    cached: AtomicU64,
    /// Reasoning tokens, with [`REPORTED`] once a call reported them.
    reasoning: AtomicU64,
    model_calls: AtomicU64,
    tool_calls: AtomicU64,
    cost: AtomicU64,
}

impl Sums {
    /// Adds one model call's usage and cost.
    fn add_model_call(&self, usage: &Usage, cost: u64) {
        self.input.fetch_add(usage.input_tokens, Ordering::Relaxed);
        self.output
            .fetch_add(usage.output_tokens, Ordering::Relaxed);
        // (Two tests, not a loop over a pair: most replies report neither.)
        if let Some(n) = usage.cached_input_tokens {
            Self::add_reported(&self.cached, n);
        }
        if let Some(n) = usage.reasoning_tokens {
            Self::add_reported(&self.reasoning, n);
        }
        self.model_calls.fetch_add(1, Ordering::Relaxed);
        if cost != 0 {
            self.cost.fetch_add(cost, Ordering::Relaxed);
        }
    }

    /// Adds `n` reported tokens to `sum`, marked [`REPORTED`].
    fn add_reported(sum: &AtomicU64, n: u64) {
        sum.fetch_add(n, Ordering::Relaxed);
        sum.fetch_or(REPORTED, Ordering::Relaxed);
    }

    /// What was added since the last take, taken (each figure swapped for zero: a charge
    /// made at the same moment is taken whole at this take or the next).
    fn take(&self) -> Spent {
        let take = |n: &AtomicU64| {
            if n.load(Ordering::Relaxed) == 0 {
                0
            } else {
                n.swap(0, Ordering::Relaxed)
            }
        };
        let reported = |n: u64| (n & REPORTED != 0).then_some(n & !REPORTED);
        let mut usage = Usage::new(take(&self.input), take(&self.output));
        usage.cached_input_tokens = reported(take(&self.cached));
        usage.reasoning_tokens = reported(take(&self.reasoning));
        Spent {
            usage,
            model_calls: take(&self.model_calls),
            tool_calls: take(&self.tool_calls),
            cost_micro_usd: take(&self.cost),
        }
    }
}

/// An agent charged: its shared name, and where it keeps the slot it was charged in last (a
/// hint, looked at first).
pub(crate) type Charged<'a> = (&'a Arc<str>, &'a AtomicUsize);

/// The key of an agent's slot: the address of its shared name's text.
fn key_of(agent: &Arc<str>) -> usize {
    Arc::as_ptr(agent) as *const u8 as usize
}

impl AgentTally {
    /// A tally with a slot for each of `seen` (at most [`SLOTS`]), claimed by
    /// [`key_seen`](Self::key_seen).
    fn new(seen: Arc<[Arc<str>]>) -> Self {
        AgentTally {
            claimed: AtomicUsize::new(0),
            order: AtomicU64::new(0),
            keys: Default::default(),
            seen,
            names: Mutex::new(Vec::new()),
            sums: Default::default(),
        }
    }

    /// Claims the slots of the agents seen in earlier runs (done in place, once the run's
    /// budgets are on the heap: the tally is not copied again).
    fn key_seen(&self) {
        let seen = &self.seen[..self.seen.len().min(SLOTS)];
        for (key, agent) in self.keys.iter().zip(seen) {
            key.store(key_of(agent), Ordering::Relaxed);
        }
        self.claimed.store(seen.len(), Ordering::Release);
    }

    /// `agent`'s sums: its slot's, else a new slot's (and `seen` learns the agent); `None`
    /// when every slot is taken.
    #[inline]
    fn sums(&self, agent: Charged<'_>, seen: &crate::budget::SeenAgents) -> Option<&Sums> {
        let (name, hint) = agent;
        let key = key_of(name);
        let claimed = self.claimed.load(Ordering::Acquire).min(SLOTS);
        let at = hint.load(Ordering::Relaxed);
        let found = if at < claimed && self.keys[at].load(Ordering::Relaxed) == key {
            &self.sums[at]
        } else {
            let (at, found) = match self.keys[..claimed]
                .iter()
                .position(|k| k.load(Ordering::Relaxed) == key)
            {
                Some(i) => (i, &self.sums[i]),
                None => self.claim(name, key, seen)?,
            };
            hint.store(at, Ordering::Relaxed);
            found
        };
        if found.first.load(Ordering::Relaxed) == 0 {
            let stamp = self.order.fetch_add(1, Ordering::Relaxed) + 1;
            found.first.store(stamp, Ordering::Relaxed);
        }
        Some(found)
    }

    /// Claims a slot for `agent` (the name kept, so its address is not taken by another).
    #[cold]
    fn claim(
        &self,
        agent: &Arc<str>,
        key: usize,
        seen: &crate::budget::SeenAgents,
    ) -> Option<(usize, &Sums)> {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        // (Another lane of the agent may have claimed one meanwhile: then it has two, which
        // the fold adds up.)
        let claimed = self.claimed.load(Ordering::Relaxed);
        if claimed >= SLOTS {
            return None;
        }
        names.push(Arc::clone(agent));
        self.keys[claimed].store(key, Ordering::Relaxed);
        self.claimed.store(claimed + 1, Ordering::Release);
        seen.learn(agent);
        Some((claimed, &self.sums[claimed]))
    }

    /// Adds what each agent spent since the last fold to `ledger` (its total and the agent's
    /// entry, new agents in the order they first spent), and empties the slots.
    fn fold_into(&self, ledger: &mut BudgetLedger) {
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let claimed = self.claimed.load(Ordering::Acquire);
        let mut spent_in: [(u64, usize); SLOTS] = [(0, 0); SLOTS];
        let mut n = 0;
        for (i, sums) in self.sums[..claimed].iter().enumerate() {
            let first = sums.first.swap(0, Ordering::Relaxed);
            if first != 0 {
                spent_in[n] = (first, i);
                n += 1;
            }
        }
        spent_in[..n].sort_unstable();
        for &(_, i) in &spent_in[..n] {
            let name = match self.seen.get(i) {
                Some(name) => name,
                None => &names[i - self.seen.len()],
            };
            let spent = self.sums[i].take();
            if spent != Spent::default() {
                ledger.add_spent(name, &spent);
            }
        }
    }
}

/// How many runs' budgets a thread keeps for reuse (see [`RunBudgets::start`]).
const POOLED: usize = 4;

thread_local! {
    /// The budgets of runs started on this thread: one that nothing else holds any more (its
    /// run's contexts and its session let it go) is the next run's, reset in place.
    static POOL: RefCell<Vec<Arc<RunBudgets>>> = const { RefCell::new(Vec::new()) };
}

impl RunBudgets {
    /// The budgets of a run starting on `session`: its totals read from the session's ledger
    /// (a resumed run's saved spending, an earlier run's), its tally given to the session to
    /// fold into the ledger whenever the ledger is read.
    ///
    /// The block (about 900 bytes) is one of this thread's pool when one is free: a runner's
    /// runs one after another reuse one block, with its slots already keyed, instead of
    /// building, copying and zeroing a new one. A thread keeps at most [`POOLED`] blocks (with
    /// the budgets and agent names they last held) until it starts runs again.
    pub(crate) fn start(budgets: Arc<Budgets>, session: &Session) -> Arc<Self> {
        let home = session.values_home();
        let run = POOL
            .try_with(|pool| {
                let mut pool = pool.try_borrow_mut().ok()?;
                Self::pooled(&mut pool, &budgets, home)
            })
            .ok()
            .flatten()
            .unwrap_or_else(|| Self::fresh(budgets, home));
        let spent = session.join_budget_ledger(&run);
        let t = &run.totals;
        t.input.store(spent.usage.input_tokens, Ordering::Relaxed);
        t.output.store(spent.usage.output_tokens, Ordering::Relaxed);
        t.model_calls.store(spent.model_calls, Ordering::Relaxed);
        t.tool_calls.store(spent.tool_calls, Ordering::Relaxed);
        t.cost.store(spent.cost_micro_usd, Ordering::Relaxed);
        run
    }

    /// A new block for a run of `budgets` charging the session values at `home`.
    fn fresh(budgets: Arc<Budgets>, home: usize) -> Arc<Self> {
        Arc::new(Self::new(budgets, home))
    }

    /// A block for a run of `budgets` charging the session values at `home`: nothing spent,
    /// its slots keyed for the agents seen under `budgets` before.
    fn new(budgets: Arc<Budgets>, home: usize) -> Self {
        let run = RunBudgets {
            started: OnceLock::new(),
            totals: RunTotals {
                home,
                ..RunTotals::default()
            },
            agents: AgentTally::new(budgets.seen.agents()),
            caps: budgets.clear_caps(),
            budgets,
        };
        run.agents.key_seen();
        run
    }

    /// A block of `pool` that nothing else holds, reset for a new run (a new one, pooled,
    /// when none is free and the pool has room; `None` when it has none).
    fn pooled(
        pool: &mut Vec<Arc<RunBudgets>>,
        budgets: &Arc<Budgets>,
        home: usize,
    ) -> Option<Arc<Self>> {
        for block in pool.iter_mut() {
            if let Some(run) = Arc::get_mut(block) {
                run.reset(budgets, home);
                return Some(Arc::clone(block));
            }
        }
        if pool.len() >= POOLED {
            return None;
        }
        let run = Self::fresh(Arc::clone(budgets), home);
        pool.push(Arc::clone(&run));
        Some(run)
    }

    /// Readies a block nothing else holds for a new run of `budgets` at `home`: under the
    /// same budgets its slots keep their agents and are emptied (what they held was folded,
    /// or its session was dropped unread); under others it is made anew.
    fn reset(&mut self, budgets: &Arc<Budgets>, home: usize) {
        if !Arc::ptr_eq(&self.budgets, budgets) {
            *self = Self::new(Arc::clone(budgets), home);
            return;
        }
        self.started = OnceLock::new();
        // (The totals are set by `start`.)
        self.totals.home = home;
        let claimed = (*self.agents.claimed.get_mut()).min(SLOTS);
        for sums in &mut self.agents.sums[..claimed] {
            *sums = Sums::default();
        }
    }

    /// The time since the run's first check (which this is, if it is the first).
    pub(crate) fn elapsed(&self, now: std::time::SystemTime) -> std::time::Duration {
        let started = *self.started.get_or_init(|| now);
        now.duration_since(started).unwrap_or_default()
    }

    /// The time since the run's first check, read from `run`'s host clock only when a limit
    /// reads it (zero otherwise).
    pub(crate) fn elapsed_if_read(&self, run: &super::RunContext) -> std::time::Duration {
        if self.caps.reads_clock {
            self.elapsed(run.host().now())
        } else {
            std::time::Duration::ZERO
        }
    }

    /// The sums `agent` is charged in: `None` when `session` does not share the values the
    /// run's tally folds into, or the tally is full (then the charge goes to the ledger).
    #[inline]
    fn sums(&self, session: &Session, agent: Charged<'_>) -> Option<&Sums> {
        if self.totals.home != session.values_address() {
            return None;
        }
        self.agents.sums(agent, &self.budgets.seen)
    }

    /// Adds what the run's agents spent since the last fold to `ledger` (called by the session,
    /// under its lock, before the ledger is read).
    pub(crate) fn fold_into(&self, ledger: &mut BudgetLedger) {
        self.agents.fold_into(ledger);
    }

    /// Empties the run's tally without adding it anywhere (the session's ledger was replaced).
    pub(crate) fn discard(&self) {
        self.agents.fold_into(&mut BudgetLedger::default());
    }

    /// Whether a model call estimated at `input` and `output` tokens is within the run's
    /// limits when they alone decide it (see [`ClearCaps::clear`]): the common path of a
    /// check, reading only the totals it compares.
    #[inline]
    pub(crate) fn call_clear(&self, input: u64, output: u64, elapsed: std::time::Duration) -> bool {
        let t = &self.totals;
        self.caps.clear(
            (
                t.input.load(Ordering::Relaxed),
                t.output.load(Ordering::Relaxed),
                t.model_calls.load(Ordering::Relaxed),
            ),
            (input, output),
            elapsed,
        )
    }

    /// What the run has spent in all (the figures its limits read: input and output tokens,
    /// model and tool calls, money), without the session's lock.
    pub(crate) fn spent(&self) -> Spent {
        let t = &self.totals;
        Spent {
            usage: Usage::new(
                t.input.load(Ordering::Relaxed),
                t.output.load(Ordering::Relaxed),
            ),
            model_calls: t.model_calls.load(Ordering::Relaxed),
            tool_calls: t.tool_calls.load(Ordering::Relaxed),
            cost_micro_usd: t.cost.load(Ordering::Relaxed),
        }
    }

    /// Charges one model call of `agent` to the run's totals and the agent's slot (or, with
    /// no slot, `session`'s ledger).
    #[inline]
    pub(crate) fn charge_model_call(
        &self,
        session: &Session,
        agent: Charged<'_>,
        usage: &Usage,
        cost: u64,
    ) {
        let t = &self.totals;
        match self.sums(session, agent) {
            Some(sums) => sums.add_model_call(usage, cost),
            None => {
                session.with_budget_ledger(|ledger| ledger.add_model_call(agent.0, *usage, cost))
            }
        }
        t.input.fetch_add(usage.input_tokens, Ordering::Relaxed);
        t.output.fetch_add(usage.output_tokens, Ordering::Relaxed);
        t.model_calls.fetch_add(1, Ordering::Relaxed);
        if cost != 0 {
            t.cost.fetch_add(cost, Ordering::Relaxed);
        }
    }

    /// Charges `calls` tool calls of `agent` to the run's totals and the agent's slot (or,
    /// with no slot, `session`'s ledger).
    pub(crate) fn charge_tool_calls(&self, session: &Session, agent: Charged<'_>, calls: u64) {
        let t = &self.totals;
        match self.sums(session, agent) {
            Some(sums) => {
                sums.tool_calls.fetch_add(calls, Ordering::Relaxed);
            }
            None => session.with_budget_ledger(|ledger| ledger.add_tool_calls(agent.0, calls)),
        }
        t.tool_calls.fetch_add(calls, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::BudgetLimits;

    /// The tests' agents' slot hint (a hint only: any value finds the right slot).
    static HINT: AtomicUsize = AtomicUsize::new(0);

    fn run_budgets(session: &Session) -> Arc<RunBudgets> {
        let budgets = Budgets::new(BudgetLimits::default().max_model_calls(1_000));
        RunBudgets::start(Arc::new(budgets), session)
    }

    #[test]
    fn a_runs_budgets_stay_one_small_allocation() {
        // An `Arc`'s block (two counts, then the value) within glibc's largest small request:
        // a larger one makes the allocator consolidate, which every later allocation pays.
        const { assert!(2 * std::mem::size_of::<usize>() + std::mem::size_of::<RunBudgets>() <= 1_008) };
    }

    #[test]
    fn charges_reach_the_sessions_ledger_when_it_is_read_and_only_once() {
        let session = Session::new();
        let run = run_budgets(&session);
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        run.charge_model_call(&session, (&a, &HINT), &Usage::new(10, 1), 5);
        run.charge_model_call(&session, (&b, &HINT), &Usage::new(20, 2), 0);
        run.charge_tool_calls(&session, (&a, &HINT), 3);
        let ledger = session.budget_ledger();
        assert_eq!(ledger.total.model_calls, 2);
        assert_eq!(ledger.total.tool_calls, 3);
        assert_eq!(ledger.total.cost_micro_usd, 5);
        assert_eq!(ledger.agent("a").unwrap().usage, Usage::new(10, 1));
        assert_eq!(ledger.agent("b").unwrap().usage, Usage::new(20, 2));
        // Read again: nothing folded twice; a later charge folds in at the next read.
        assert_eq!(session.budget_ledger(), ledger);
        run.charge_model_call(&session, (&a, &HINT), &Usage::new(1, 1), 0);
        let ledger = session.budget_ledger();
        assert_eq!(ledger.agent("a").unwrap().model_calls, 2);
        assert_eq!(ledger.total, run.spent());
        // The saved values hold the same ledger.
        let saved: BudgetLedger =
            serde_json::from_value(session.values()[crate::budget::BUDGET_SESSION_KEY].clone())
                .unwrap();
        assert_eq!(saved, ledger);
    }

    #[test]
    fn cached_and_reasoning_tokens_stay_unreported_until_a_call_reports_them() {
        let session = Session::new();
        let run = run_budgets(&session);
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        run.charge_model_call(&session, (&a, &HINT), &Usage::new(10, 1), 0);
        let mut reported = Usage::new(10, 2);
        reported.cached_input_tokens = Some(0);
        reported.reasoning_tokens = Some(2);
        run.charge_model_call(&session, (&b, &HINT), &reported, 0);
        run.charge_model_call(&session, (&b, &HINT), &reported, 0);
        let ledger = session.budget_ledger();
        assert_eq!(ledger.agent("a").unwrap().usage, Usage::new(10, 1));
        let b = ledger.agent("b").unwrap().usage;
        assert_eq!(
            (b.cached_input_tokens, b.reasoning_tokens),
            (Some(0), Some(4))
        );
        let total = ledger.total.usage;
        assert_eq!(
            (total.cached_input_tokens, total.reasoning_tokens),
            (Some(0), Some(4))
        );
    }

    #[test]
    fn a_later_run_under_the_same_budgets_claims_nothing_and_keeps_the_order_of_spending() {
        let budgets = Arc::new(Budgets::new(BudgetLimits::default().max_model_calls(100)));
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let earlier = Session::new();
        let first = RunBudgets::start(Arc::clone(&budgets), &earlier);
        first.charge_model_call(&earlier, (&a, &HINT), &Usage::new(1, 1), 0);
        first.charge_model_call(&earlier, (&b, &HINT), &Usage::new(2, 2), 0);
        assert_eq!(budgets.seen.agents().len(), 2);
        let session = Session::new();
        let run = RunBudgets::start(Arc::clone(&budgets), &session);
        assert_eq!(run.agents.claimed.load(Ordering::Relaxed), 2);
        // This run's `b` spends first: it comes first in this run's ledger.
        run.charge_model_call(&session, (&b, &HINT), &Usage::new(2, 2), 0);
        run.charge_model_call(&session, (&a, &HINT), &Usage::new(1, 1), 0);
        run.charge_tool_calls(&session, (&a, &HINT), 1);
        assert!(run.agents.names.lock().unwrap().is_empty());
        let ledger = session.budget_ledger();
        let order: Vec<&str> = ledger.by_agent.iter().map(|e| &*e.agent).collect();
        assert_eq!(order, ["b", "a"]);
        assert_eq!(ledger.agent("a").unwrap().tool_calls, 1);
        assert_eq!(ledger.total.model_calls, 2);
        // The earlier run's ledger is its own.
        assert_eq!(earlier.budget_ledger().total.model_calls, 2);
        assert_eq!(earlier.budget_ledger().agent("a").unwrap().tool_calls, 0);
    }

    #[test]
    fn a_second_run_on_the_session_starts_from_the_firsts_spending() {
        let session = Session::new();
        let first = run_budgets(&session);
        let agent: Arc<str> = "a".into();
        first.charge_model_call(&session, (&agent, &HINT), &Usage::new(10, 1), 0);
        let second = run_budgets(&session);
        assert_eq!(second.spent().model_calls, 1);
        second.charge_model_call(&session, (&agent, &HINT), &Usage::new(10, 1), 0);
        assert_eq!(session.budget_ledger().agent("a").unwrap().model_calls, 2);
    }

    #[test]
    fn agents_past_the_tallys_slots_are_charged_in_the_ledger_in_order() {
        let session = Session::new();
        let run = run_budgets(&session);
        let names: Vec<Arc<str>> = (0..SLOTS + 3).map(|i| format!("agent{i}").into()).collect();
        for name in &names {
            run.charge_model_call(&session, (name, &HINT), &Usage::new(1, 1), 0);
        }
        // An agent made under the same name twice is one agent in the ledger.
        run.charge_model_call(&session, (&"agent0".into(), &HINT), &Usage::new(1, 1), 0);
        let ledger = session.budget_ledger();
        assert_eq!(ledger.total.model_calls, SLOTS as u64 + 4);
        let order: Vec<&str> = ledger.by_agent.iter().map(|a| &*a.agent).collect();
        let expected: Vec<&str> = names.iter().map(|n| &**n).collect();
        assert_eq!(order, expected);
        assert_eq!(ledger.agent("agent0").unwrap().model_calls, 2);
    }

    #[test]
    fn a_block_nothing_holds_is_the_next_runs_with_its_slots_emptied() {
        let budgets = Arc::new(Budgets::new(BudgetLimits::default().max_model_calls(100)));
        let agent: Arc<str> = "a".into();
        let earlier = Session::new();
        let first = RunBudgets::start(Arc::clone(&budgets), &earlier);
        first.charge_model_call(&earlier, (&agent, &HINT), &Usage::new(5, 5), 0);
        let block = Arc::as_ptr(&first);
        // The run and its session end with the charge never folded: the slot still holds it.
        drop((first, earlier));
        let session = Session::new();
        let run = RunBudgets::start(Arc::clone(&budgets), &session);
        assert_eq!(Arc::as_ptr(&run), block, "the free block is reused");
        assert_eq!(run.spent(), Spent::default());
        run.charge_model_call(&session, (&agent, &HINT), &Usage::new(1, 2), 0);
        let ledger = session.budget_ledger();
        assert_eq!(ledger.agent("a").unwrap().usage, Usage::new(1, 2));
        assert_eq!(ledger.agent("a").unwrap().model_calls, 1);
        assert_eq!(ledger.total, run.spent());
        // Its slot kept its agent: nothing was claimed again.
        assert_eq!(run.agents.claimed.load(Ordering::Relaxed), 1);
        // Under other budgets, a free block is made anew (their limits, no slots).
        drop((run, session));
        let other = Arc::new(Budgets::new(BudgetLimits::default().max_model_calls(7)));
        let session = Session::new();
        let run = RunBudgets::start(other, &session);
        assert_eq!(Arc::as_ptr(&run), block);
        assert_eq!(run.agents.claimed.load(Ordering::Relaxed), 0);
        assert!(run.call_clear(0, 1, std::time::Duration::ZERO));
        run.totals.model_calls.store(7, Ordering::Relaxed);
        assert!(!run.call_clear(0, 1, std::time::Duration::ZERO));
    }

    #[test]
    fn a_block_its_session_still_holds_is_not_reused() {
        let budgets = Arc::new(Budgets::new(BudgetLimits::default().max_model_calls(100)));
        let agent: Arc<str> = "a".into();
        let kept = Session::new();
        let first = RunBudgets::start(Arc::clone(&budgets), &kept);
        first.charge_model_call(&kept, (&agent, &HINT), &Usage::new(5, 5), 0);
        let block = Arc::as_ptr(&first);
        drop(first);
        let session = Session::new();
        let run = RunBudgets::start(Arc::clone(&budgets), &session);
        assert_ne!(Arc::as_ptr(&run), block);
        run.charge_model_call(&session, (&agent, &HINT), &Usage::new(1, 1), 0);
        // Each session's ledger holds its own run's spending.
        assert_eq!(kept.budget_ledger().total.usage, Usage::new(5, 5));
        assert_eq!(session.budget_ledger().total.usage, Usage::new(1, 1));
        // The kept session's next run starts from its first's spending, in either block.
        let next = RunBudgets::start(Arc::clone(&budgets), &kept);
        assert_eq!(next.spent().model_calls, 1);
        next.charge_model_call(&kept, (&agent, &HINT), &Usage::new(1, 1), 0);
        assert_eq!(kept.budget_ledger().total, next.spent());
        assert_eq!(kept.budget_ledger().agent("a").unwrap().model_calls, 2);
    }

    #[test]
    fn a_ledger_written_by_hand_replaces_what_was_not_yet_folded() {
        let session = Session::new();
        let run = run_budgets(&session);
        let agent: Arc<str> = "a".into();
        run.charge_model_call(&session, (&agent, &HINT), &Usage::new(10, 1), 0);
        session
            .set_value(crate::budget::BUDGET_SESSION_KEY, BudgetLedger::default())
            .unwrap();
        assert_eq!(session.budget_ledger(), BudgetLedger::default());
        run.charge_model_call(&session, (&agent, &HINT), &Usage::new(10, 1), 0);
        assert_eq!(session.budget_ledger().total.model_calls, 1);
    }
}
