#!/usr/bin/env bash
# W10 against Google ADK's API server (BENCHMARKS.md, W10): the offline desk of
# bench/w10/adk_agents/desk (an LlmAgent tree on a model that answers offline), served by
# `adk api_server` (uvicorn, one process, in-memory sessions created on first use), loaded by
# the same generator as agentflow's server: `cargo bench -p agentweave-server --bench w10_server` with
# W10_URL and W10_TARGET=adk.
#
#   bench/w10/adk_api_server.sh            # 1,000 clients, 3 rounds
#   W10_CLIENTS=100 W10_ROUNDS=5 bench/w10/adk_api_server.sh
#   W10_PACED_RATE=100 bench/w10/adk_api_server.sh   # also the paced load at 100 turns/s
#
# The venv is bench/.venv (git-ignored), google-adk pinned as in the Python anchors' README.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV:-bench/.venv}
if [ ! -x "$VENV/bin/adk" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q google-adk==2.13.0
fi
PORT=${PORT:-18765}
LOG=$(mktemp)
# No telemetry, no reload, no files: in-memory sessions, artifacts and memory.
ADK_DISABLE_TELEMETRY=1 "$VENV/bin/adk" api_server \
    --host 127.0.0.1 --port "$PORT" --no-reload --log_level ERROR \
    --session_service_uri memory:// --artifact_service_uri memory:// \
    --memory_service_uri memory:// --auto_create_session \
    bench/w10/adk_agents >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$PORT/list-apps" >/dev/null 2>&1; then break; fi
    if ! kill -0 $SERVER 2>/dev/null; then cat "$LOG"; exit 1; fi
    sleep 0.5
done
curl -fsS "http://127.0.0.1:$PORT/list-apps"; echo
echo "google-adk $("$VENV/bin/python" -c 'import google.adk as a; print(a.__version__)'), server pid $SERVER, load $(cut -d' ' -f1-3 /proc/loadavg)"
# The uvicorn process is the adk command itself (no reload, one worker).
W10_URL="http://127.0.0.1:$PORT" W10_TARGET=adk W10_SERVER_PID=$SERVER \
    W10_ROUNDS=${W10_ROUNDS:-3} \
    cargo bench -p agentweave-server --bench w10_server
