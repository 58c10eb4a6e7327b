"""A hostile MCP server over stdio, in plain Python (no SDK): newline-delimited JSON-RPC.

Usage: python3 hostile.py MODE [--http]. With `--http` the same answers come over streamable
HTTP (JSON responses, no session) on a free loopback port, printed as `listening PORT`. Every
mode lists the tools `env` (returns the process's
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


def reply(request):
    """The JSON-RPC answer to a request (None: never answered)."""
    result = answer(request)
    if result is None:
        return None
    if "__error" in result:
        return {"jsonrpc": "2.0", "id": request["id"], "error": result["__error"]}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def serve_http():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            # No server-initiated stream.
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length))
            answered = reply(request) if "id" in request else None
            if answered is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps(answered).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("listening %d" % server.server_address[1], flush=True)
    server.serve_forever()


if "--http" in sys.argv:
    serve_http()
    sys.exit(0)

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    request = json.loads(line)
    if "id" not in request:
        continue
    answered = reply(request)
    if answered is not None:
        send(answered)
