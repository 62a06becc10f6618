"""13. A client's opening: spawn → `initialize` answered and spawn → `server/discover` answered, and a stop while
offprompt is still loading, with nothing beside and with two CPU-bound loops beside (both cores busy, as a
developer's machine is during a build).

offprompt runs as a client starts it, in front of the hello-world server (`servers/hello.py`), cold (a cache
directory never used: a first-ever start) and warm (the same start again, its lists kept); the bare hello-world
`MCPServer` is spawned the same way, and the runs are interleaved. The target is 0.15x the bare SDK server in each
case: offprompt's opening is answered from data while the SDK is still being imported (`serve/prelude.py`). The
stop is timed from stdin's EOF, SIGINT or SIGTERM, sent as soon as `initialize` is answered (offprompt still
loading), to the process's exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import peers
from bench.context import Context
from bench.report import Row, SectionResult, check
from bench.timing import summarize

NAME = "opening"
TITLE = "13. Opening and stop while loading"
TARGET_RATIO = 0.15
STOP_TARGET_S = 0.5
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
OPENINGS: dict[str, dict[str, Any]] = {
    "initialize": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
    "server/discover": {"_meta": {VERSION_KEY: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}},
}
STOPS = ("stdin EOF", "SIGINT", "SIGTERM")


async def _spawn_to_answer(argv: list[str], env: dict[str, str], method: str, stop: str | None = None) -> float:
    """Seconds from spawn to the answer of `method`; with `stop`, seconds from that stop (sent at the answer) to
    the process's exit instead."""
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert process.stdin is not None
    assert process.stdout is not None
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": OPENINGS[method]}
    process.stdin.write(json.dumps(request).encode() + b"\n")
    await process.stdin.drain()
    try:
        async with asyncio.timeout(120):
            while json.loads(await process.stdout.readline()).get("id") != 1:
                pass
        answered = time.perf_counter()
        if stop is None:
            return answered - started
        if stop == "stdin EOF":
            process.stdin.close()
        else:
            process.send_signal(signal.Signals[stop])
        async with asyncio.timeout(30):
            await process.wait()
        return time.perf_counter() - answered
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


@contextlib.contextmanager
def _busy_loops(count: int) -> Iterator[None]:
    """`count` CPU-bound processes beside the measurement."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


async def _openings(ctx: Context, scratch: Path, busy: int, res: SectionResult) -> None:
    hello = peers.hello()
    config = peers.write_config(
        scratch / f"offprompt-{busy}.json",
        {"hello": hello.config()},
        {"memory_name": f"opening-{busy}", "data_dir": str(scratch / "data")},
    )
    offprompt = peers.offprompt_command("serve", "--config", str(config))
    base = {**os.environ, **hello.env}
    repeat = ctx.pick(9, 3)
    runs: dict[tuple[str, str], list[float]] = {}
    with _busy_loops(busy):
        for round_ in range(1 + repeat):  # the first round warms the OS's file cache and is dropped
            cold = scratch / f"cold-{busy}-{round_}"
            for method in OPENINGS:
                for who, argv, env in (
                    ("bare", hello.command, base),
                    ("cold", offprompt, {**base, "OFFPROMPT_CACHE_DIR": str(cold / method)}),
                    ("warm", offprompt, {**base, "OFFPROMPT_CACHE_DIR": str(scratch / f"warm-{busy}")}),
                ):
                    runs.setdefault((who, method), []).append(await _spawn_to_answer(argv, env, method))
            shutil.rmtree(cold, ignore_errors=True)
        stops: dict[str, list[float]] = {how: [] for how in STOPS}
        for _ in range(ctx.pick(5, 2)):
            for how in STOPS:
                cold = {**base, "OFFPROMPT_CACHE_DIR": str(scratch / f"stop-{busy}-{time.monotonic_ns()}")}
                stops[how].append(await _spawn_to_answer(offprompt, cold, "initialize", stop=how))
    beside = f"{busy} busy loops beside" if busy else "no loops beside"
    stats = {key: summarize(values[1:]) for key, values in runs.items()}
    for method in OPENINGS:
        bare = stats[("bare", method)]
        res.rows.append(Row(f"bare SDK server: spawn → {method} answered, p50 ({beside})", bare.p50 * 1000, "ms"))
        for who in ("cold", "warm"):
            mine = stats[(who, method)]
            res.rows.append(
                check(
                    f"offprompt {who} / bare SDK server: spawn → {method} answered, p50 ({beside})",
                    mine.p50 / bare.p50,
                    "x",
                    at_most=TARGET_RATIO,
                    target=f"≤ {TARGET_RATIO}",
                    note=f"{mine.p50 * 1000:.0f} ms (p95 {mine.p95 * 1000:.0f}) against {bare.p50 * 1000:.0f} ms",
                )
            )
    for how, values in stops.items():
        summary = summarize(values)
        res.rows.append(
            check(
                f"offprompt: {how} while loading → exit, max ({beside})",
                summary.max,
                "s",
                at_most=STOP_TARGET_S,
                target=f"≤ {STOP_TARGET_S}",
                note=f"p50 {summary.p50:.3f} s",
            )
        )
    res.data[f"busy_{busy}"] = {
        "spawn_to_answer": {f"{who} {method}": s.to_json() for (who, method), s in stats.items()},
        "stop_while_loading": {how: summarize(v).to_json() for how, v in stops.items()},
    }


async def _run(ctx: Context, res: SectionResult) -> None:
    scratch = ctx.workdir / "opening"
    scratch.mkdir(parents=True, exist_ok=True)
    for busy in (0, 2):
        ctx.log(f"opening: spawn → initialize / server/discover, {busy} busy loops beside")
        await _openings(ctx, scratch, busy, res)


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    asyncio.run(_run(ctx, res))
    return res
