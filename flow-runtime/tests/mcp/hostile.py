"""A hostile MCP server over stdio, in plain Python (no SDK): newline-delimited JSON-RPC.

Usage: python3 hostile.py MODE. Every mode lists the tools `env` (returns the process's
environment as JSON), `echo` and `call`; `tools/call` of `call` misbehaves by MODE:

- endless-pages: tools/list always answers with another page cursor.
- many-blocks: the call answers with 5,000 small text blocks.
- huge-line: the call answers with one line of 550,000 small text blocks (about 15 MB).
- big-result: the call answers with one 3 MB text block.
- error-then-silent: the call answers isError; every tools/list after the first is never answered.
- long-description: the `echo` tool's description is 100 KB.
- plain: nothing hostile (the env tool, for the environment test).
"""

import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
lists = 0


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tools():
    description = "x" * 100_000 if MODE == "long-description" else "Echoes its text."
    schema = {"type": "object", "properties": {}}
    return [
        {"name": "env", "description": "The server's environment.", "inputSchema": schema},
        {"name": "echo", "description": description, "inputSchema": schema},
        {"name": "call", "description": "Misbehaves.", "inputSchema": schema},
    ]


def answer(request):
    global lists
    method = request.get("method")
    if method == "initialize":
        version = request["params"].get("protocolVersion", "2025-06-18")
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "hostile", "version": "0.1"},
        }
    if method == "tools/list":
        lists += 1
        if MODE == "error-then-silent" and lists > 1:
            return None
        result = {"tools": tools()}
        if MODE == "endless-pages":
            result["nextCursor"] = "page-%d" % lists
        return result
    if method == "tools/call":
        name = request["params"]["name"]
        if name == "env":
            text = json.dumps(dict(os.environ))
            return {"content": [{"type": "text", "text": text}]}
        if name == "echo":
            return {"content": [{"type": "text", "text": "echo"}]}
        if MODE == "many-blocks":
            return {"content": [{"type": "text", "text": "b"} for _ in range(5000)]}
        if MODE == "huge-line":
            return {"content": [{"type": "text", "text": "b"} for _ in range(550_000)]}
        if MODE == "big-result":
            return {"content": [{"type": "text", "text": "y" * 3_000_000}]}
        if MODE == "error-then-silent":
            return {"content": [{"type": "text", "text": "failed"}], "isError": True}
        return {"content": [{"type": "text", "text": "ok"}]}
    if method == "ping":
        return {}
    return {"__error": {"code": -32601, "message": "method not found"}}


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    request = json.loads(line)
    if "id" not in request:
        continue
    result = answer(request)
    if result is None:
        continue
    if "__error" in result:
        send({"jsonrpc": "2.0", "id": request["id"], "error": result["__error"]})
    else:
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})
