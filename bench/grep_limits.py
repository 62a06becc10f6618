"""memory_grep in a worker process against the former in-thread search and google-re2: time and server memory.

    nice -n 10 python -m bench.grep_limits

Prints a table and writes bench/results/grep-limits.json; both 10 MB patterns match no line, so each search reads
the whole text. "in thread" is the former search (the text read whole, split, Python `re` in the server's own
thread); "worker" is `ChromaTextStorage.grep` now (a worker process streaming the file). With `google-re2`
installed (the `bench` extra), two more columns: "re2 lines" runs re2 line by line as the worker runs `re`, "re2
text" one multiline search over the whole text (both in this thread: re2 is linear-time, so it needs no worker
to be stoppable, but it has no backreferences or lookarounds).
"""

from __future__ import annotations

import json
import re
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

try:
    import re2
except ImportError:  # optional: the re2 columns are left empty
    re2 = None

from bench.report import load_average, stamp
from offprompt.artifacts import TextArtifact
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

LINE = "2026-11-30T00:00:00 INFO worker-3 handled request 12345 in 3 ms for user alice\n"


def line_by_line(path: Path, regex: Any) -> int:
    """The former search's loop, as it ran in the server, with a compiled `re` or `re2` pattern."""
    found, byte_pos = 0, 0
    for line in path.read_bytes().decode("utf-8").split("\n"):
        if regex.search(line):
            found += 1
        byte_pos += 1 + (len(line) if line.isascii() else len(line.encode("utf-8")))
    return found


def in_thread(path: Path, pattern: str) -> int:
    """The former search, in the server's thread."""
    return line_by_line(path, re.compile(pattern))


def re2_lines(path: Path, pattern: str) -> int:
    """The former loop with re2 for `re`: what matching line by line costs in re2."""
    return line_by_line(path, re2.compile(pattern))


def re2_text(path: Path, pattern: str) -> int:
    """One multiline re2 search over the whole text: the matching lines found, without splitting it."""
    regex = re2.compile(f"(?m)^.*(?:{pattern}).*$")
    return sum(1 for _ in regex.finditer(path.read_bytes().decode("utf-8")))


def best(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def peak_rss_growth(fn: object, threads: int) -> float:
    """MiB the process's peak RSS grew by while `threads` calls of fn ran at once."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = [threading.Thread(target=fn) for _ in range(threads)]  # type: ignore[arg-type]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def main() -> int:
    load = load_average()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        memory = TaskMemory.open(MemorySettings(name="bench", data_dir=Path(tmp)))
        try:
            memory.text.store("ten", 0, TextArtifact(value=LINE * (10_000_000 // len(LINE))), searchable=False)
            memory.text.store("small", 0, TextArtifact(value=LINE * 10), searchable=False)
            ten = Path(tmp) / "bench" / "text" / "raw" / "ten" / "0.txt"
            small = Path(tmp) / "bench" / "text" / "raw" / "small" / "0.txt"
            memory.text.grep("warm", [("small", 0)], 5)  # the first call starts the worker
            cases = [
                ("grep 10 MB, 'user bob'", ten, "user bob", 5),
                ("grep 10 MB, r'request \\d+6 in'", ten, r"request \d+6 in", 5),
                ("grep 800 B (cost per call)", small, "alice", 50),
            ]
            print(f"{'case':36} {'in thread':>12} {'worker':>12} {'re2 lines':>12} {'re2 text':>12}")
            for name, path, pattern, runs in cases:
                namespace = path.parent.name
                row = {
                    "in_thread_ms": best(partial(in_thread, path, pattern), runs),
                    "worker_ms": best(partial(memory.text.grep, pattern, [(namespace, 0)], 50), runs),
                    "re2_lines_ms": best(partial(re2_lines, path, pattern), runs) if re2 else None,
                    "re2_text_ms": best(partial(re2_text, path, pattern), runs) if re2 else None,
                }
                results[name] = {key: _ms(value) for key, value in row.items()}
                print(f"{name:36}" + "".join(_cell(results[name][key]) for key in row))
            # Peak RSS only grows: measure the worker first, then the in-thread search.
            worker = peak_rss_growth(lambda: memory.text.grep("nothing", [("ten", 0)], 50), 8)
            thread = peak_rss_growth(lambda: in_thread(ten, "nothing"), 8)
            print(f"{'8 concurrent greps of 10 MB: +RSS':36} {thread:10.0f}MiB {worker:10.0f}MiB")
            results["8 concurrent greps of 10 MB: +RSS MiB"] = {"in_thread": round(thread), "worker": round(worker)}
        finally:
            memory.close()
    if re2:
        # The pattern that freezes `re` (2**34 steps): re2 answers at once, the worker stops at its time limit.
        runaway = best(partial(re2.search, "(a+)+$", "a" * 34 + "b"), 5)
        print(f"{'(a+)+$ on 34 a and a b':36} {'hangs':>12} {'time limit':>12}{_cell(_ms(runaway))}")
        results["(a+)+$ on 34 a and a b"] = {"in_thread_ms": None, "worker_ms": None, "re2_lines_ms": _ms(runaway)}
    results["google-re2"] = metadata.version("google-re2") if re2 else None
    results = {**stamp("nice -n 10 python -m bench.grep_limits", load), **results}
    out = Path(__file__).parent / "results" / "grep-limits.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def _cell(ms: float | None) -> str:
    return f"{'-':>12}" if ms is None else f" {ms:10.1f}ms"


if __name__ == "__main__":
    sys.exit(main())
