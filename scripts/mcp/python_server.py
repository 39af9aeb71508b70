"""A small MCP server on the official Python SDK (`mcp` 2.x), the peer of signet-mcp's tests.

    python python_server.py                 # stdio
    python python_server.py --http PORT     # streamable HTTP at http://127.0.0.1:PORT/mcp
    python python_server.py --http PORT --stateless --json   # the SDK's stateless JSON mode

Its tools cover what a client must map and survive: nested pydantic models (`$defs`/`$ref`), enums,
optional arguments (`anyOf [T, null]`), `format`s, an image result, several content items, an
`isError` result, a slow call, a crash, a tool that adds a tool (and sends tools/list_changed), a
look at its own environment, and tools that turn to the client: one samples its model, one asks
its user (elicitation).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import enum
import os
import sys

from pydantic import AnyUrl, BaseModel, Field

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import SamplingMessage, TextContent

# A 1x1 red PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

server = MCPServer("signet-test-python", version="1.0.0")


class TravelMode(str, enum.Enum):
    TRAIN = "train"
    PLANE = "plane"
    BOAT = "boat"


class Place(BaseModel):
    city: str = Field(description="City name")
    country: str = Field(description="ISO country code, two letters", min_length=2, max_length=2)


class Trip(BaseModel):
    destination: Place
    mode: TravelMode
    depart: dt.date = Field(description="Departure day")
    nights: int | None = Field(default=None, ge=1, description="How many nights, if known")
    website: AnyUrl | None = None


@server.tool()
def plan_trip(trip: Trip, travellers: int = 1) -> str:
    """Plan a trip: check the itinerary and summarise it."""
    nights = f"{trip.nights} nights" if trip.nights is not None else "open-ended"
    return (
        f"{travellers} traveller(s) to {trip.destination.city}, {trip.destination.country} "
        f"by {trip.mode.value} on {trip.depart.isoformat()}, {nights}"
    )


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message (an `isError` result)."""
    raise ToolError(message)


@server.tool()
def pixel() -> Image:
    """Return a 1x1 PNG image."""
    return Image(data=PIXEL, format="png")


@server.tool()
def several() -> list[TextContent]:
    """Return two text items."""
    return [TextContent(type="text", text="first"), TextContent(type="text", text="second")]


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


@server.tool()
def crash(code: int = 3) -> str:
    """Exit the server process at once with the given code."""
    print(f"crashing on purpose with code {code}", file=sys.stderr, flush=True)
    os._exit(code)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def big(megabytes: int) -> str:
    """A text of this many megabytes (to test the client's message size limit)."""
    return "x" * (megabytes * 1_000_000)


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable in the server, or `<unset>`."""
    return os.environ.get(name, "<unset>")


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called `name` (it returns its own name) and tell the client the list changed."""

    def added() -> str:
        return name

    server.add_tool(added, name=name, description=f"A tool added at run time: {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Summarise a text in one line with the client's model (sampling)."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarise: {text}"))],
        max_tokens=64,
        system_prompt="You write one-line summaries.",
    )
    return f"{result.model}: {result.content.text}"


class Booking(BaseModel):
    seats: int = Field(ge=1, le=9, description="How many seats")
    window: bool = Field(default=False, description="A table by the window")


@server.tool()
async def book_table(restaurant: str, ctx: Context) -> str:
    """Book a table, asking the user how many seats (elicitation)."""
    answer = await ctx.elicit(f"How many seats at {restaurant}?", Booking)
    if answer.action == "accept":
        where = " by the window" if answer.data.window else ""
        return f"booked {answer.data.seats} seats at {restaurant}{where}"
    return f"no booking ({answer.action})"


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        flags = set(sys.argv[3:])
        if flags - {"--stateless", "--json"}:
            sys.exit(f"unknown options {sorted(flags - {'--stateless', '--json'})}; see --help")
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[2]),
            stateless_http="--stateless" in flags,
            json_response="--json" in flags,
        )
    else:
        server.run()
