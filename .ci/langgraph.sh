# Sourced by .ci/run: installs the official `langgraph-sdk` Python client from PyPI into a
# virtualenv outside the repository and exports AGENTFLOW_LANGGRAPH_PYTHON, the interpreter
# flow-server/tests/langgraph_sdk.rs runs flow-server/tests/langgraph/sdk_check.py with.

langgraph_spec=${LANGGRAPH_SDK_SPEC:-langgraph-sdk==0.4.14}
if [[ -n ${AGENTFLOW_LANGGRAPH_VENV:-} ]]; then
    langgraph_venv=$AGENTFLOW_LANGGRAPH_VENV
else
    langgraph_venv_dir=$(mktemp -d)
    langgraph_venv=$langgraph_venv_dir/langgraph-venv
    cleanups+=("rm -rf $langgraph_venv_dir")
fi
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
    apt_install python3 python3-venv python3-pip
fi
if [[ ! -x $langgraph_venv/bin/python ]] || ! "$langgraph_venv/bin/python" -c 'import langgraph_sdk' 2>/dev/null; then
    echo "-- installing $langgraph_spec"
    timeout 300 python3 -m venv "$langgraph_venv"
    timeout 300 "$langgraph_venv/bin/pip" install --quiet "$langgraph_spec"
fi
export AGENTFLOW_LANGGRAPH_PYTHON=$langgraph_venv/bin/python
