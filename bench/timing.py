"""Timing helpers: warm-up, repeats, p50/p95, and interleaving for same-run ratios."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Stats:
    """Summary of repeated timings, in seconds."""

    n: int
    p50: float
    p95: float
    mean: float
    min: float
    max: float

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v * 1000, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()} | {
            "unit": "ms"
        }


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100): an observed value, never an interpolation."""
    ordered = sorted(samples)
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def summarize(samples: list[float]) -> Stats:
    if not samples:
        raise ValueError("no samples")
    return Stats(
        n=len(samples),
        p50=percentile(samples, 50),
        p95=percentile(samples, 95),
        mean=sum(samples) / len(samples),
        min=min(samples),
        max=max(samples),
    )


def once(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


async def aonce(fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = await fn()
    return time.perf_counter() - start, value


def measure(fn: Callable[[], Any], *, repeat: int, warmup: int = 1) -> Stats:
    for _ in range(warmup):
        fn()
    return summarize([once(fn)[0] for _ in range(repeat)])


async def ameasure(fn: Callable[[], Awaitable[Any]], *, repeat: int, warmup: int = 1) -> Stats:
    for _ in range(warmup):
        await fn()
    return summarize([(await aonce(fn))[0] for _ in range(repeat)])


def interleaved(fns: Mapping[str, Callable[[], Any]], *, repeat: int, warmup: int = 1) -> dict[str, Stats]:
    """Time each function `repeat` times in round-robin order, so drift in machine load hits all alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            samples[name].append(once(fn)[0])
    return {name: summarize(s) for name, s in samples.items()}


async def ainterleaved(
    fns: Mapping[str, Callable[[], Awaitable[Any]]], *, repeat: int, warmup: int = 1
) -> dict[str, Stats]:
    for fn in fns.values():
        for _ in range(warmup):
            await fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            samples[name].append((await aonce(fn))[0])
    return {name: summarize(s) for name, s in samples.items()}
