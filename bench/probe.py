"""Measurements that need a fresh process: `python -m bench.probe cold-store DIR`, `profile-store DIR [MB]`,
`words-ready DIR` or `wide-store DIR wide|base64|lines MiB`.

Each prints one JSON object on stdout. `words-ready` takes the store section's path from a fresh process, so two
versions of the server can be run in turn (`PYTHONPATH=<a checkout>/server`) on a shared, noisy machine.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _result_1mb(megabytes: float = 1) -> Any:
    import mcp_types as mt

    from bench.corpus import MB, mixed_text

    return mt.CallToolResult(content=[mt.TextContent(text=mixed_text(int(megabytes * MB)))])


def _store(memory: Any, result: Any) -> float:
    from offprompt.artifacts import from_result

    start = time.perf_counter()
    memory.store(from_result(result), tool="bench.read", arguments={}).to_result()
    return time.perf_counter() - start


def cold_store(directory: Path) -> dict[str, Any]:
    """The first 1 MB store in a fresh process (pays tiktoken's set-up), then a warm one."""
    from bench.context import HeldIndexing
    from offprompt.memory.settings import MemorySettings
    from offprompt.memory.task_memory import TaskMemory

    memory = TaskMemory.open(MemorySettings(name="cold", data_dir=directory, ttl_seconds=None, max_bytes=None))
    HeldIndexing(memory)
    try:
        result = _result_1mb()
        first = _store(memory, result)
        second = _store(memory, result)
    finally:
        memory.close()
    return {"first_s": first, "second_s": second}


def profile_store(directory: Path, megabytes: float = 1) -> dict[str, Any]:
    """pyinstrument over the cold and a warm store of a text result: the hottest frames of each."""
    from pyinstrument import Profiler

    from bench.context import HeldIndexing
    from offprompt.memory.settings import MemorySettings
    from offprompt.memory.task_memory import TaskMemory

    memory = TaskMemory.open(MemorySettings(name="prof", data_dir=directory, ttl_seconds=None, max_bytes=None))
    HeldIndexing(memory)
    out: dict[str, Any] = {}
    result = _result_1mb(megabytes)
    try:
        for label in ("cold", "warm"):
            profiler = Profiler(interval=0.0005)
            profiler.start()
            seconds = _store(memory, result)
            profiler.stop()
            out[label] = {"seconds": seconds, "hottest": hottest_frames(profiler)}
            if os.environ.get("BENCH_PROFILE_TEXT"):
                print(profiler.output_text(unicode=False, color=False, show_all=False), file=sys.stderr)
    finally:
        memory.close()
    return out


def words_ready(directory: Path) -> dict[str, Any]:
    """Seconds from a 1 MB store's reference until it is searchable by words, the embedder idle (as the store
    section measures it: a 2 KB and two 10 KB texts fully indexed first)."""
    import mcp_types as mt

    from bench.corpus import KB, mixed_text
    from offprompt.memory.settings import MemorySettings
    from offprompt.memory.task_memory import TaskMemory

    memory = TaskMemory.open(MemorySettings(name="words", data_dir=directory, ttl_seconds=None, max_bytes=None))
    try:
        for size in (2 * KB, 10 * KB, 10 * KB):
            _store(memory, mt.CallToolResult(content=[mt.TextContent(text=mixed_text(size))]))
            assert memory.text.wait_indexed(600)  # type: ignore[attr-defined]
        _store(memory, _result_1mb())
        reference = time.perf_counter()
        assert memory.text.wait_chunked(None, 600)  # type: ignore[attr-defined]
        return {"searchable_by_words_s": round(time.perf_counter() - reference, 3)}
    finally:
        memory.close()


def wide_store(directory: Path, kind: str, mebibytes: float) -> dict[str, Any]:
    """One result of `mebibytes` through the result boundary (secrets prefilter, policy, store) in this fresh
    process: one line of `zzz…` (`wide`) or of base64 (`base64`), or the bench's mixed text (`lines`). Seconds to
    the reference and the process's peak resident memory by then (against its peak before the result came), then
    seconds from there until searchable by words (chunked, in the lexical index)."""
    import base64
    import resource

    import anyio
    import mcp_types as mt

    from bench.context import HeldIndexing
    from bench.corpus import mixed_text
    from offprompt.memory.settings import MemorySettings
    from offprompt.memory.task_memory import TaskMemory
    from offprompt.results import CallSite, ResultBoundary
    from offprompt.tokens import warm_up

    memory = TaskMemory.open(MemorySettings(name="wide", data_dir=directory, ttl_seconds=None, max_bytes=None))
    held = HeldIndexing(memory)  # the reference alone first: chunking starts once its memory is read
    warm_up()
    size = int(mebibytes * (1 << 20))
    if kind == "wide":
        text = "z" * size
    elif kind == "base64":  # one line of base64, as a tool that cats a binary file writes it
        text = base64.b64encode(os.urandom(size * 3 // 4)).decode()
    else:
        text = mixed_text(size)
    result = mt.CallToolResult(content=[mt.TextContent(text=text)])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    try:
        answer = anyio.run(ResultBoundary(memory).settle, CallSite("bench", "read", "auto"), result)
        reference = time.perf_counter() - start
        assert not answer.is_error, answer
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        held.release()
        start = time.perf_counter()
        assert memory.text.wait_chunked(None, 1800)  # type: ignore[attr-defined]
        words = time.perf_counter() - start
    finally:
        memory.close(wait=0)
    return {"kind": kind, "bytes": size, "reference_s": reference, "words_s": words, "peak_rss": peak, "before": before}


def hottest_frames(profiler: Any, top: int = 8) -> list[dict[str, Any]]:
    """Frames by self time, the way py-spy's top orders them."""
    session = profiler.last_session
    root = session.root_frame()
    totals: dict[str, float] = {}

    def walk(frame: Any) -> None:
        key = f"{frame.function} ({Path(frame.file_path or '?').name}:{frame.line_no})"
        totals[key] = totals.get(key, 0.0) + frame.total_self_time
        for child in frame.children:
            if not child.is_synthetic:
                walk(child)

    walk(root)
    total = root.time or 1.0
    ranked = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)[:top]
    return [{"frame": k, "self_ms": round(v * 1000, 1), "share": round(v / total, 3)} for k, v in ranked]


def main() -> None:
    command, directory, *extra = sys.argv[1:]
    if command == "profile-store":
        print(json.dumps(profile_store(Path(directory), *(float(x) for x in extra))))
    elif command == "wide-store":
        print(json.dumps(wide_store(Path(directory), extra[0], float(extra[1]))))
    elif command == "words-ready":
        print(json.dumps(words_ready(Path(directory))))
    else:
        print(json.dumps(cold_store(Path(directory))))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # a daemon indexer thread may still be embedding: don't wait for it
