//! Compile-time checks evaluated by the code `flow!` generates.
//!
//! Each check returns a [`Verdict`]; the generated `const` item panics with its message
//! when it is not empty, so the compiler reports it at the offending node of the flow.

/// The FNV-1a (64-bit) offset basis: the hash of nothing.
pub const FNV_OFFSET: u64 = crate::ids::FNV_OFFSET;

/// Extends an FNV-1a (64-bit) hash by the UTF-8 bytes of `s`; hashing the pieces of a
/// string in order gives [`fingerprint_of`](crate::fingerprint_of) of the whole.
pub const fn fnv1a(hash: u64, s: &str) -> u64 {
    crate::ids::fnv1a_extend(hash, s.as_bytes())
}

/// The fingerprint of a flow's shape: [`fingerprint_of`](crate::fingerprint_of) of the shape
/// string of the tree (each node's agent name, `^` if it is barred from its parent, then its
/// sub-agents as `(a,b)`), hashed piece by piece from the flow's facts (`agents`, `barred` and
/// `children` by node, the root first). `flow!`'s `FINGERPRINT`, equal to
/// `FlowAgent::fingerprint()` of the built tree.
pub const fn fingerprint(agents: &[&str], barred: &[bool], children: &[&[usize]]) -> u64 {
    if agents.is_empty() {
        return FNV_OFFSET;
    }
    shape_hash(FNV_OFFSET, 0, agents, barred, children)
}

/// Extends `hash` by the shape of node `i` and its subtree (see [`fingerprint`]).
const fn shape_hash(
    mut hash: u64,
    i: usize,
    agents: &[&str],
    barred: &[bool],
    children: &[&[usize]],
) -> u64 {
    hash = fnv1a(hash, agents[i]);
    if barred[i] {
        hash = fnv1a(hash, "^");
    }
    let sub = children[i];
    if !sub.is_empty() {
        hash = fnv1a(hash, "(");
        let mut k = 0;
        while k < sub.len() {
            if k > 0 {
                hash = fnv1a(hash, ",");
            }
            hash = shape_hash(hash, sub[k], agents, barred, children);
            k += 1;
        }
        hash = fnv1a(hash, ")");
    }
    hash
}

const CAP: usize = 1024;

/// The outcome of a check: empty when it passed, else the compile error's text.
pub struct Verdict {
    buf: [u8; CAP],
    len: usize,
}

impl Verdict {
    /// A passing verdict.
    pub const fn pass() -> Self {
        Verdict {
            buf: [0; CAP],
            len: 0,
        }
    }

    /// Fails the compile with the message, at the caller (the checked node), if the check
    /// failed.
    #[track_caller]
    pub const fn assert_passed(self) {
        if self.failed() {
            panic!("{}", self.as_str())
        }
    }

    /// Whether the check failed.
    pub const fn failed(&self) -> bool {
        self.len > 0
    }

    /// Appends text (cut short, on a character boundary, past the capacity).
    pub const fn push(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if self.len == CAP {
                break;
            }
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        if i < bytes.len() {
            // Cut short: never end inside a UTF-8 sequence.
            while self.len > 0 && core::str::from_utf8(self.buf.split_at(self.len).0).is_err() {
                self.len -= 1;
            }
        }
        self
    }

    /// Appends `` `s` ``.
    pub const fn code(self, s: &str) -> Self {
        self.push("`").push(s).push("`")
    }

    /// Appends the names as `` `a`, `b` `` (or `none` when there are none).
    pub const fn list(mut self, names: &[&str]) -> Self {
        if names.is_empty() {
            return self.push("none");
        }
        let mut i = 0;
        while i < names.len() {
            if i > 0 {
                self = self.push(", ");
            }
            self = self.code(names[i]);
            i += 1;
        }
        self
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "",
        }
    }
}

