"""What the outline and the intent passages add to storing a 1 MB result (the reference target: <= 250 ms).

    PYTHONPATH=server python -m bench.reference_cost [--runs 7]

Stores the bench's 1 MB mixed text (real code, prose, logs and JSON) as one text result through
`TaskMemory.store(...).to_result()` in a scratch persistent memory, with the background indexer held (as the
store section measures it), and reports the median wall and thread-CPU milliseconds of: the store alone (no
outline shown, no intent), with the outline shown (400 tokens), and with the outline and an intent. Against a
tree without those features (e.g. PYTHONPATH=/path/to/main/server) only the first row is measured: the before.
Prints a table and writes bench/results/reference_cost.json.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import mcp_types as mt

from bench.context import HeldIndexing
from bench.corpus import MB, mixed_text
from bench.report import invocation, load_average, stamp
from offprompt.artifacts import from_result
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.tokens import warm_up

INTENT = "how does the timeout of a subprocess work when it expires"


def _measure(memory: TaskMemory, result: mt.CallToolResult, runs: int, **options: Any) -> dict[str, float]:
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        w, c = time.perf_counter(), time.thread_time()
        memory.store(from_result(result), tool="bench.read", arguments={"path": "/bench"}, **options).to_result()
        cpu.append((time.thread_time() - c) * 1e3)
        wall.append((time.perf_counter() - w) * 1e3)
    return {"wall_ms": round(statistics.median(wall), 1), "cpu_ms": round(statistics.median(cpu), 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    load = load_average()
    warm_up()
    result = mt.CallToolResult(content=[mt.TextContent(text=mixed_text(MB))])
    takes = inspect.signature(TaskMemory.store).parameters
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        memory = TaskMemory.open(MemorySettings(name="cost", data_dir=Path(scratch)))
        HeldIndexing(memory)
        try:
            _measure(memory, result, 1)  # the first store loads what later ones reuse
            rows["store, no outline shown, no intent"] = _measure(memory, result, args.runs)
            if "outline_tokens" in takes:
                rows["+ outline shown (400 tokens)"] = _measure(memory, result, args.runs, outline_tokens=400)
                rows["+ outline and intent passages"] = _measure(
                    memory, result, args.runs, outline_tokens=400, intent=INTENT
                )
        finally:
            memory.close()
    print(f"{'1 MB text result':40} {'wall ms':>8} {'cpu ms':>8}")
    for name, row in rows.items():
        print(f"{name:40} {row['wall_ms']:8.1f} {row['cpu_ms']:8.1f}")
    out = Path(__file__).parent / "results" / "reference_cost.json"
    out.write_text(json.dumps({**stamp(invocation("bench.reference_cost"), load), **rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
