"""Drive an MCP server with the official Python SDK's client (`mcp` 2.x) and print what it saw.

    python python_client.py --stdio PROGRAM [ARG...] < plan.json
    python python_client.py --http URL < plan.json

plan.json is `{"calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, ...]}`. A call may ask
for the server's progress notifications (`"progress": true`), and cancel itself once it has received
some (`"cancel_after_progress": N`, which implies progress), and keep the session open for a while
after the call (`"wait_after": seconds`). The output, one JSON object on stdout,
is

    {"server": {"name": .., "version": ..},
     "tools": [<each tool of tools/list, as sent>],
     "results": [<each CallToolResult, as sent> | {"protocol_error": {"code": .., "message": ..}}
                 | {"cancelled": true}]}

where a call that asked for progress also has `"progress": [[progress, message], ...]`.

signet-mcp's tests use it to check that a Signet MCP server's schemas and results reach another
implementation intact. The stdio server gets this process's environment (the SDK's default).
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import Client, MCPError, StdioServerParameters


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--stdio":
        target: object = StdioServerParameters(command=argv[1], args=argv[2:])
    elif len(argv) == 2 and argv[0] == "--http":
        target = argv[1]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    plan = json.load(sys.stdin)

    async with Client(target) as client:
        info = client.server_info
        tools = await client.list_tools()
        results = [await run_call(client, call) for call in plan.get("calls", [])]
        out = {
            "server": {"name": info.name, "version": info.version} if info else None,
            "tools": [dump(tool) for tool in tools.tools],
            "results": results,
        }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


async def run_call(client: Client, call: dict) -> dict:
    """One call of the plan, with its progress notifications when asked; cancelled when asked."""
    cancel_after = call.get("cancel_after_progress")
    want_progress = bool(call.get("progress")) or cancel_after is not None
    progress: list = []
    enough = asyncio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append([value, message])
        if cancel_after is not None and len(progress) >= cancel_after:
            enough.set()

    async def invoke() -> dict:
        try:
            result = await client.call_tool(
                call["name"],
                call.get("arguments") or {},
                progress_callback=on_progress if want_progress else None,
            )
            return dump(result)
        except MCPError as error:
            return {"protocol_error": {"code": error.error.code, "message": error.error.message}}

    task = asyncio.create_task(invoke())
    if cancel_after is not None:
        # Cancelling the task makes the SDK send `notifications/cancelled` for the request.
        waiter = asyncio.create_task(enough.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not task.done():
            task.cancel()
    try:
        out = await task
    except asyncio.CancelledError:
        out = {"cancelled": True}
    if want_progress:
        out["progress"] = progress
    await asyncio.sleep(call.get("wait_after", 0))
    return out


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