/// Fails the compile with the verdict's message, at the caller's node, if it failed.
#[track_caller]
pub const fn assert_passed(verdict: &Verdict) {
    if verdict.failed() {
        panic!("{}", verdict.as_str())
    }
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn contains(names: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        if eq(names[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

/// A flow's agent names, indexed once per flow (`flow!`'s `__NAMES`, from [`name_index`]), so
/// that each check finds a name by its hash instead of comparing strings node by node: const
/// evaluation runs every comparison statement by statement, and a 200-agent flow compared
/// about 20,000 pairs of names.
pub struct NameIndex<const N: usize, const M: usize> {
    /// The hash ([`fnv1a`]) of each node's agent name.
    pub hashes: [u64; N],
    /// For each node, the first earlier node whose agent has the same name, or `usize::MAX`.
    pub earlier: [usize; N],
    /// An open-addressed table from a name's hash (its low bits, then the next slots) to the
    /// first node with that hash; `usize::MAX` marks an empty slot. `M` is a power of two at
    /// least `2 * N`, so a slot is always free.
    pub slots: [usize; M],
    /// Whether every name is unique: only then does a name found by its hash stand for the
    /// only node with it.
    pub unique: bool,
}

/// Indexes the `N` agent names of a flow (see [`NameIndex`]); `M` is a power of two at least
/// `2 * N`, computed by `flow!`.
pub const fn name_index<const N: usize, const M: usize>(names: &[&str]) -> NameIndex<N, M> {
    let mut index = NameIndex {
        hashes: [0; N],
        earlier: [usize::MAX; N],
        slots: [usize::MAX; M],
        unique: true,
    };
    let mut i = 0;
    while i < N {
        let h = fnv1a(FNV_OFFSET, names[i]);
        index.hashes[i] = h;
        // The first node with this hash, or a free slot for this one.
        let mut s = (h as usize) & (M - 1);
        loop {
            let j = index.slots[s];
            if j == usize::MAX {
                index.slots[s] = i;
                break;
            }
            if index.hashes[j] == h {
                // Same hash: an earlier node with the same name, or (rarely) a collision, in
                // which case the nodes with this hash are compared one by one.
                let mut k = j;
                while k < i {
                    if index.hashes[k] == h && eq(names[k], names[i]) {
                        index.earlier[i] = k;
                        index.unique = false;
                        break;
                    }
                    k += 1;
                }
                break;
            }
            s = (s + 1) & (M - 1);
        }
        i += 1;
    }
    index
}

/// Checks that the agent of node `index` of flow `flow` has a name no earlier node has;
/// `earlier` is that node's entry of [`NameIndex::earlier`]. `names` and `nodes` list the agents'
/// names and the nodes as written in the flow, in tree order.
pub const fn unique_name(
    flow: &str,
    names: &[&str],
    nodes: &[&str],
    index: usize,
    earlier: usize,
) -> Verdict {
    if earlier == usize::MAX {
        return Verdict::pass();
    }
    Verdict::pass()
        .push("two agents of flow ")
        .code(flow)
        .push(" are named ")
        .code(names[index])
        .push(": node ")
        .code(nodes[index])
        .push(" has the name of node ")
        .code(nodes[earlier])
        .push(
            ". Transfers and resumes find agents by name, so names must be unique within a \
             flow: give one of them another name with `#[agent(name = \"...\")]`, or remove \
             one node",
        )
}

/// What the checks of a flow read: the flow's tree (from its syntax) and its agents' facts (from
/// their types), by node in tree order. `flow!` writes one per flow; each node's check reads it
/// (see [`node`]).
pub struct FlowFacts<'a> {
    /// The flow's name.
    pub flow: &'a str,
    /// The agents' names.
    pub agents: &'a [&'a str],
    /// The nodes as written in the flow.
    pub nodes: &'a [&'a str],
    /// Each node's parent.
    pub parents: &'a [Option<usize>],
    /// Each node's sub-agents.
    pub children: &'a [&'a [usize]],
    /// Whether each node is marked `no_parent` in the flow.
    pub marked_no_parent: &'a [bool],
    /// Whether each node is a `task` node whose agent type the checks read (not `dyn`).
    pub task: &'a [bool],
    /// Whether each node is delegated to (`task` or `single_turn`): a node that returns a result
    /// to its parent.
    pub delegated: &'a [bool],
    /// The keyword of each workflow node (`sequential`, `parallel`, `loop`); `""` for others.
    pub workflows: &'a [&'a str],
    /// The transfers each agent declares.
    pub transfers: &'a [&'a [&'a str]],
    /// Whether each agent is declared `#[agent(no_parent)]`.
    pub no_parent: &'a [bool],
    /// The result type each agent declares (`returns`).
    pub returns: &'a [Option<&'a str>],
    /// The payload type each agent receives (`accepts`).
    pub accepts: &'a [Option<&'a str>],
    /// The payload types each agent's transfers carry.
    pub payloads: &'a [&'a [&'a str]],
    /// For each node, the first earlier node with the same agent name (see [`NameIndex`]).
    pub earlier: &'a [usize],
    /// The hash of each node's agent name ([`NameIndex::hashes`]).
    pub hashes: &'a [u64],
    /// The flow's table of names by hash ([`NameIndex::slots`]).
    pub slots: &'a [usize],
    /// Whether every agent name of the flow is unique ([`NameIndex::unique`]).
    pub unique: bool,
}

