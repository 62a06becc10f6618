"""Retry a call with exponential backoff and jitter (a small module written for the reference examples)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class GaveUp(Exception):
    """Every attempt failed; the last failure is the cause."""


@dataclass(frozen=True)
class Backoff:
    """How long to wait before each retry: `base` doubled per attempt, at most `cap`, with full jitter."""

    base: float = 0.1
    cap: float = 10.0
    attempts: int = 5

    def delays(self) -> list[float]:
        """The waits between attempts, before jitter."""
        return [min(self.cap, self.base * 2**n) for n in range(self.attempts - 1)]

    def jittered(self, rng: random.Random) -> list[float]:
        """The waits with full jitter: each uniform between zero and its delay."""
        return [rng.uniform(0, d) for d in self.delays()]


def retry(call: Callable[[], T], backoff: Backoff, retry_on: tuple[type[Exception], ...] = (OSError,)) -> T:
    """`call()`, tried up to `backoff.attempts` times while it raises one of `retry_on`."""
    rng = random.Random()
    last: Exception | None = None
    for wait in [0.0, *backoff.jittered(rng)]:
        time.sleep(wait)
        try:
            return call()
        except retry_on as exc:
            last = exc
    raise GaveUp(f"gave up after {backoff.attempts} attempts") from last


def _sleepless(backoff: Backoff) -> Backoff:
    """A backoff that never waits, for tests."""
    return Backoff(base=0.0, cap=0.0, attempts=backoff.attempts)
