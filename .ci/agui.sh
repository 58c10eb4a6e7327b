# Sourced by .ci/run: installs the official AG-UI client (@ag-ui/client on npm, written by the
# AG-UI project, not by us) into a node_modules under $ci_tools (removed on exit). agentweave-server's
# `agui` test drives the AG-UI endpoint with it; the test finds it through
# AGENTFLOW_AGUI_NODE_MODULES. Sourced twice: with `ci_install_only` set (in the background) it
# installs; then it exports.
agui_client_version="1.0.0"
agui_dir="${ci_tools:=$(mktemp -d)}/agui"

if [[ ! -f $agui_dir/node_modules/@ag-ui/client/package.json ]]; then
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        apt_install nodejs npm
    fi
    echo "-- npm: @ag-ui/client@$agui_client_version"
    timeout 600 npm install --prefix "$agui_dir" --no-audit --no-fund --silent \
        "@ag-ui/client@$agui_client_version" >/dev/null
fi
[[ -n ${ci_install_only:-} ]] && return 0

export AGENTFLOW_AGUI_NODE_MODULES="$agui_dir/node_modules"
test -f "$AGENTFLOW_AGUI_NODE_MODULES/@ag-ui/client/package.json"