impl FlowFacts<'_> {
    /// Fails the compile, at the caller (the node in `flow!`), with the message of the first
    /// check of node `index` that fails (see [`node`]). A passing node costs only [`passes`]:
    /// no message is built.
    #[track_caller]
    pub const fn assert_node(&self, index: usize) {
        if !passes(self, index) {
            node(self, index).assert_passed();
        }
    }

    /// The node among node `i`'s neighbours (its sub-agents, then its parent) whose agent is
    /// named `name`.
    const fn neighbour(&self, i: usize, name: &str) -> Option<usize> {
        self.neighbour_at(i, name, usize::MAX)
    }

    /// [`neighbour`](Self::neighbour), for the `k`-th transfer the agent declares: agents
    /// usually declare their sub-agents in the order the flow lists them, and their parent,
    /// so the `k`-th sub-agent and the parent are compared first (when names are unique, the
    /// one node with the name is the answer), before the name is looked up by its hash.
    const fn neighbour_at(&self, i: usize, name: &str, k: usize) -> Option<usize> {
        if self.unique {
            let children = self.children[i];
            if k < children.len() && eq(self.agents[children[k]], name) {
                return Some(children[k]);
            }
            if let Some(p) = self.parents[i] {
                if eq(self.agents[p], name) {
                    return Some(p);
                }
            }
        }
        // When names are unique, the only node with this name is found by its hash in the
        // flow's table; it answers if it is a neighbour.
        if self.unique && !self.slots.is_empty() {
            let h = fnv1a(FNV_OFFSET, name);
            let mask = self.slots.len() - 1;
            let mut s = (h as usize) & mask;
            loop {
                let j = self.slots[s];
                if j == usize::MAX {
                    // No node has this hash, so none has this name.
                    return None;
                }
                if self.hashes[j] == h {
                    if eq(self.agents[j], name) {
                        let child = match self.parents[j] {
                            Some(p) => p == i,
                            None => false,
                        };
                        let parent = match self.parents[i] {
                            Some(p) => p == j,
                            None => false,
                        };
                        return if child || parent { Some(j) } else { None };
                    }
                    // A collision: compare the neighbours one by one.
                    break;
                }
                s = (s + 1) & mask;
            }
        }
        let children = self.children[i];
        let mut k = 0;
        while k < children.len() {
            if eq(self.agents[children[k]], name) {
                return Some(children[k]);
            }
            k += 1;
        }
        match self.parents[i] {
            Some(p) if eq(self.agents[p], name) => Some(p),
            _ => None,
        }
    }

    /// Appends the names of node `i`'s sub-agents, as [`Verdict::list`] does.
    const fn children_of(&self, mut v: Verdict, i: usize) -> Verdict {
        let children = self.children[i];
        if children.is_empty() {
            return v.push("none");
        }
        let mut k = 0;
        while k < children.len() {
            if k > 0 {
                v = v.push(", ");
            }
            v = v.code(self.agents[children[k]]);
            k += 1;
        }
        v
    }
}

/// For each of the `N` nodes of a flow, whether some check of it fails ([`passes`] is
/// false): computed once per flow, so that each node's `const` reads its entry and builds a
/// message (with [`FlowFacts::assert_node`]) only when it fails.
pub const fn failing<const N: usize>(f: &FlowFacts<'_>) -> [bool; N] {
    let mut out = [false; N];
    let mut i = 0;
    while i < N {
        out[i] = !passes(f, i);
        i += 1;
    }
    out
}

/// Whether every check of node `index` passes: [`node`] without building a message (they
/// agree: a test holds them to it).
pub const fn passes(f: &FlowFacts<'_>, i: usize) -> bool {
    if f.earlier[i] != usize::MAX {
        return false;
    }
    let declared = f.transfers[i];
    let sent = f.payloads[i];
    let barred = f.marked_no_parent[i] || f.no_parent[i];
    let mut k = 0;
    while k < declared.len() {
        let Some(j) = f.neighbour_at(i, declared[k], k) else {
            return false;
        };
        if let Some(p) = f.parents[i] {
            if p == j && (barred || !f.workflows[p].is_empty()) {
                return false;
            }
        }
        // A payload is sent exactly when the target declares one (which type, the trait
        // system compares: see [`payload_positions`]).
        let sends = k < sent.len() && !sent[k].is_empty();
        let untyped_map = match f.accepts[j] {
            Some(item) => item.is_empty() && eq(f.workflows[j], "map"),
            None => false,
        };
        if sends != f.accepts[j].is_some() && !untyped_map {
            return false;
        }
        k += 1;
    }
    match (f.returns[i], f.parents[i]) {
        (Some(_), None) => false,
        (None, Some(_)) => !f.task[i],
        (Some(_), Some(p)) => f.delegated[i] || eq(f.workflows[p], "map"),
        (None, None) => true,
    }
}

