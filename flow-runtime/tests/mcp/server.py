"""A small MCP server on the Python SDK's MCPServer (FastMCP before mcp 2.0), for the cases the
reference "everything" server has no tool for. Run: python server.py [stdio|http PORT]."""

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

server = MCPServer("agentflow-test")


@server.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return f"{a + b}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def exit_now() -> str:
    """Ends the server's process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.sleep(3600)
    return "unreachable"


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


class Contact(BaseModel):
    name: str = Field(description="Your name")
    city: str = Field(default="Lisbon", description="Your city")


@server.tool()
async def ask_contact(ctx: Context) -> str:
    """Asks the user for a name and a city (elicitation) and says what came back."""
    result = await ctx.elicit("Who is asking?", Contact)
    if result.action == "accept":
        return f"accept: {result.data.name} from {result.data.city}"
    return result.action


@server.tool()
def ephemeral() -> str:
    """A tool that retire_ephemeral removes."""
    return "still here"


@server.tool()
async def retire_ephemeral(ctx: Context) -> str:
    """Removes the tool `ephemeral` and tells the client its tool list changed."""
    server.remove_tool("ephemeral")
    try:
        await ctx.session.send_tool_list_changed()
    except Exception as e:  # the notification is a courtesy; the removal is what matters
        print(f"could not notify: {e}", file=sys.stderr)
    return "removed"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
