#!/usr/bin/env python3
"""W7 in one sitting: `cargo check` CPU time (user + sys of cargo and rustc) of generated
crates, rebuilt alternately N times each (`touch src/lib.rs`, `CARGO_INCREMENTAL=0`), with the
median and minimum per crate and the machine's load. CPU time rather than wall time, because
the machine may be shared; alternating, because its speed drifts over minutes.

    python3 bench/w7/gen.py hand /tmp/w7/hand
    python3 bench/w7/gen.py macro /tmp/w7/macro
    python3 bench/w7/alternate.py 15 /tmp/w7/hand /tmp/w7/macro

A crate for an earlier commit: generate it the same way, then point its `agentweave`
dependency at a worktree of that commit. `CARGO_TARGET_DIR` defaults to `target/w7`.
"""
import os
import resource
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    n, dirs = int(sys.argv[1]), sys.argv[2:]
    env = dict(os.environ, CARGO_INCREMENTAL="0")
    env.setdefault("CARGO_TARGET_DIR", os.path.join(ROOT, "target", "w7"))
    times = {d: [] for d in dirs}
    for d in dirs:  # dependencies, untimed
        subprocess.run(["cargo", "check", "--quiet"], cwd=d, env=env, check=True)
    for _ in range(n):
        for d in dirs:
            os.utime(os.path.join(d, "src", "lib.rs"))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(["cargo", "check", "--quiet"], cwd=d, env=env, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[d].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for d in dirs:
        t = times[d]
        print(f"{d}: median {statistics.median(t):.3f} s, min {min(t):.3f} s ({n} rebuilds)")
    print("load", " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
