# Sourced by .ci/run: installs the MCP servers the `mcp` feature's tests and the mcp_tools
# example talk to, servers nobody in this project wrote:
# - the reference "everything" server (@modelcontextprotocol/server-everything, npm);
# - the Python SDK (`mcp` on PyPI), whose MCPServer (named FastMCP before 2.0) runs the small
#   scripts in flow-runtime/tests/mcp/ (cases the reference server has no tool for: a tool that exits
#   mid-call, one that never answers).
# Both go under $ci_tools (removed on exit); the tests find them through the exported variables.
# Sourced twice: with `ci_install_only` set (in the background) it installs; then it exports.
mcp_everything_version="2026.8.31"
mcp_python_version="2.3.0"
mcp_dir="${ci_tools:=$(mktemp -d)}/mcp"
mcp_everything="$mcp_dir/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

if [[ ! -f $mcp_everything ]]; then
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        apt_install nodejs npm
    fi
    echo "-- npm: @modelcontextprotocol/server-everything@$mcp_everything_version"
    timeout 600 npm install --prefix "$mcp_dir/npm" --no-audit --no-fund --silent \
        "@modelcontextprotocol/server-everything@$mcp_everything_version" >/dev/null
fi
if [[ ! -x $mcp_dir/venv/bin/python ]]; then
    if ! python3 -m venv --help >/dev/null 2>&1; then
        apt_install python3-venv
    fi
    echo "-- pip: mcp==$mcp_python_version"
    python3 -m venv "$mcp_dir/venv"
    timeout 600 "$mcp_dir/venv/bin/pip" install --quiet --disable-pip-version-check \
        "mcp==$mcp_python_version"
fi
[[ -n ${ci_install_only:-} ]] && return 0

# The everything server's entry point (run with `node`), and a Python with FastMCP.
export AGENTFLOW_MCP_EVERYTHING="$mcp_everything"
export AGENTFLOW_MCP_PYTHON="$mcp_dir/venv/bin/python"
test -f "$AGENTFLOW_MCP_EVERYTHING"
"$AGENTFLOW_MCP_PYTHON" -c "import mcp.server.mcpserver"
