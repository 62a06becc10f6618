"""What every section gets: the run's options, a scratch directory, fresh memories, and a shared cache."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

REPO = Path(__file__).resolve().parent.parent
PEERS_BIN = REPO / "tests" / "peers" / "node_modules" / ".bin"


@dataclass
class Context:
    quick: bool
    workdir: Path
    results_dir: Path
    cache: dict[str, Any] = field(default_factory=dict)
    _started: float = field(default_factory=time.perf_counter)

    def log(self, message: str) -> None:
        print(f"[{time.perf_counter() - self._started:7.1f}s] {message}", file=sys.stderr, flush=True)

    def pick(self, full: Any, quick: Any) -> Any:
        return quick if self.quick else full

    def settings(self, name: str) -> MemorySettings:
        """A fresh persistent memory (real Chroma, SQLite catalog, files) under the scratch directory."""
        return MemorySettings(name=name, data_dir=self.workdir / "memories", ttl_seconds=None, max_bytes=None)

    @contextmanager
    def memory(self, name: str) -> Iterator[TaskMemory]:
        memory = TaskMemory.open(self.settings(name))
        try:
            yield memory
        finally:
            memory.close()


class HeldIndexing:
    """Keeps a memory's background indexer idle: store jobs wait here until `release()`.

    Store latency is measured with the indexer idle, since on two cores a busy
    indexer takes both of them; the cost of storing while it is busy is
    measured separately. Jobs held and never released are simply not indexed.
    """

    def __init__(self, memory: TaskMemory) -> None:
        self._storage: Any = memory.text
        self._enqueue = self._storage._enqueue
        self.jobs: list[tuple[Any, ...]] = []
        self._storage._enqueue = self._hold

    def _hold(self, *job: Any) -> None:
        self.jobs.append(job)

    def release(self, keep_holding: bool = False) -> None:
        """Hand the held jobs to the real indexer; afterwards new jobs go straight to it unless `keep_holding`."""
        jobs, self.jobs = self.jobs, []
        if not keep_holding:
            del self._storage._enqueue  # the class's method again
        for job in jobs:
            self._enqueue(*job)
