"""The official MCP Python SDK's client (`mcp` on PyPI) against flows served at /v1/mcp.

Run by flow-server/tests/it/mcp_serve.rs with the server's URL and a token that may chat,
approve and read (AGENTFLOW_MCP_URL, AGENTFLOW_MCP_TOKEN); the served flows are `echo` (says how
many user messages its thread has) and `pay` (pays once a human approves). Checks: the tools
and their schemas, two calls of one session continuing one thread (with progress
notifications), and an approval asked by elicitation and approved. Prints "all checks passed".
"""

import asyncio
import os
import sys

import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["AGENTFLOW_MCP_URL"]
TOKEN = os.environ["AGENTFLOW_MCP_TOKEN"]


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    forms = []

    async def approve(context, params):
        forms.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write, elicitation_callback=approve) as session:
                init = await session.initialize()
                check(init.server_info.name == "agentflow", "initialize names the server")
                check(
                    init.protocol_version == "2025-11-25",
                    f"the protocol version is negotiated ({init.protocol_version})",
                )

                tools = (await session.list_tools()).tools
                names = sorted(t.name for t in tools)
                check(names == ["echo", "pay"], f"the tools are the flows ({names})")
                pay = next(t for t in tools if t.name == "pay")
                check(
                    pay.description == "Pays 5 EUR once a human approves.",
                    "a tool's description is its flow's",
                )
                check(pay.input_schema["required"] == ["message"], "the input is a message")

                first = await session.call_tool(
                    "echo", {"message": "hello"}, progress_callback=on_progress
                )
                check(not first.is_error, "a call runs a turn")
                check(
                    text_of(first) == "1 user messages; the last: hello",
                    f"the answer is the result ({text_of(first)!r})",
                )
                check(
                    any(m and "hello" in m for m in progress),
                    f"the agents' messages come as progress ({progress})",
                )
                second = await session.call_tool("echo", {"message": "again"})
                check(
                    text_of(second) == "2 user messages; the last: again",
                    f"a second call continues the session's thread ({text_of(second)!r})",
                )

                paid = await session.call_tool("pay", {"message": "pay 5 EUR"})
                check(len(forms) == 1, "the approval is asked by elicitation")
                check("`pay`" in forms[0].message, f"the form asks the question ({forms[0].message!r})")
                schema = forms[0].requested_schema
                check(
                    schema["properties"]["approve"]["type"] == "boolean"
                    and schema["required"] == ["approve"],
                    "the form takes approve: boolean",
                )
                check(not paid.is_error, "the approved turn ends")
                check(text_of(paid) == "Done.", f"the approved turn answers ({text_of(paid)!r})")

                try:
                    await session.call_tool("nope", {"message": "hi"})
                    check(False, "an unknown tool is refused")
                except Exception as e:  # the SDK raises the JSON-RPC error
                    check("no tool named 'nope'" in str(e), f"an unknown tool is refused ({e})")
    print("all checks passed")


asyncio.run(main())