/// Every check of node `index` of a flow, in order (a unique name; declared transfers to
/// neighbours only, not to a barred parent; a result type with a parent to return it to;
/// payloads its neighbours receive; a `task` node that can finish; no transfer to a workflow
/// parent): the first that fails. `flow!` asserts it in one `const` per node, spanned at the
/// node, so each offending node is one error pointing at it.
pub const fn node(facts: &FlowFacts<'_>, index: usize) -> Verdict {
    let f = facts;
    let i = index;
    if f.earlier[i] != usize::MAX {
        return unique_name(f.flow, f.agents, f.nodes, i, f.earlier[i]);
    }
    let parent = match f.parents[i] {
        Some(p) => Some(f.agents[p]),
        None => None,
    };
    let v = transfers(f, i);
    if v.failed() {
        return v;
    }
    let v = returns_to_a_parent(f.flow, f.agents[i], f.returns[i], parent);
    if v.failed() {
        return v;
    }
    // A map's agent may declare a result: each item's `Finish(result)` is that item's result.
    let under_map = match f.parents[i] {
        Some(p) => eq(f.workflows[p], "map"),
        None => false,
    };
    if let (Some(ty), Some(p), false, false) = (f.returns[i], parent, f.delegated[i], under_map) {
        return returns_on_chat_node(f.flow, f.agents[i], f.nodes[i], ty, p);
    }
    let v = payloads(f, i);
    if v.failed() {
        return v;
    }
    if let (true, Some(p)) = (f.task[i], parent) {
        let v = task_can_finish(f.flow, f.agents[i], f.returns[i], p);
        if v.failed() {
            return v;
        }
    }
    if let Some(p) = f.parents[i] {
        if !f.workflows[p].is_empty() {
            return workflow_child(
                f.flow,
                f.agents[i],
                f.transfers[i],
                f.agents[p],
                f.workflows[p],
            );
        }
    }
    Verdict::pass()
}

/// Checks the transfers the agent of node `i` declares against its place in the flow: each
/// must name a sub-agent or the parent, and not the parent when the node is barred from it
/// (`no_parent` on the node, or `#[agent(no_parent)]` on the agent).
pub const fn transfers(f: &FlowFacts<'_>, i: usize) -> Verdict {
    let agent = f.agents[i];
    let flow = f.flow;
    let declared = f.transfers[i];
    let mut k = 0;
    while k < declared.len() {
        let target = declared[k];
        k += 1;
        let Some(j) = f.neighbour(i, target) else {
            if eq(target, agent) {
                return Verdict::pass()
                    .push("agent ")
                    .code(agent)
                    .push(" declares a transfer to itself (in flow ")
                    .code(flow)
                    .push(
                        "); an agent transfers to a sub-agent or its parent: remove it from the \
                         agent's declared transfers",
                    );
            }
            let v = Verdict::pass()
                .push("agent ")
                .code(agent)
                .push(" declares a transfer to ")
                .code(target)
                .push(", but in flow ")
                .code(flow)
                .push(" ")
                .code(target)
                .push(" is neither a sub-agent nor the parent of ")
                .code(agent)
                .push(", so the transfer could never succeed. Its sub-agents here: ");
            let v = f.children_of(v, i).push("; its parent: ");
            let v = match f.parents[i] {
                Some(p) => v.code(f.agents[p]),
                None => v.push("none (it is the root)"),
            };
            return v
                .push(". Place ")
                .code(target)
                .push(" under ")
                .code(agent)
                .push(
                    " in this flow, or remove it from the agent's `#[agent(transfers = [...])]`",
                );
        };
        let is_parent = match f.parents[i] {
            Some(p) => p == j,
            None => false,
        };
        if is_parent && (f.marked_no_parent[i] || f.no_parent[i]) {
            let v = Verdict::pass()
                .push("agent ")
                .code(agent)
                .push(" declares a transfer to ")
                .code(target)
                .push(", its parent in flow ")
                .code(flow);
            if f.marked_no_parent[i] {
                return v.push(
                    ", but its node is marked `no_parent`, so that transfer would \
                     be refused: remove `no_parent` from the node, or remove the \
                     target from the agent's `#[agent(transfers = [...])]`",
                );
            }
            return v.push(
                ", but the agent is declared `#[agent(no_parent)]`, so that \
                 transfer would be refused: remove `no_parent` or the target \
                 from its `#[agent(...)]`",
            );
        }
    }
    Verdict::pass()
}

/// Checks that agent `agent`, a sub-agent of the workflow `workflow` (a `kind` workflow:
/// `sequential`, `parallel` or `loop`) in flow `flow`, declares no transfer to it: a
/// workflow runs its sub-agents itself and bars them from transferring to it.
pub const fn workflow_child(
    flow: &str,
    agent: &str,
    declared: &[&str],
    workflow: &str,
    kind: &str,
) -> Verdict {
    if !contains(declared, workflow) {
        return Verdict::pass();
    }
    Verdict::pass()
        .push("agent ")
        .code(agent)
        .push(" declares a transfer to ")
        .code(workflow)
        .push(", its parent in flow ")
        .code(flow)
        .push(", but ")
        .code(workflow)
        .push(" is a ")
        .code(kind)
        .push(
            " workflow: it runs its sub-agents itself and bars them from transferring to \
             it, so that transfer would be refused. Remove the target from the agent's \
             `#[agent(transfers = [...])]`; the workflow goes on by itself when the agent \
             ends",
        )
}

