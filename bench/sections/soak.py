"""9. An HTTP server that runs for weeks: resident memory of one `offprompt serve --transport http` over
tens of thousands of requests, from clients of both protocol generations.

The server is the real command on loopback, with one memory holding a stored text. Clients of one
generation at a time call memory_list, memory_load, memory_grep and memory_query (lexical: the model is
not what this measures), and reconnect every few calls, as clients come and go: 2025-11-25 clients open
a session (`initialize`, `Mcp-Session-Id`) and close it; 2026-07-28 clients send self-contained requests.
The server's RSS is read every 1,000 requests; the slope (least squares, after the first 1,000, which
load what every call needs once) says how much each 1,000 requests keep for good.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import psutil
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench import peers
from bench.context import Context
from bench.corpus import mixed_text
from bench.report import SectionResult, check
from offprompt.artifacts import TextArtifact

NAME = "soak"
TITLE = "9. HTTP server soak"
MIB = 1024 * 1024
SAMPLE_EVERY = 1_000
#: Calls a client makes before it disconnects and a new one connects.
CALLS_PER_CONNECTION = 25
CLIENTS = 4
#: |slope| at most this, in MiB per 1,000 requests: what a server that runs for weeks can afford.
TARGET_SLOPE = 0.5


@dataclass
class Phase:
    generation: str
    requests: int
    samples: list[tuple[int, float]] = field(default_factory=list)  # (requests done, RSS MiB)
    errors: int = 0
    seconds: float = 0.0


def slope(samples: list[tuple[int, float]]) -> float:
    """Least-squares MiB per 1,000 requests."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    var = sum((x - mean_x) ** 2 for x, _ in samples)
    cov = sum((x - mean_x) * (y - mean_y) for x, y in samples)
    return cov / var * 1000 if var else 0.0


@contextmanager
def _serve(data_dir: Path, memory_name: str) -> Iterator[tuple[str, int]]:
    command = peers.offprompt_command(
        "serve", "--transport", "http", "--host", "127.0.0.1", "--port", "0", "--data-dir", str(data_dir),
        "--memory-name", memory_name,
    )  # fmt: skip
    with peers.serving_http(command) as served:
        yield served


def _calls(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("memory_list", {"limit": 5}),
        ("memory_load", {"artifact_namespace": namespace, "offset": 0, "max_tokens": 300}),
        ("memory_grep", {"pattern": r"\bthe\b", "artifact_namespace": namespace, "max_matches": 5}),
        ("memory_query", {"query": "how the parts fit together", "mode": "lexical", "top_k": 3}),
    ]


Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def _client_2025(url: str, work: Callable[[Call], Awaitable[None]]) -> None:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await work(session.call_tool)


async def _client_2026(url: str, work: Callable[[Call], Awaitable[None]]) -> None:
    async with Client(url) as client:
        await work(client.call_tool)


async def _phase(url: str, pid: int, phase: Phase, namespace: str, ctx: Context) -> None:
    calls = _calls(namespace)
    done = 0
    process = psutil.Process(pid)
    connect = _client_2025 if phase.generation == "2025-11-25" else _client_2026

    def rss() -> float:
        return float(process.memory_info().rss) / MIB

    phase.samples.append((0, rss()))

    async def one_client(k: int) -> None:
        nonlocal done
        while done < phase.requests:

            async def work(call: Call) -> None:
                nonlocal done
                for n in range(CALLS_PER_CONNECTION):
                    if done >= phase.requests:
                        return
                    name, arguments = calls[(k + n) % len(calls)]
                    try:
                        result = await call(name, arguments)
                        if getattr(result, "is_error", False):
                            phase.errors += 1
                    except Exception:
                        phase.errors += 1
                    done += 1
                    if done % SAMPLE_EVERY == 0:
                        phase.samples.append((done, rss()))
                        if done % (5 * SAMPLE_EVERY) == 0:
                            ctx.log(f"soak {phase.generation}: {done:,} requests, RSS {phase.samples[-1][1]:.0f} MiB")

            try:
                await connect(url, work)
            except Exception:
                phase.errors += 1

    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.gather(*(one_client(k) for k in range(CLIENTS)))
    phase.seconds = loop.time() - started


def run(ctx: Context) -> SectionResult:
    res = SectionResult(NAME, TITLE)
    scratch = ctx.workdir / "soak"
    per_generation = ctx.pick(10_000, 2_000)
    with ctx.memory("soak-seed") as memory:  # a stored text for the calls to read, then the server opens it
        namespace = memory.store([TextArtifact(value=mixed_text(20_000))], tool="bench.soak").namespace
        memory.text.wait_indexed()  # type: ignore[attr-defined]  # else the server loads the model to finish it
        data_dir = memory.directory.parent if memory.directory is not None else scratch
    phases = [Phase("2025-11-25", per_generation), Phase("2026-07-28", per_generation)]
    with _serve(data_dir, "soak-seed") as (url, pid):
        for phase in phases:
            ctx.log(f"soak: {phase.requests:,} requests from {CLIENTS} {phase.generation} clients")
            asyncio.run(_phase(url, pid, phase, namespace, ctx))
    for phase in phases:
        steady = phase.samples[1:]  # the first 1,000 requests load what every call needs once
        per_1k = slope(steady)
        first, last = phase.samples[0][1], phase.samples[-1][1]
        res.rows.append(
            check(
                f"RSS slope, {phase.generation} clients ({phase.requests:,} requests, "
                f"a new connection every {CALLS_PER_CONNECTION} calls)",
                per_1k,
                "MiB / 1,000 requests",
                at_most=TARGET_SLOPE,
                target=f"≈ 0 (≤ {TARGET_SLOPE})",
                note=f"RSS {first:.0f} → {last:.0f} MiB, {phase.requests / phase.seconds:.0f} requests/s, "
                f"{phase.errors} errors",
            )
        )
        res.data[phase.generation] = {
            "requests": phase.requests,
            "clients": CLIENTS,
            "calls_per_connection": CALLS_PER_CONNECTION,
            "rss_slope_mib_per_1000": round(per_1k, 4),
            "rss_mib": [[n, round(m, 1)] for n, m in phase.samples],
            "errors": phase.errors,
            "seconds": round(phase.seconds, 1),
        }
    total = sum(p.requests for p in phases)
    everything = [(n + sum(p.requests for p in phases[:i]), m) for i, p in enumerate(phases) for n, m in p.samples[1:]]
    res.rows.append(
        check(
            f"RSS slope over both ({total:,} requests)",
            slope(everything),
            "MiB / 1,000 requests",
            at_most=TARGET_SLOPE,
            target=f"≈ 0 (≤ {TARGET_SLOPE})",
        )
    )
    res.data["rss_slope_mib_per_1000_overall"] = round(slope(everything), 4)
    res.notes.append(
        "one `offprompt serve --transport http` on loopback, memory tools only (memory_query in lexical mode: the "
        "model's ~325 MB is not what this measures); RSS of the server process read with psutil every 1,000 requests"
    )
    return res
