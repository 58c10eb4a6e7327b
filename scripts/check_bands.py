#!/usr/bin/env python3
"""Checks that the engine's bands hold, in agentweave-core and agentweave-runtime: a module imports only
modules of its own band or of the bands below it (the guide's "Architecture" chapter,
docs/src/architecture.md). Prints each upward import and exits 1 if there is one. (agentweave-core
cannot import agentweave-runtime at all: the compiler holds that boundary; agentweave-runtime's modules sit
in the same bands as agentweave-core's.)

usage: python3 scripts/check_bands.py            (from the repository root)
"""
import os
import re
import sys

ROOTS = ["flow-core/src", "flow-runtime/src"]
BANDS = [
    ("words", "message input usage stream run_path transfer context_form limits error ids trace event resume host budget spending"),
    ("contracts", "model store outbound testing"),
    ("core", "history session agent flow workflow fn_agent spec diagram"),
    ("services", "runner"),
    ("llm", "llm tools"),
]
band = {m: i for i, (_, mods) in enumerate(BANDS) for m in mods.split()}

def main():
    bad = []
    for root in ROOTS:
        bad += check(root)
    for b in bad:
        print(b)
    print(f"upward imports: {len(bad)}")
    return 1 if bad else 0

def check(ROOT):
    bad, unknown = [], set()
    for d, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), ROOT)
            top = rel.split("/")[0].removesuffix(".rs")
            if top == "lib":
                continue
            if top not in band:
                unknown.add(top)
                continue
            # Unit tests may reach anywhere.
            text = open(os.path.join(d, f)).read().split("#[cfg(test)]\nmod tests")[0]
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip().startswith("//"):
                    continue
                for target in re.findall(r"\bcrate::(\w+)", line):
                    if target in band and band[target] > band[top]:
                        bad.append(f"{ROOT}/{rel}:{n}: {top} ({BANDS[band[top]][0]}) imports "
                                   f"{target} ({BANDS[band[target]][0]}): {line.strip()}")
    for m in sorted(unknown):
        bad.append(f"{ROOT}: module '{m}' is in no band: add it to scripts/check_bands.py")
    return bad

if __name__ == "__main__":
    sys.exit(main())
