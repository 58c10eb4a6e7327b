# Sourced by .ci/run: installs the official A2A Python SDK (`a2a-sdk` on PyPI, written by the
# A2A project, not by us) into a virtualenv under $ci_tools (removed on exit). agentweave-server's `a2a`
# tests run its client against agentflow's A2A endpoint; agentweave-a2a's tests run a small server made
# with it as a remote node of a tree. The tests find the interpreter through AGENTFLOW_A2A_PYTHON.
# Sourced twice: with `ci_install_only` set (in the background) it installs; then it exports.
a2a_sdk_version="1.3.0"
a2a_dir="${ci_tools:=$(mktemp -d)}/a2a"

if [[ ! -x $a2a_dir/venv/bin/python ]]; then
    if ! python3 -m venv --help >/dev/null 2>&1; then
        apt_install python3-venv
    fi
    echo "-- pip: a2a-sdk[http-server]==$a2a_sdk_version, uvicorn"
    python3 -m venv "$a2a_dir/venv"
    timeout 600 "$a2a_dir/venv/bin/pip" install --quiet --disable-pip-version-check \
        "a2a-sdk[http-server]==$a2a_sdk_version" "uvicorn<1"
fi
[[ -n ${ci_install_only:-} ]] && return 0

export AGENTFLOW_A2A_PYTHON="$a2a_dir/venv/bin/python"
"$AGENTFLOW_A2A_PYTHON" -c "import a2a.client, a2a.server.routes, uvicorn"
