#!/usr/bin/env python3
"""Lists the registry dependencies that the workspace's test build with every feature compiles
with other features than the README's test build (`cargo test --workspace`).

CI runs both builds. A dependency whose features differ is compiled twice, and so is every crate
above it; the root Cargo.toml's "workspace hack" dev-dependencies give the shared ones the same
features in both. Run this after changing a dependency or a feature, and add what it lists for
the target (normal) side there. Lines marked `host` are build-time variants (build scripts and
proc macros of crates only the full build has): nothing to do.

Needs a nightly toolchain for cargo's unit graph: `python3 scripts/feature_drift.py`.
"""
import collections
import json
import subprocess
import sys


def units(*extra):
    out = subprocess.run(
        ["cargo", "+nightly", "test", "--workspace", "--no-run", "--unit-graph",
         "-Z", "unstable-options", *extra],
        check=True, capture_output=True, text=True,
    ).stdout
    graph = json.loads(out)
    by_package = collections.defaultdict(set)
    for unit in graph["units"]:
        if unit["target"]["kind"][0] not in ("lib", "proc-macro"):
            continue
        if unit["pkg_id"].startswith("path+"):
            continue  # the workspace's own crates differ by design
        name = unit["pkg_id"].split("#")[-1]
        by_package[name].add(frozenset(unit["features"]))
    return by_package


def main():
    default, every = units(), units("--all-features")
    drift = 0
    for name in sorted(every):
        if name not in default:
            continue  # only the full build has it
        for features in every[name] - default[name]:
            richer = any(features < f for f in default[name])
            side = "host" if richer else "target"
            extra = sorted(features - set().union(*default[name]))
            print(f"{side:6} {name}: {sorted(features)} (more than the README's build: {extra})")
            drift += side == "target"
    print(f"{drift} target-side dependencies compiled twice", file=sys.stderr)


if __name__ == "__main__":
    main()
