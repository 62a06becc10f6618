"""Store, read and query latency of the shared memory (PostgreSQL) against the embedded one, in one run.

    python -m bench.shared_memory --postgres postgresql://user@host/db [--texts 40] [--out FILE]

Both memories get the same texts (log-like, ~4 KB each) through `TaskMemory` (the layer every memory tool
calls), after which each operation is timed per call and the median (p50) is reported with the ratio
shared / embedded. The shared memory is read from a second memory object with a data directory of its own,
as another server would: its first read of a text copies it from PostgreSQL ("read, other server, first"),
later reads use the copy. Queries run after indexing is done (lexical mode: the shared memory here has no
Chroma server). The embedded memory embeds in the background during its stores (its default), the shared
one does not; PostgreSQL runs on the same machine, over loopback.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.report import invocation, load_average, stamp
from offprompt.artifacts import TextArtifact
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

RESULTS = Path(__file__).parent / "results" / "shared-memory.json"


def text(n: int) -> str:
    lines = [
        f"2026-05-20 10:{k % 60:02d}:{n % 60:02d} INFO worker-{k % 4} request {n}-{k} in {k % 17} ms" for k in range(60)
    ]
    return "\n".join([*lines, f"2026-05-20 11:00:00 ERROR request {n} failed: marker{n}q checksum mismatch"])


def p50(fn: Callable[[int], object], count: int) -> float:
    times = []
    for n in range(count):
        t = time.perf_counter()
        fn(n)
        times.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(times), 2)


def measure(writer: TaskMemory, reader: TaskMemory, count: int) -> dict[str, float]:
    namespaces: list[str] = []

    def store(n: int) -> None:
        namespaces.append(writer.store([TextArtifact(value=text(n))], tool="bench.logs").namespace)

    row = {"store": p50(store, count)}
    wait = getattr(writer.text, "wait_indexed", None)
    assert wait is not None
    assert wait(3600)
    if reader is not writer:
        row["read, other server, first"] = p50(lambda n: reader.window(namespaces[n], 0, 0, 2000), count)
    row["read"] = p50(lambda n: reader.window(namespaces[n], 0, 0, 2000), count)
    row["list 50"] = p50(lambda n: reader.recent(50), count)
    row["grep, one namespace"] = p50(lambda n: reader.grep(f"marker{n}q", namespaces[n]), count)
    row["query, one namespace"] = p50(
        lambda n: reader.query(f"marker{n}q checksum", namespaces[n], mode="lexical"), count
    )
    row["query, whole memory"] = p50(lambda n: reader.query(f"marker{n}q checksum", None, mode="lexical"), count)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", required=True, help="a PostgreSQL DSN the bench may create a schema in")
    parser.add_argument("--texts", type=int, default=40)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        embedded = TaskMemory.open(MemorySettings(name="bench", data_dir=Path(tmp) / "embedded"))
        try:
            local = measure(embedded, embedded, args.texts)
        finally:
            embedded.close()
        name = f"bench-shared-{int(time.time())}"
        writer = TaskMemory.open(MemorySettings(name=name, data_dir=Path(tmp) / "one", postgres=args.postgres))
        reader = TaskMemory.open(MemorySettings(name=name, data_dir=Path(tmp) / "two", postgres=args.postgres))
        try:
            shared = measure(writer, reader, args.texts)
        finally:
            writer.close()
            reader.close()
    rows: list[dict[str, Any]] = []
    print(f"p50 per call, ms ({args.texts} texts of ~4 KB; PostgreSQL on loopback)\n")
    print("| operation | embedded | shared (PostgreSQL) | shared / embedded |")
    print("| --- | ---: | ---: | ---: |")
    for op, value in shared.items():
        base = local.get(op, local["read"] if op.startswith("read") else None)
        ratio = round(value / base, 2) if base else None
        rows.append({"operation": op, "embedded_ms": base, "shared_ms": value, "ratio": ratio})
        print(f"| {op} | {base} | {value} | {ratio}x |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    stamped = stamp(invocation("bench.shared_memory"), load)
    report = {**stamped, "texts": args.texts, "machine": platform.platform(), "rows": rows}
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
