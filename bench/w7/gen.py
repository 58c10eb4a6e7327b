#!/usr/bin/env python3
"""W7: writes a crate declaring a 200-agent flow (a root, 9 desks, 190 leaves; the shape of the
DSL's own 200-agent test), in one of two forms:

  gen.py hand  OUT_DIR   the tree built by hand: 200 FnAgents joined with set_sub_agents
  gen.py macro OUT_DIR   the same tree declared with #[agent] and flow!  (TODO: needs the
                         flow! macro in the agentflow facade; bench/w7/compile.sh skips it
                         while it is absent)
"""
import os, sys

DESKS, LEAVES = 9, 190
mode, out = sys.argv[1], sys.argv[2]
name = lambda i: f"a{i:03}"
children = {0: list(range(1, 1 + DESKS))}
parent = {d: 0 for d in children[0]}
for d in children[0]:
    children[d] = []
for k in range(LEAVES):
    leaf = 1 + DESKS + k
    desk = 1 + k % DESKS
    children[desk].append(leaf)
    children[leaf] = []
    parent[leaf] = desk
assert len(children) == 200

agentweave = os.path.relpath(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), out)
os.makedirs(os.path.join(out, "src"), exist_ok=True)
open(os.path.join(out, "Cargo.toml"), "w").write(f"""[package]
name = "w7-{mode}"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
agentweave = {{ path = "{agentflow}" }}
""")

src = ["//! W7: a 200-agent flow, " + ("built by hand." if mode == "hand" else "declared with flow!."),
       "#![allow(clippy::all)]", "use agentweave::prelude::*;", ""]
if mode == "hand":
    for i in range(200):
        kids = children[i]
        body = f'cx.transfer("{name(kids[0])}");' if kids else 'cx.say("done");'
        src.append(f"fn {name(i)}() -> FlowAgent {{")
        src.append(f'    let agent = FnAgent::new("{name(i)}", |cx, _| async move {{ {body} Ok(()) }});')
        if kids:
            src.append(f"    set_sub_agents(FlowAgent::new(agent), [{', '.join(name(c) + '()' for c in kids)}]).unwrap()")
        else:
            src.append("    FlowAgent::new(agent)")
        src.append("}")
    src.append("")
    src.append("/// The whole tree.")
    src.append("pub fn large() -> FlowAgent { a000() }")
else:
    for i in range(200):
        targets = [name(c) for c in children[i]] + ([name(parent[i])] if i in parent else [])
        src.append(f"#[agent(transfers = [{', '.join(targets)}])]")
        src.append(f"async fn {name(i)}(_cx: &AgentContext) {{}}")
    def tree(i):
        return name(i) if not children[i] else f"{name(i)} => [{', '.join(tree(c) for c in children[i])}]"
    src.append("flow! { pub Large: " + tree(0) + " }")
open(os.path.join(out, "src", "lib.rs"), "w").write("\n".join(src) + "\n")
