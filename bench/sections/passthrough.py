"""1. Passthrough: the cost of one tool call through a proxy, against calling the server directly.

The same calls go to a bench hello-world MCPServer and to `mcp-server-time`:
directly, through FastMCP's `create_proxy`, and through `offprompt serve
--config` with `"off_prompt": "never"` (pure passthrough). The three peers are
called in turn, call after call, so load drift hits them alike; ratios are to
the direct p50 of the same run.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench import peers
from bench.context import Context
from bench.report import Row, SectionResult
from bench.stdio import StdioPeer
from bench.timing import ainterleaved

NAME = "passthrough"
TITLE = "1. Passthrough"
NEVER = "offprompt (off_prompt: never)"
AUTO = "offprompt (off_prompt: auto, the default)"
#: The client of every row: bench/stdio.py speaks the 2025-11-25 generation, so offprompt answers on its fast lane.
CLIENT = "2025-11-25 stdio client"

CALLS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("hello echo (tiny)", "hello", "echo", {"text": "hi"}),
    ("hello text (100 KB)", "hello", "text", {"n_bytes": 100_000}),
    ("mcp-server-time get_current_time", "time", "get_current_time", {"timezone": "UTC"}),
]


def _fastmcp_available() -> bool:
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        return False
    return True


async def _run(ctx: Context, res: SectionResult) -> None:
    scratch = ctx.workdir / "passthrough"
    scratch.mkdir(parents=True, exist_ok=True)
    downstreams = {"hello": peers.hello(), "time": peers.time_server()}
    routes: dict[str, dict[str, list[str]]] = {"direct": {n: p.command for n, p in downstreams.items()}}
    names: dict[str, Callable[[str, str], str]] = {"direct": lambda s, t: t}
    if _fastmcp_available():
        routes["fastmcp"] = {
            n: [sys.executable, "-m", "bench.servers.fastmcp_proxy", *p.command] for n, p in downstreams.items()
        }
        names["fastmcp"] = lambda s, t: t
    else:
        res.notes.append("FastMCP is not installed (pip install -e '.[bench]'): its column is left out")
    if peers.offprompt_supports_config():
        # Under `never` every result passes (pure passthrough); under the default `auto` the 100 KB text is
        # over the threshold and comes back as a reference: the row says which it measured.
        for mode, policy in ((NEVER, {"off_prompt": "never"}), (AUTO, {})):
            config = peers.write_config(
                scratch / f"offprompt-{policy.get('off_prompt', 'auto')}.json",
                {n: p.config(**policy) for n, p in downstreams.items()},
                {"memory_name": f"passthrough-{len(routes)}", "data_dir": str(scratch / "data")},
            )
            routes[mode] = {n: peers.offprompt_command("serve", "--config", str(config)) for n in downstreams}
            names[mode] = peers.public_name
    else:
        res.notes.append("this offprompt has no `serve --config` yet: its column is left out")

    env = {n: p.env for n, p in downstreams.items()}
    opened: dict[tuple[str, str], StdioPeer] = {}
    listed: dict[int, list[str]] = {}
    try:
        for route, by_server in routes.items():
            for server, argv in by_server.items():
                key = (route, server)
                # offprompt proxies both servers from one process
                if route.startswith("offprompt") and server != "hello":
                    opened[key] = opened[(route, "hello")]
                    continue
                peer = await StdioPeer.spawn(argv, env=env[server], stderr=scratch / f"{route}-{server}.log")
                await peer.initialize()
                listed[id(peer)] = [t["name"] for t in await peer.list_tools()]
                opened[key] = peer
        for route in routes:  # offprompt lists a server's tools once it is up: wait for every one timed here
            peer = opened[(route, "hello")]
            wanted = {names[route](server, tool) for _, server, tool, _ in CALLS}
            for _ in range(300):
                if route == "direct" or route == "fastmcp" or wanted <= set(listed[id(peer)]):
                    break
                await asyncio.sleep(0.1)
                listed[id(peer)] = [t["name"] for t in await peer.list_tools()]
        table: dict[str, Any] = {}
        for label, server, tool, arguments in CALLS:
            ctx.log(f"passthrough: {label}")

            def call(
                route: str, server: str = server, tool: str = tool, arguments: dict[str, Any] = arguments
            ) -> Callable[[], Awaitable[Any]]:
                peer = opened[(route, server)]
                name = names[route](server, tool)
                if name not in listed[id(peer)]:  # FastMCP may prefix: take the listed name that ends in it
                    name = next(n for n in listed[id(peer)] if n.endswith(tool))

                async def once() -> None:
                    result = await peer.call_tool(name, arguments)
                    if result.get("isError"):
                        raise RuntimeError(f"{route} {name}: {result}")

                return once

            stats = await ainterleaved({route: call(route) for route in routes}, repeat=ctx.pick(600, 60), warmup=20)
            direct = stats["direct"].p50
            for route, s in stats.items():
                ratio = "" if route == "direct" else f", {s.p50 / direct:.2f}x direct"
                res.rows.append(
                    Row(
                        f"{label}: {route}, {CLIENT}, p50", s.p50 * 1000, "ms", note=f"p95 {s.p95 * 1000:.2f} ms{ratio}"
                    )
                )
            table[label] = {route: s.to_json() for route, s in stats.items()}
            if NEVER in stats and label == CALLS[0][0]:
                _targets(res, stats)
            rates: dict[str, float] = {}
            for route in routes:
                peer = opened[(route, server)]
                name = names[route](server, tool)
                if name not in listed[id(peer)]:
                    name = next(n for n in listed[id(peer)] if n.endswith(tool))
                rates[route] = await _throughput(peer, name, arguments, calls=ctx.pick(800, 160))
                res.rows.append(Row(f"{label}: {route}, {CALLERS} concurrent callers", rates[route], "calls/s"))
            table[label]["calls_per_second"] = rates
        res.data["calls"] = table
        if NEVER in routes:
            await _modern_client(ctx, res, downstreams["hello"], routes[NEVER]["hello"])
    finally:
        for peer in {id(p): p for p in opened.values()}.values():
            await peer.close()


CALLERS = 8
MODERN = "2026-07-28 client (mcp.Client over stdio)"


async def _modern_client(ctx: Context, res: SectionResult, hello: Any, offprompt_argv: list[str]) -> None:
    """The tiny call from a 2026-07-28 client (the SDK's `mcp.Client`), which offprompt answers on its SDK path,
    not the fast lane: direct and through offprompt (never), in turn. Its client costs more than bench/stdio.py's
    raw one, so only the ratio compares with the 2025 rows."""
    import os
    from contextlib import AsyncExitStack

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    def params(argv: list[str], env: dict[str, str]) -> StdioServerParameters:
        return StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **env})

    async with AsyncExitStack() as stack:
        direct = await stack.enter_async_context(Client(stdio_client(params(hello.command, hello.env))))
        via = await stack.enter_async_context(Client(stdio_client(params(offprompt_argv, {}))))
        name = peers.public_name("hello", "echo")
        for _ in range(300):  # offprompt lists the tool once the server is up
            if name in {t.name for t in (await via.list_tools()).tools}:
                break
            await asyncio.sleep(0.1)

        async def call_direct() -> None:
            await direct.call_tool("echo", {"text": "hi"})

        async def call_via() -> None:
            await via.call_tool(name, {"text": "hi"})

        ctx.log(f"passthrough: hello echo (tiny), {MODERN}")
        stats = await ainterleaved({"direct": call_direct, NEVER: call_via}, repeat=ctx.pick(300, 30), warmup=10)
    for route, s in stats.items():
        ratio = "" if route == "direct" else f", {s.p50 / stats['direct'].p50:.2f}x direct"
        res.rows.append(
            Row(
                f"hello echo (tiny): {route}, {MODERN}, p50",
                s.p50 * 1000,
                "ms",
                note=f"p95 {s.p95 * 1000:.2f} ms{ratio}",
            )
        )
    res.data["modern_client"] = {route: s.to_json() for route, s in stats.items()}


def _targets(res: SectionResult, stats: dict[str, Any]) -> None:
    """Issue #5's two passthrough targets, on the tiny call."""
    ratio = stats[NEVER].p50 / stats["direct"].p50
    res.rows.append(
        Row("tiny call: offprompt (never) / direct, p50", ratio, "x", "<= 1.3", "met" if ratio <= 1.3 else "missed")
    )
    if "fastmcp" in stats:
        ratio = stats[NEVER].p50 / stats["fastmcp"].p50
        res.rows.append(
            Row(
                "tiny call: offprompt (never) / FastMCP proxy, p50",
                ratio,
                "x",
                "<= 0.5",
                "met" if ratio <= 0.5 else "missed",
            )
        )


async def _throughput(peer: StdioPeer, name: str, arguments: dict[str, Any], calls: int) -> float:
    """Calls per second with CALLERS callers each waiting for its answer before sending the next."""
    process = peer.process
    assert process.stdout is not None
    ids = itertools.count(1_000_000)
    waiting: dict[int, asyncio.Future[None]] = {}

    async def read() -> None:
        assert process.stdout is not None
        while True:
            message = json.loads(await process.stdout.readline())
            future = waiting.pop(message.get("id"), None)
            if future is not None:
                future.set_result(None)

    async def caller(count: int) -> None:
        for _ in range(count):
            request_id = next(ids)
            waiting[request_id] = asyncio.get_running_loop().create_future()
            await peer._send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            )
            await waiting[request_id]

    reader = asyncio.create_task(read())
    started = time.perf_counter()
    await asyncio.gather(*(caller(calls // CALLERS) for _ in range(CALLERS)))
    elapsed = time.perf_counter() - started
    reader.cancel()
    return (calls // CALLERS) * CALLERS / elapsed


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    asyncio.run(_run(ctx, res))
    return res
