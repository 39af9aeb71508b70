"""Drive an MCP server with the official Python SDK's client (`mcp` 2.x) and print what it saw.

    python python_client.py --stdio PROGRAM [ARG...] < plan.json
    python python_client.py --http URL < plan.json

plan.json is `{"calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, ...]}`. The output, one
JSON object on stdout, is

    {"server": {"name": .., "version": ..},
     "tools": [<each tool of tools/list, as sent>],
     "results": [<each CallToolResult, as sent> | {"protocol_error": {"code": .., "message": ..}}]}

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
        results = []
        for call in plan.get("calls", []):
            try:
                result = await client.call_tool(call["name"], call.get("arguments") or {})
                results.append(dump(result))
            except MCPError as error:
                results.append({"protocol_error": {"code": error.error.code, "message": error.error.message}})
        out = {
            "server": {"name": info.name, "version": info.version} if info else None,
            "tools": [dump(tool) for tool in tools.tools],
            "results": results,
        }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
