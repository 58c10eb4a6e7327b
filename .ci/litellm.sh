# Sourced by .ci/run: installs the LiteLLM proxy from PyPI into a virtualenv, starts it on a free
# loopback port with the offline models of scripts/openai_compat/litellm.yaml (LiteLLM's mocks
# and a scripted desk: no weights, no network), and exports AGENTFLOW_OPENAI_COMPAT_URL and
# AGENTFLOW_OPENAI_COMPAT_KEY for flow-runtime/tests/it/openai_compat.rs (and the ANTHROPIC_COMPAT
# pair for the Messages endpoint test in flow-runtime/tests/it/anthropic.rs). Stopped on exit through
# `cleanups`. The install takes about two minutes. Sourced twice: with `ci_install_only`
# set (in the background, while clippy runs) it installs; then it starts the proxy.

litellm_spec=${LITELLM_SPEC:-litellm[proxy]==1.108.7}
# A virtualenv of our own under $ci_tools (removed on exit: it is ~750 MB), unless
# AGENTFLOW_OPENAI_COMPAT_VENV names one.
litellm_venv=${AGENTFLOW_OPENAI_COMPAT_VENV:-${ci_tools:=$(mktemp -d)}/litellm-venv}

if [[ ! -x $litellm_venv/bin/litellm ]]; then
    if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
        apt_install python3 python3-venv python3-pip
    fi
    echo "-- installing $litellm_spec"
    python3 -m venv "$litellm_venv"
    timeout 600 "$litellm_venv/bin/pip" install --quiet --upgrade pip
    timeout 600 "$litellm_venv/bin/pip" install --quiet "$litellm_spec"
fi
[[ -n ${ci_install_only:-} ]] && return 0

litellm_port=$("$litellm_venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
litellm_key="sk-$("$litellm_venv/bin/python" -c 'import secrets; print(secrets.token_hex(32))')"
litellm_log=$(mktemp)
echo "-- starting the LiteLLM proxy on 127.0.0.1:$litellm_port"
LITELLM_MASTER_KEY=$litellm_key LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$litellm_venv/bin/litellm" --config scripts/openai_compat/litellm.yaml \
    --host 127.0.0.1 --port "$litellm_port" >"$litellm_log" 2>&1 &
litellm_pid=$!
cleanups+=("kill $litellm_pid 2>/dev/null; wait $litellm_pid 2>/dev/null; rm -f $litellm_log")

litellm_up() {
    "$litellm_venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$litellm_port/health/liveliness', timeout=2)" 2>/dev/null
}
for _ in $(seq 180); do
    if ! kill -0 "$litellm_pid" 2>/dev/null; then
        echo "the LiteLLM proxy exited; its log:" >&2
        tail -n 40 "$litellm_log" >&2
        exit 1
    fi
    litellm_up && break
    sleep 1
done
if ! litellm_up; then
    echo "the LiteLLM proxy did not come up in 180 s; its log:" >&2
    tail -n 40 "$litellm_log" >&2
    exit 1
fi
export AGENTFLOW_OPENAI_COMPAT_URL="http://127.0.0.1:$litellm_port/v1"
export AGENTFLOW_OPENAI_COMPAT_KEY=$litellm_key
# The same proxy's Anthropic Messages endpoint, for flow-runtime/tests/it/anthropic.rs.
export AGENTFLOW_ANTHROPIC_COMPAT_URL="http://127.0.0.1:$litellm_port"
export AGENTFLOW_ANTHROPIC_COMPAT_KEY=$litellm_key
