"""memory_grep in a worker process against the former in-thread search: time and server memory.

    python -m bench.grep_limits

Prints a table; both patterns match no line, so each search reads the whole text. "in thread" is the former
search (the text read whole, split, Python `re` in the server's own thread); "worker" is
`ChromaTextStorage.grep` now (a worker process streaming the file).
"""

from __future__ import annotations

import re
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from offprompt.artifacts import TextArtifact
from offprompt.memory.task_memory import MemorySettings, TaskMemory

LINE = "2026-11-30T00:00:00 INFO worker-3 handled request 12345 in 3 ms for user alice\n"


def in_thread(path: Path, pattern: str) -> int:
    """The former search's loop, as it ran in the server."""
    regex = re.compile(pattern)
    found, byte_pos = 0, 0
    for line in path.read_bytes().decode("utf-8").split("\n"):
        if regex.search(line):
            found += 1
        byte_pos += 1 + (len(line) if line.isascii() else len(line.encode("utf-8")))
    return found


def best(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
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
    with tempfile.TemporaryDirectory() as tmp:
        memory = TaskMemory.open(MemorySettings(name="bench", data_dir=Path(tmp)))
        try:
            memory.text.store("ten", 0, TextArtifact(value=LINE * (10_000_000 // len(LINE))), searchable=False)
            memory.text.store("small", 0, TextArtifact(value=LINE * 10), searchable=False)
            ten = Path(tmp) / "bench" / "text" / "raw" / "ten" / "0.txt"
            small = Path(tmp) / "bench" / "text" / "raw" / "small" / "0.txt"
            memory.text.grep("warm", [("small", 0)], 5)  # the first call starts the worker
            rows = [
                (
                    "grep 10 MB, 'user bob'",
                    best(lambda: in_thread(ten, "user bob"), 5),
                    best(lambda: memory.text.grep("user bob", [("ten", 0)], 50), 5),
                ),
                (
                    "grep 10 MB, r'request \\d+6 in'",
                    best(lambda: in_thread(ten, r"request \d+6 in"), 5),
                    best(lambda: memory.text.grep(r"request \d+6 in", [("ten", 0)], 50), 5),
                ),
                (
                    "grep 800 B (cost per call)",
                    best(lambda: in_thread(small, "alice"), 50),
                    best(lambda: memory.text.grep("alice", [("small", 0)], 50), 50),
                ),
            ]
            print(f"{'case':36} {'in thread':>12} {'worker':>12}")
            for name, before, after in rows:
                print(f"{name:36} {before * 1000:10.1f}ms {after * 1000:10.1f}ms")
            # Peak RSS only grows: measure the worker first, then the in-thread search.
            worker = peak_rss_growth(lambda: memory.text.grep("nothing", [("ten", 0)], 50), 8)
            thread = peak_rss_growth(lambda: in_thread(ten, "nothing"), 8)
            print(f"{'8 concurrent greps of 10 MB: +RSS':36} {thread:10.0f}MiB {worker:10.0f}MiB")
        finally:
            memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
