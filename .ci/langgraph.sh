# Sourced by .ci/run: installs the official `langgraph-sdk` Python client from PyPI into a
# virtualenv (under $ci_tools, removed on exit, unless AGENTFLOW_LANGGRAPH_VENV names one) and
# exports AGENTFLOW_LANGGRAPH_PYTHON, the interpreter flow-server/tests/it/langgraph_sdk.rs runs
# flow-server/tests/langgraph/sdk_check.py with. Sourced twice: with `ci_install_only` set (in
# the background) it installs; then it exports.
langgraph_spec=${LANGGRAPH_SDK_SPEC:-langgraph-sdk==0.4.14}
langgraph_venv=${AGENTFLOW_LANGGRAPH_VENV:-${ci_tools:=$(mktemp -d)}/langgraph-venv}

if [[ ! -x $langgraph_venv/bin/python ]] || ! "$langgraph_venv/bin/python" -c 'import langgraph_sdk' 2>/dev/null; then
    if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
        apt_install python3 python3-venv python3-pip
    fi
    echo "-- installing $langgraph_spec"
    timeout 300 python3 -m venv "$langgraph_venv"
    timeout 300 "$langgraph_venv/bin/pip" install --quiet "$langgraph_spec"
fi
[[ -n ${ci_install_only:-} ]] && return 0

export AGENTFLOW_LANGGRAPH_PYTHON=$langgraph_venv/bin/python