/// Checks that agent `agent`, declared with a result type (`returns`, the type's name, or
/// `None`), has a parent in flow `flow` to return it to.
pub const fn returns_to_a_parent(
    flow: &str,
    agent: &str,
    returns: Option<&str>,
    parent: Option<&str>,
) -> Verdict {
    match (returns, parent) {
        (Some(ty), None) => Verdict::pass()
            .push("agent ")
            .code(agent)
            .push(" declares `returns = ")
            .push(ty)
            .push("`, but it is the root of flow ")
            .code(flow)
            .push(
                ": it has no parent, so no agent would ever receive its result. Place it as a \
                 `task` or `single_turn` node under the agent that delegates to it, or remove \
                 `returns` from its `#[agent(...)]`",
            ),
        _ => Verdict::pass(),
    }
}

/// The error for agent `agent`, declared with a result type (`returns = ty`), placed as a
/// plain (chat) node `node` under `parent` in flow `flow`: nothing would receive its result, and
/// finishing would end the run with an error event.
pub const fn returns_on_chat_node(
    flow: &str,
    agent: &str,
    node: &str,
    ty: &str,
    parent: &str,
) -> Verdict {
    Verdict::pass()
        .push("agent ")
        .code(agent)
        .push(" declares `returns = ")
        .push(ty)
        .push("` (it finishes a task with that result), but node ")
        .code(node)
        .push(" of flow ")
        .code(flow)
        .push(" is a plain node, which hands the conversation over for good: its result would never reach ")
        .code(parent)
        .push(", and finishing would end the run with an error. Mark the node `")
        .push(node)
        .push("(task)` (it talks with the user until it finishes) or `")
        .push(node)
        .push("(single_turn)` (it runs once), or remove `returns` from the agent's `#[agent(...)]`")
}

/// Checks that agent `agent`, on a `task` node under `parent` in flow `flow`, declares a result
/// type (`returns`): a task returns control to its parent only by finishing with its result.
pub const fn task_can_finish(
    flow: &str,
    agent: &str,
    returns: Option<&str>,
    parent: &str,
) -> Verdict {
    if returns.is_some() {
        return Verdict::pass();
    }
    Verdict::pass()
        .push("node ")
        .code(agent)
        .push(" of flow ")
        .code(flow)
        .push(" is a `task`, but agent ")
        .code(agent)
        .push(" declares no result type, so it can never finish its task and give control back to ")
        .code(parent)
        .push(
            ". Declare the result with `#[agent(returns = MyOutcome)]` and return \
             `Finish(outcome)` from its body, or make the node `single_turn` (its last message \
             is its result) or a plain node (a transfer that does not come back)",
        )
}

/// Checks that the agent of node `i` sends a payload with each transfer exactly when its
/// target here declares one (`accepts`). Which type, the trait system compares (see
/// [`payload_positions`]): a type is not its spelling.
pub const fn payloads(f: &FlowFacts<'_>, i: usize) -> Verdict {
    let agent = f.agents[i];
    let flow = f.flow;
    let declared = f.transfers[i];
    let sent = f.payloads[i];
    let mut k = 0;
    while k < declared.len() {
        let target = declared[k];
        let payload = if k < sent.len() { sent[k] } else { "" };
        k += 1;
        let Some(j) = f.neighbour(i, target) else {
            // Not a neighbour: the transfer check says so.
            continue;
        };
        let map = eq(f.workflows[j], "map");
        match f.accepts[j] {
            // Both declare one: the types are compared by the trait system (`SamePayload`).
            Some(_) if !payload.is_empty() => {}
            // A `map(payload)` node whose agent declares no item type: the map's own check
            // (`MapAgent`) says what to write.
            Some(item) if map && item.is_empty() => {}
            // A `map(payload)` node: its `accepts` is its agent's item type.
            Some(item) if map => {
                return Verdict::pass()
                    .push("agent ")
                    .code(agent)
                    .push(" transfers to the map ")
                    .code(target)
                    .push(" in flow ")
                    .code(flow)
                    .push(" without a payload, but the map takes its items from the transfer's payload (`map(payload)`): send them with `transfers = [")
                    .push(target)
                    .push("(Vec<")
                    .push(item)
                    .push(">)]`, a list of the items its agent takes, or take the items from elsewhere (`map(last_output)`, `map(value = \"KEY\")`)");
            }
            None if map && !payload.is_empty() => {
                return Verdict::pass()
                    .push("agent ")
                    .code(agent)
                    .push(" sends a `")
                    .push(payload)
                    .push("` with its transfer to the map ")
                    .code(target)
                    .push(" in flow ")
                    .code(flow)
                    .push(", but the map does not take its items from the transfer's payload, so it would never read it: write ")
                    .code(target)
                    .push(" as `map(payload) [agent]` (its agent declaring the item type with `#[agent(accepts = Item)]`), or send the transfer without one");
            }
            Some(expected) => {
                return Verdict::pass()
                    .push("agent ")
                    .code(agent)
                    .push(" transfers to ")
                    .code(target)
                    .push(" in flow ")
                    .code(flow)
                    .push(" without a payload, but agent ")
                    .code(target)
                    .push(" declares `accepts = ")
                    .push(expected)
                    .push("`: send one with `transfers = [")
                    .push(target)
                    .push("(")
                    .push(expected)
                    .push(")]`, or remove `accepts` from ")
                    .code(target);
            }
            None if payload.is_empty() => {}
            None => {
                return Verdict::pass()
                    .push("agent ")
                    .code(agent)
                    .push(" sends a `")
                    .push(payload)
                    .push("` with its transfer to ")
                    .code(target)
                    .push(" in flow ")
                    .code(flow)
                    .push(", but agent ")
                    .code(target)
                    .push(" declares no payload, so it would never read it: declare it with `#[agent(accepts = ")
                    .push(payload)
                    .push(")]` on ")
                    .code(target)
                    .push(", or send the transfer without one");
            }
        }
    }
    Verdict::pass()
}

