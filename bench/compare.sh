#!/usr/bin/env bash
# Runs, in one go, the same workloads on agentflow, on adk-rust and on the Python anchors
# (google-adk, openai-agents, langgraph), then prints a Markdown table: workload, ours, each
# anchor, and the ratios. See BENCHMARKS.md.
#
#   bench/compare.sh                  # everything (the Python anchors take ~10 min on 2 cores)
#   SKIP_PYTHON=1 bench/compare.sh    # reuse bench/results/python from an earlier run
#   SKIP_ADK=1 bench/compare.sh       # reuse bench/results/adk-rust.jsonl
#   SKIP_OURS=1 bench/compare.sh      # reuse target/criterion
#
# Environment:
#   ANCHORS_DIR  the Python anchor scripts (default: ../shared/bench/anchors next to the repo)
#   REPEATS      process repeats of each Python anchor (default 3; the README's figures use 5)
#   PIN          CPU pinning of the Python anchors (default `taskset -c 1`, as their README says)
#   CRITERION_ARGS  extra arguments for our criterion benches (default: 2 s warm-up, 5 s measurement)
# Results stay in bench/results/ and the venv in bench/.venv (both ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RESULTS=$ROOT/bench/results
ANCHORS_DIR=${ANCHORS_DIR:-$ROOT/../shared/bench/anchors}
mkdir -p "$RESULTS"

machine() {
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine | tee "$RESULTS/machine.txt"

if [ -z "${SKIP_OURS:-}" ]; then
    echo "== agentflow benches (criterion)"
    # shellcheck disable=SC2086
    cargo bench --bench workloads -- ${CRITERION_ARGS:---warm-up-time 2 --measurement-time 5} \
        2>&1 | grep -E '^(w[0-9]|\s+time:|\s+thrpt:)' || true
    echo "== agentflow W5 memory"
    cargo bench --bench w5_memory 2>/dev/null | tee "$RESULTS/w5_memory.txt"
    cargo bench --bench w6_checkpoint 2>/dev/null
    echo "load after ours: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/machine.txt"
fi

if [ -z "${SKIP_ADK:-}" ]; then
    echo "== adk-rust anchor"
    (cd bench/adk-rust-anchor && cargo build --release --quiet)
    ${PIN-taskset -c 1} bench/adk-rust-anchor/target/release/adk-rust-anchor | tee "$RESULTS/adk-rust.jsonl"
    echo "load after adk-rust: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/machine.txt"
fi

if [ -z "${SKIP_PYTHON:-}" ]; then
    echo "== Python anchors from $ANCHORS_DIR"
    [ -f "$ANCHORS_DIR/run_all.sh" ] || { echo "no anchors at $ANCHORS_DIR (set ANCHORS_DIR)" >&2; exit 1; }
    VENV=$ROOT/bench/.venv
    if [ ! -x "$VENV/bin/python" ]; then
        # Exactly as the anchors' README says.
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install google-adk==2.13.0 openai-agents==0.24.0 langgraph==1.2.24 langgraph-swarm==0.1.0
    fi
    # The anchors' folder may be read-only: run a copy, so results/ can be written.
    RUN=$ROOT/bench/anchors-run
    rm -rf "$RUN" && mkdir -p "$RUN" && cp "$ANCHORS_DIR"/*.py "$ANCHORS_DIR"/run_all.sh "$RUN"/
    (cd "$RUN" && PY="$VENV/bin/python" REPEATS="${REPEATS:-3}" bash ./run_all.sh)
    rm -rf "$RESULTS/python" && cp -r "$RUN/results" "$RESULTS/python"
    echo "load after Python: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/machine.txt"
fi

echo
cat "$RESULTS/machine.txt"
echo
python3 bench/table.py | tee "$RESULTS/table.md"
