"""Regular-expression search in worker processes that are killed at a time limit.

Python's `re` backtracks (`(a+)+$` on 34 `a`s and a `b` runs for hours) and holds the GIL while it does, so a
search in a thread of the server freezes every other call and even signal handling. Each search runs in a
worker process (`_grep_worker.py`, reused between calls) that streams the files line by line; at the time
limit the worker is killed and the call fails with `SearchTimeLimitError`. google-re2 (linear time) was
measured (`nice -n 10 python -m bench.grep_limits`, 10 MB of log lines, three runs): matching line by line it
takes 3.7-8.3x the worker's time, one multiline search over the whole text 0.2-0.6x; it lacks backreferences and
lookarounds, which `memory_grep` promises, so it is not used.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from offprompt.errors import InvalidArgumentError, LimitExceededError, SearchTimeLimitError

#: How long one memory_grep may run, waiting for a free worker included.
GREP_SECONDS = 30.0
#: The address space a worker may use: a line is held whole, so this bounds the longest line searched (about a
#: quarter of it, as bytes, decoded text and the split lines).
GREP_MEMORY_BYTES = 1024**3
#: Searches that run at once; more wait for a free worker.
WORKERS: Final = 2
_SCRIPT: Final = Path(__file__).with_name("_grep_worker.py")


@dataclass(frozen=True, slots=True)
class RawMatch:
    """A matching line as the worker reports it: `at` is the byte offset of the match in the file."""

    namespace: str
    item: int
    line: int
    at: int
    text: str


class _Worker:
    def __init__(self) -> None:
        # -I: stdlib only, no user site or PYTHONPATH; close_fds (the default) keeps the memory's lock out of it.
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def ask(self, job: dict[str, Any], deadline: float) -> dict[str, Any]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(json.dumps(job).encode() + b"\n")
        stdin.flush()
        answer: dict[str, Any] = json.loads(_read_line(stdout, deadline))
        return answer

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _read_line(stdout: IO[bytes], deadline: float) -> bytes:
    """One answer line, or TimeoutError at `deadline` (a reader thread: pipes have no timeout on every OS)."""
    box: queue.Queue[bytes] = queue.Queue(maxsize=1)
    threading.Thread(target=lambda: box.put(stdout.readline()), name="offprompt-grep-answer", daemon=True).start()
    try:
        line = box.get(timeout=max(deadline - time.monotonic(), 0.0))
    except queue.Empty:
        raise TimeoutError from None  # the caller kills the worker, which ends the reader thread
    if not line:
        raise EOFError("the grep worker exited")
    return line


class GrepWorkers:
    """A few reusable worker processes; a search that runs past its time limit has its worker killed."""

    def __init__(self, size: int = WORKERS) -> None:
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False

    def grep(
        self, pattern: str, files: Sequence[tuple[Path, str, int]], max_matches: int, excerpt_chars: int
    ) -> tuple[list[RawMatch], bool]:
        seconds, memory_bytes = GREP_SECONDS, GREP_MEMORY_BYTES
        deadline = time.monotonic() + seconds
        job = {
            "pattern": pattern,
            "files": [[str(path), namespace, item] for path, namespace, item in files],
            "max_matches": max_matches,
            "excerpt_chars": excerpt_chars,
            "seconds": seconds,
            "memory_bytes": memory_bytes,
        }
        if not self._slots.acquire(timeout=seconds):
            raise _too_slow(seconds)
        try:
            worker = self._take()
            try:
                answer = worker.ask(job, deadline)
            except TimeoutError:
                self._drop(worker)
                raise _too_slow(seconds) from None
            except BaseException:
                self._drop(worker)
                raise
            self._give_back(worker)
        finally:
            self._slots.release()
        if "limit" in answer:
            raise _too_big(memory_bytes)
        if "error" in answer:
            raise InvalidArgumentError(f"invalid regular expression {pattern!r}: {answer['error']}")
        matches = [RawMatch(ns, item, line, at, text) for ns, item, line, at, text in answer["matches"]]
        return matches, bool(answer["truncated"])

    def close(self) -> None:
        """Kill every worker, busy ones included (their searches fail)."""
        with self._lock:
            self._closed = True
            workers = [*self._idle, *self._busy]
            self._idle.clear()
        for worker in workers:
            worker.kill()

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise EOFError("the memory is closing")
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    break
                worker.kill()
            else:
                worker = _Worker()
            self._busy.add(worker)
            return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._busy.discard(worker)
            if self._closed:
                worker.kill()
            else:
                self._idle.append(worker)

    def _drop(self, worker: _Worker) -> None:
        with self._lock:
            self._busy.discard(worker)
        worker.kill()


def _too_slow(seconds: float) -> SearchTimeLimitError:
    return SearchTimeLimitError(
        f"memory_grep stopped at its time limit of {seconds:.0f} s: the pattern backtracks too much (nested "
        "repeats like (a+)+ or (.*)*) or the text searched is very large. Simplify the pattern (no nested "
        "quantifiers, anchor it, use literal words), or search one output with artifact_namespace."
    )


def _too_big(memory_bytes: int) -> LimitExceededError:
    return LimitExceededError(
        f"memory_grep stopped at its memory limit of {memory_bytes / 1024**2:,g} MiB: a line of the text searched "
        "is too long to hold (a text with few or no newlines, such as minified JSON). Query JSON with "
        "memory_select, read the text in windows with memory_load offset=..., or search other outputs with "
        "artifact_namespace."
    )