/// For each of the `E` directed edges of a flow between two agent types (`edges[e]` is the
/// sending node and its sub-agent or parent), the position of the transfer among the sender's
/// declared `TRANSFERS` when it carries a payload and the target declares one, else
/// `usize::MAX`. `flow!` asserts, for each edge, that the sender's `SendsAt<position, Target>`
/// sends the type the target accepts (`SamePayload`); at `usize::MAX` there is nothing to
/// compare (the presence of payloads is checked by [`payloads`], with its own message).
pub const fn payload_positions<const E: usize>(
    f: &FlowFacts<'_>,
    edges: &[(usize, usize)],
) -> [usize; E] {
    let mut out = [usize::MAX; E];
    let mut e = 0;
    while e < E {
        let (from, to) = edges[e];
        let declared = f.transfers[from];
        let sent = f.payloads[from];
        e += 1;
        let accepts = match f.accepts[to] {
            // (`""`: a `map(payload)` node whose agent declares no item type.)
            Some(item) => !item.is_empty(),
            None => false,
        };
        if sent.is_empty() || !accepts {
            // Nothing to compare (the common case, cheap for the compiler: no names compared).
            continue;
        }
        let mut k = 0;
        while k < declared.len() {
            if eq(declared[k], f.agents[to]) {
                if k < sent.len() && !sent[k].is_empty() {
                    out[e - 1] = k;
                }
                break;
            }
            k += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_gives_the_published_values() {
        // FNV-1a 64 test vectors: the hash the checks compute at compile time and the
        // runtime's `fingerprint_of` (the same fn).
        assert_eq!(fnv1a(FNV_OFFSET, ""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, "a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, "foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn fnv_pieces_equal_the_whole() {
        let whole = crate::fingerprint_of("triage(refund,complaint(escalation^))");
        let mut h = FNV_OFFSET;
        for piece in [
            "triage",
            "(",
            "refund",
            ",",
            "complaint",
            "(",
            "escalation",
            "^",
            "))",
        ] {
            h = fnv1a(h, piece);
        }
        assert_eq!(h, whole);
        // The same shape from a flow's facts, as `flow!`'s `FINGERPRINT` computes it.
        let facts_hash = fingerprint(
            &["triage", "refund", "complaint", "escalation"],
            &[false, false, false, true],
            &[&[1, 2], &[], &[3], &[]],
        );
        assert_eq!(facts_hash, whole);
        assert_eq!(
            fingerprint(&["solo"], &[false], &[&[]]),
            crate::fingerprint_of("solo")
        );
    }

    /// A flow `Desk: triage => [refund, billing]` (with `agents` for their names, indexed in
    /// `names`), whose agents declare `transfers`; `marked` marks nodes `no_parent`.
    fn desk<'a>(
        agents: &'a [&'a str],
        transfers: &'a [&'a [&'a str]],
        marked: &'a [bool],
        names: &'a NameIndex<3, 8>,
    ) -> FlowFacts<'a> {
        FlowFacts {
            flow: "Desk",
            agents,
            nodes: &["triage", "refund", "billing"],
            parents: &[None, Some(0), Some(0)],
            children: &[&[1, 2], &[], &[]],
            marked_no_parent: marked,
            task: &[false; 3],
            delegated: &[false; 3],
            workflows: &["", "", ""],
            transfers,
            no_parent: &[false; 3],
            returns: &[None; 3],
            accepts: &[None; 3],
            payloads: &[&[], &[], &[]],
            earlier: &names.earlier,
            hashes: &names.hashes,
            slots: &names.slots,
            unique: names.unique,
        }
    }

    #[test]
    fn verdict_messages() {
        let names = ["triage", "refund", "billing"];
        let index = name_index::<3, 8>(&names);
        assert!(index.unique);
        let facts = desk(
            &names,
            &[&["refund", "shipping"], &[], &[]],
            &[false; 3],
            &index,
        );
        assert_eq!(
            node(&facts, 0).as_str(),
            "agent `triage` declares a transfer to `shipping`, but in flow `Desk` `shipping` is \
             neither a sub-agent nor the parent of `triage`, so the transfer could never \
             succeed. Its sub-agents here: `refund`, `billing`; its parent: none (it is the \
             root). Place `shipping` under `triage` in this flow, or remove it from the agent's \
             `#[agent(transfers = [...])]`"
        );
        let ok = desk(&names, &[&[], &["triage"], &[]], &[false; 3], &index);
        assert!(!node(&ok, 1).failed());
        let barred = desk(
            &names,
            &[&[], &["triage"], &[]],
            &[false, true, false],
            &index,
        );
        assert!(node(&barred, 1).as_str().contains("marked `no_parent`"));
        let names = ["a", "b", "a", "b", "c"];
        let nodes = ["a", "b", "c", "d", "e"];
        let dups = name_index::<5, 16>(&names);
        assert_eq!(dups.earlier, [usize::MAX, usize::MAX, 0, 1, usize::MAX]);
        assert!(!dups.unique);
        let dup = unique_name("Desk", &names, &nodes, 2, dups.earlier[2]);
        assert!(dup.as_str().starts_with(
            "two agents of flow `Desk` are named `a`: node `c` has the name of node `a`"
        ));
        assert!(!unique_name("Desk", &names, &nodes, 1, dups.earlier[1]).failed());
        let dup_names = ["triage", "refund", "refund"];
        let dup_index = name_index::<3, 8>(&dup_names);
        let facts = desk(&dup_names, &[&[], &[], &[]], &[false; 3], &dup_index);
        assert!(node(&facts, 2)
            .as_str()
            .contains("node `billing` has the name of node `refund`"));
        // `passes` agrees with `node` on every node of these flows.
        let facts = [
            desk(
                &["triage", "refund", "billing"],
                &[&["refund", "shipping"], &[], &[]],
                &[false; 3],
                &index,
            ),
            desk(
                &["triage", "refund", "billing"],
                &[&[], &["triage"], &["refund"]],
                &[false, true, false],
                &index,
            ),
            desk(
                &["triage", "refund", "billing"],
                &[&["triage"], &["triage"], &[]],
                &[false; 3],
                &index,
            ),
        ];
        for f in &facts {
            for i in 0..3 {
                assert_eq!(passes(f, i), !node(f, i).failed(), "node {i}");
            }
        }
    }

    /// The neighbour found through the flow's table of names (or by the position the name was
    /// declared at) is the one a scan of the node's sub-agents and parent finds, for every node
    /// and every name of the flow (and names it lacks), with unique names (the table answers)
    /// and with a duplicate (the scan does).
    #[test]
    fn neighbours_by_hash_agree_with_a_scan() {
        // root => [a => [c, d], b => [e]], then the same tree with `e` renamed `c`.
        let parents = [None, Some(0), Some(0), Some(1), Some(1), Some(2)];
        let children: [&[usize]; 6] = [&[1, 2], &[3, 4], &[5], &[], &[], &[]];
        for agents in [
            ["root", "a", "b", "c", "d", "e"],
            ["root", "a", "b", "c", "d", "c"],
        ] {
            let index = name_index::<6, 16>(&agents);
            assert_eq!(index.unique, agents[5] == "e");
            let f = FlowFacts {
                flow: "F",
                agents: &agents,
                nodes: &agents,
                parents: &parents,
                children: &children,
                marked_no_parent: &[false; 6],
                task: &[false; 6],
                delegated: &[false; 6],
                workflows: &[""; 6],
                transfers: &[&[] as &[&str]; 6],
                no_parent: &[false; 6],
                returns: &[None; 6],
                accepts: &[None; 6],
                payloads: &[&[] as &[&str]; 6],
                earlier: &index.earlier,
                hashes: &index.hashes,
                slots: &index.slots,
                unique: index.unique,
            };
            for i in 0..6 {
                for name in agents.iter().copied().chain(["x", "", "root2"]) {
                    let scan = children[i]
                        .iter()
                        .copied()
                        .find(|&c| agents[c] == name)
                        .or(parents[i].filter(|&p| agents[p] == name));
                    assert_eq!(f.neighbour(i, name), scan, "node {i}, name {name:?}");
                    // Whichever position the name was declared at.
                    for k in 0..3 {
                        assert_eq!(f.neighbour_at(i, name, k), scan, "node {i}, {name:?}, {k}");
                    }
                }
            }
        }
    }

    #[test]
    fn delegation_verdicts() {
        assert!(
            !returns_to_a_parent("Desk", "refund", Some("RefundOutcome"), Some("triage")).failed()
        );
        assert!(
            returns_to_a_parent("Desk", "refund", Some("RefundOutcome"), None)
                .as_str()
                .starts_with(
                    "agent `refund` declares `returns = RefundOutcome`, but it is the root"
                )
        );
        assert!(!task_can_finish("Desk", "refund", Some("RefundOutcome"), "triage").failed());
        assert!(task_can_finish("Desk", "refund", None, "triage")
            .as_str()
            .contains("give control back to `triage`"));
    }

    /// Payload positions are given only where the sender's transfer carries a payload and its
    /// target accepts one (the types are then compared by the trait system); `passes` needs a
    /// payload exactly where the target accepts one, and refuses `returns` on a plain node.
    #[test]
    fn payload_positions_and_plain_nodes_with_results() {
        let names = ["triage", "refund", "billing"];
        let index = name_index::<3, 8>(&names);
        let mut facts = desk(
            &names,
            &[&["refund", "billing"], &["triage"], &[]],
            &[false; 3],
            &index,
        );
        facts.payloads = &[&["RefundRequest", ""], &[], &[]];
        facts.accepts = &[None, Some("types::RefundRequest"), None];
        let edges = [(0, 1), (1, 0), (0, 2), (2, 0)];
        assert_eq!(
            payload_positions::<4>(&facts, &edges),
            [0, usize::MAX, usize::MAX, usize::MAX]
        );
        // Spelled differently, compared as types elsewhere: the presence check passes.
        assert!(passes(&facts, 0));
        assert!(!node(&facts, 0).failed());
        // A target that accepts a payload its sender does not send fails, with a message.
        facts.accepts = &[None, Some("RefundRequest"), Some("Invoice")];
        assert!(!passes(&facts, 0));
        assert!(node(&facts, 0).as_str().contains("without a payload"));
        facts.accepts = &[None; 3];
        facts.payloads = &[&[], &[], &[]];
        // `returns` on a plain node, then on a delegated one.
        facts.returns = &[None, Some("RefundOutcome"), None];
        assert!(!passes(&facts, 1));
        assert!(node(&facts, 1)
            .as_str()
            .contains("node `refund` of flow `Desk` is a plain node"));
        facts.delegated = &[false, true, false];
        facts.task = &[false, true, false];
        assert!(passes(&facts, 1));
        assert!(!node(&facts, 1).failed());
    }

    /// A map's agent may declare a result (each item's `Finish`); a `map(payload)` node accepts
    /// a list of its agent's items, and the messages say so (`Vec<Item>`, `map(payload)`).
    #[test]
    fn a_maps_agent_declares_results_and_a_payload_map_takes_a_list() {
        let names = ["triage", "answers", "refund"];
        let index = name_index::<3, 8>(&names);
        let mut facts = desk(&names, &[&["answers"], &[], &[]], &[false; 3], &index);
        facts.nodes = &names;
        facts.parents = &[None, Some(0), Some(1)];
        facts.children = &[&[1], &[2], &[]];
        facts.workflows = &["", "map", ""];
        facts.returns = &[None, None, Some("Answer")];
        assert!(passes(&facts, 2));
        assert!(!node(&facts, 2).failed());
        // `map(payload)` over an agent taking `Ticket`: a transfer without the list fails.
        facts.accepts = &[None, Some("Ticket"), None];
        assert!(!passes(&facts, 0));
        let message = node(&facts, 0);
        assert!(
            message
                .as_str()
                .contains("transfers = [answers(Vec<Ticket>)]"),
            "{}",
            message.as_str()
        );
        facts.payloads = &[&["Vec<Ticket>"], &[], &[]];
        assert!(passes(&facts, 0));
        assert_eq!(payload_positions::<1>(&facts, &[(0, 1)]), [0]);
        // A list sent to a map that takes its items elsewhere is never read.
        facts.accepts = &[None; 3];
        assert!(!passes(&facts, 0));
        assert!(node(&facts, 0).as_str().contains("`map(payload) [agent]`"));
        // An agent without an item type: the trait check reports it, not this one.
        facts.accepts = &[None, Some(""), None];
        assert!(passes(&facts, 0));
        assert!(!node(&facts, 0).failed());
        assert_eq!(payload_positions::<1>(&facts, &[(0, 1)]), [usize::MAX]);
    }

    #[test]
    fn verdict_cuts_on_char_boundary() {
        let long = "é".repeat(600);
        let v = Verdict::pass().push("x").push(&long);
        assert!(v.as_str().len() <= 1024);
        assert!(v.as_str().ends_with('é'));
    }
}
