"""Fixtures of the shared-memory tests: the memory opened as each server would, and a Chroma server for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from offprompt.memory.task_memory import MemorySettings, TaskMemory

from ..chroma_server import ChromaServer


@pytest.fixture
def open_memory(tmp_path: Path, postgres_dsn: str, memory_name: str) -> Iterator[Callable[..., TaskMemory]]:
    """Opens the test's shared memory as a server would, each time with a data directory of its own."""
    opened: list[TaskMemory] = []

    def open_one(index: bool = True, **overrides: object) -> TaskMemory:
        settings = MemorySettings(
            name=memory_name, data_dir=tmp_path / f"server{len(opened)}", postgres=postgres_dsn, chroma="ephemeral"
        )
        memory = TaskMemory.open(replace(settings, **overrides), resume_indexing=index)  # type: ignore[arg-type]
        opened.append(memory)
        return memory

    yield open_one
    for memory in opened:
        memory.close()


@pytest.fixture
def chroma_url(chroma_server: ChromaServer) -> str:
    """A real `chroma run` on a free loopback port: where a shared memory's vectors go."""
    return chroma_server.url
