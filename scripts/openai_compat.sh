#!/usr/bin/env bash
# Runs OpenAiChatModel against a real, independent OpenAI-compatible server: the LiteLLM proxy
# (from PyPI) with the offline models of scripts/openai_compat/litellm.yaml. `.ci/run` runs the
# same tests through .ci/litellm.sh; this script is for running them (and the example) locally.
#
#   scripts/openai_compat.sh           # the compat tests, then the customer_service example
#   scripts/openai_compat.sh tests     # only the tests (flow-runtime/tests/it/openai_compat.rs)
#   scripts/openai_compat.sh example   # only the example
#   scripts/openai_compat.sh serve     # start the server and wait (Ctrl-C stops it)
#
# Environment: AGENTFLOW_OPENAI_COMPAT_VENV (the virtualenv; default: a folder in the temporary
# directory, reused between runs), LITELLM_SPEC (what pip installs; default: the version last
# checked). The server listens on a free port of 127.0.0.1 with a fresh random key, and is
# stopped when the script exits.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-all}
case $mode in
    all | tests | example | serve) ;;
    *)
        echo "usage: $0 [all|tests|example|serve]" >&2
        exit 2
        ;;
esac

venv=${AGENTFLOW_OPENAI_COMPAT_VENV:-${TMPDIR:-/tmp}/agentflow-openai-compat-venv}
spec=${LITELLM_SPEC:-litellm[proxy]==1.108.7}
config=scripts/openai_compat/litellm.yaml

if [[ ! -x $venv/bin/litellm ]]; then
    echo "== installing $spec into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet "$spec"
fi
echo "== $("$venv/bin/pip" show litellm | sed -n 's/^Version: /litellm /p')"

work=$(mktemp -d)
server_pid=
stop() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
key="sk-$("$venv/bin/python" -c 'import secrets; print(secrets.token_hex(32))')"
url="http://127.0.0.1:$port/v1"

echo "== starting the LiteLLM proxy at $url"
LITELLM_MASTER_KEY=$key LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$venv/bin/litellm" --config "$config" --host 127.0.0.1 --port "$port" >"$work/server.log" 2>&1 &
server_pid=$!
up() {
    "$venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health/liveliness', timeout=2)" 2>/dev/null
}
for _ in $(seq 180); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "the server exited; its log:" >&2
        tail -n 40 "$work/server.log" >&2
        exit 1
    fi
    up && break
    sleep 1
done
if ! up; then
    echo "the server did not come up in 180 s; its log:" >&2
    tail -n 40 "$work/server.log" >&2
    exit 1
fi

if [[ $mode == serve ]]; then
    echo "OPENAI_BASE_URL=$url OPENAI_API_KEY=$key OPENAI_MODEL=scripted-desk"
    echo "(Ctrl-C stops the server)"
    wait "$server_pid"
    exit
fi

if [[ $mode == all || $mode == tests ]]; then
    echo "== cargo test --test it -- openai_compat::, against the server"
    log=$work/tests.log
    AGENTFLOW_OPENAI_COMPAT_URL=$url AGENTFLOW_OPENAI_COMPAT_KEY=$key \
        cargo test -p agentweave-runtime --features openai --test it -- openai_compat:: 2>&1 | tee "$log"
    # A filter that matches nothing passes silently.
    grep -q '^test openai_compat::' "$log" || { echo "no openai_compat test ran" >&2; exit 1; }
fi

if [[ $mode == all || $mode == example ]]; then
    echo "== cargo run --example customer_service --features openai"
    out=$(OPENAI_BASE_URL=$url OPENAI_API_KEY=$key OPENAI_MODEL=scripted-desk \
        cargo run --quiet --example customer_service --features openai)
    echo "$out"
    # The thread: the refund task asks for the order in turn 1; turn 2 goes to the task, which
    # calls its tools and finishes, and triage answers with its result; turn 3 starts at
    # triage again and transfers to the complaint desk.
    for expected in \
        '[triage/refund] assistant: Of course. What is the order number?' \
        '[refund] tool: refunded 39.00 EUR for order 42' \
        '[refund] => finish: {"order_id":42,' \
        '[refund/triage] assistant: Done: [refund] `finish_task` tool returned result:' \
        '[triage/complaint] tool: complaint #1001 logged: it arrived broken.' \
        '[triage/complaint] => exit' \
        '[triage] assistant (streamed): Hello! We are open every day from 9 to 17, Sundays included.'; do
        if ! grep -qF -- "$expected" <<<"$out"; then
            echo "the example's output lacks: $expected" >&2
            exit 1
        fi
    done
    if grep -q 'error' <<<"$out"; then
        echo "the example reported an error" >&2
        exit 1
    fi
    echo "the example ran as expected against the server"
fi
echo "openai_compat passed"
