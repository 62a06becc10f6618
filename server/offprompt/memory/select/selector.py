"""Runs jq expressions over stored JSON in worker processes, bounded in time, output and memory.

A `Selector` keeps a few warm workers (each holds the inputs it has parsed
from text before, by key) and the last results, so reading a long result page
by page runs the expression once. A worker that runs past the time limit is
killed and replaced; the calling thread gets a `LimitExceededError`, every
other call goes on.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

from offprompt.errors import InvalidArgumentError, LimitExceededError

logger = logging.getLogger(__name__)

_WORKER = Path(__file__).with_name("_worker.py")


@dataclass(frozen=True, slots=True)
class SelectLimits:
    """How far one expression may go before it is stopped."""

    seconds: float = 30.0
    output_bytes: int = 32 * 1024 * 1024
    memory_bytes: int = 2 * 1024**3
    workers: int = 2
    #: Characters of results kept for paging, across expressions.
    cached_chars: int = 64 * 1024 * 1024


#: A Source kind: a text read as its lines when it is not JSON (the worker, which imports nothing of offprompt,
#: spells it as `_worker.LINES`).
LINES: Final = "lines"


@dataclass(frozen=True, slots=True)
class Source:
    """One stored JSON input: its cache key, its kind, what to call it in a message, and how to read it."""

    key: str
    kind: str
    label: str
    read: Callable[[], bytes]
    #: Said after "is not JSON": where the namespace's JSON is, if anywhere.
    hint: str = ""


@dataclass(frozen=True, slots=True)
class Selection:
    """An expression's whole result: each output as compact JSON, one per line."""

    text: str
    outputs: int


class _Worker:
    def __init__(self, limits: SelectLimits) -> None:
        to_worker_r, to_worker_w = os.pipe()
        from_worker_r, from_worker_w = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(_WORKER), str(to_worker_r), str(from_worker_w), str(limits.memory_bytes)],
            pass_fds=(to_worker_r, from_worker_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # jq's `debug` and `stderr` must not reach the server's log or stdio
            env={"PATH": os.environ.get("PATH", "")},
        )
        os.close(to_worker_r)
        os.close(from_worker_w)
        self.send = Connection(to_worker_w, readable=False)
        self.recv = Connection(from_worker_r, writable=False)
        self.keys: set[str] = set()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.send.close()
        self.recv.close()

    def died(self) -> str:
        """Why the worker is gone: a signal (the memory limit makes libjq abort) or an exit code."""
        code = self.process.wait()
        return f"signal {-code}" if code < 0 else f"exit code {code}"


class Selector:
    """Runs expressions in killable workers and keeps recent results for paging."""

    def __init__(self, limits: SelectLimits | None = None) -> None:
        self.limits = limits or SelectLimits()
        self._idle: list[_Worker] = []
        self._running = 0
        self._ready = threading.Condition()
        self._results: OrderedDict[tuple[str, tuple[str, ...]], Selection] = OrderedDict()
        self._results_chars = 0
        self._closed = False

    def select(self, expression: str, sources: Sequence[Source], variables: Sequence[str] = ()) -> Selection:
        """The result of `expression` over `sources[0]`, with `sources[1:]` bound to `variables`."""
        key = (expression, tuple(s.key for s in sources))
        with self._ready:
            cached = self._results.get(key)
            if cached is not None:
                self._results.move_to_end(key)
                return cached
        selection = self._run(expression, sources, list(variables))
        with self._ready:
            self._results[key] = selection
            self._results_chars += len(selection.text)
            while self._results_chars > self.limits.cached_chars and len(self._results) > 1:
                _, dropped = self._results.popitem(last=False)
                self._results_chars -= len(dropped.text)
        return selection

    def close(self) -> None:
        with self._ready:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    # -- workers -------------------------------------------------------------------

    def _checkout(self, first_key: str) -> _Worker:
        with self._ready:
            while True:
                if self._closed:
                    raise InvalidArgumentError("this memory is closing: memory_select is no longer available")
                if self._idle:
                    warm = [w for w in self._idle if first_key in w.keys]
                    worker = warm[0] if warm else self._idle[-1]
                    self._idle.remove(worker)
                    self._running += 1
                    return worker
                if self._running < self.limits.workers:
                    self._running += 1
                    break
                self._ready.wait()
        try:
            return _Worker(self.limits)
        except BaseException:
            self._release(None)
            raise

    def _release(self, worker: _Worker | None) -> None:
        with self._ready:
            self._running -= 1
            if worker is not None and not self._closed:
                self._idle.append(worker)
                worker = None
            self._ready.notify()
        if worker is not None:
            worker.kill()

    def _run(self, expression: str, sources: Sequence[Source], variables: list[str]) -> Selection:
        keys = [s.key for s in sources]
        request = ("run", expression, keys, [s.kind for s in sources], variables, self.limits.output_bytes)
        while (worker := self._checkout(keys[0])).process.poll() is not None:
            worker.kill()  # it died while idle (killed from outside): take another or start a fresh one
            self._release(None)
        deadline = time.monotonic() + self.limits.seconds
        try:
            worker.send.send(request)
            answer = self._answer(worker, deadline)
            if answer[0] == "need":
                wanted = set(answer[1])
                worker.send.send(("data", {s.key: s.read() for s in sources if s.key in wanted}))
                worker.keys |= wanted
                answer = self._answer(worker, deadline)
        except BaseException:
            worker.kill()
            self._release(None)
            raise
        self._release(worker)
        if answer[0] == "ok":
            return Selection(text=answer[1].decode("utf-8"), outputs=answer[2])
        raise self._error(answer[1], answer[2], sources)

    def _answer(self, worker: _Worker, deadline: float) -> tuple[Any, ...]:
        if not worker.recv.poll(max(deadline - time.monotonic(), 0)):
            raise LimitExceededError(
                f"the expression ran past the time limit of {self.limits.seconds:g} s and was stopped: it may loop "
                "(a recursion with no end, repeat) or do too much; narrow it (select first, then map)."
            )
        try:
            answer: tuple[Any, ...] = worker.recv.recv()
        except EOFError:
            reason = worker.died()
            raise LimitExceededError(
                f"the expression was stopped by the memory limit of {self.limits.memory_bytes / 1024**3:g} GiB "
                f"(jq's worker ended with {reason}): it builds too large a value (e.g. [range(1e9)]); narrow it."
            ) from None
        return answer

    def _error(self, reason: object, message: object, sources: Sequence[Source]) -> Exception:
        if reason == "output":
            return LimitExceededError(
                f"the expression's output passed the output limit of {self.limits.output_bytes:,} bytes of JSON and "
                "was stopped (it may never end, like repeat(1)): select fewer records or fields, or count them "
                "with length."
            )
        if reason == "not_json":
            key, _, detail = str(message).partition("\n")
            source = next(s for s in sources if s.key == key)
            return InvalidArgumentError(
                f"{source.label} is not JSON, so jq cannot read it ({detail}).{source.hint} "
                "Read it with memory_load or memory_grep."
            )
        if reason == "syntax":
            return InvalidArgumentError(f"the jq expression does not compile: {message}")
        return InvalidArgumentError(f"the jq expression failed: {message}")
