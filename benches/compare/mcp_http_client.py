"""Time `tools/call`s of a trivial tool (`add`) over MCP streamable HTTP with the official Python
SDK's client (`mcp` 2.x), the Python side of `cargo bench --bench mcp_http`.

    python mcp_http_client.py URL [--sequential N] [--clients C] [--calls K] [--warmup W]

Sequential: one client, W untimed calls, then N calls one after another. Concurrent: C clients
(each its own session, all in this process's event loop) make K calls each, all at once. Every
result is checked (`add(i, 1) == i + 1`); a wrong one is an error. Prints one JSON object:

    {"sequential": {"calls": N, "mean_ms": .., "median_ms": .., "p95_ms": ..},
     "concurrent": {"clients": C, "calls": C*K, "seconds": .., "calls_per_s": ..}}
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import time

from mcp import Client


async def call_add(client: Client, i: int) -> None:
    result = await client.call_tool("add", {"a": i, "b": 1})
    text = result.content[0].text if result.content else None
    if result.is_error or text != str(i + 1):
        raise RuntimeError(f"add({i}, 1) answered {text!r}")


async def sequential(url: str, n: int, warmup: int) -> dict:
    async with Client(url) as client:
        for i in range(warmup):
            await call_add(client, i)
        times = []
        for i in range(n):
            start = time.perf_counter()
            await call_add(client, i)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {
        "calls": n,
        "mean_ms": statistics.fmean(times),
        "median_ms": statistics.median(times),
        "p95_ms": times[int(len(times) * 0.95) - 1],
    }


async def concurrent(url: str, clients: int, calls: int, warmup: int) -> dict:
    async with contextlib.AsyncExitStack() as stack:
        opened = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
        for client in opened:
            for i in range(warmup):
                await call_add(client, i)

        async def run(client: Client) -> None:
            for i in range(calls):
                await call_add(client, i)

        start = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for client in opened:
                group.create_task(run(client))
        seconds = time.perf_counter() - start
    total = clients * calls
    return {"clients": clients, "calls": total, "seconds": seconds, "calls_per_s": total / seconds}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--sequential", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    out = {
        "sequential": await sequential(args.url, args.sequential, args.warmup),
        "concurrent": await concurrent(args.url, args.clients, args.calls, 2),
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
