"""Shared fixtures: a real memory (SQLite catalog, files, Chroma) in a temporary directory."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.serve.app import build_server

from .chroma_server import ChromaServer
from .serving import CONFORMANCE_CLI, INSPECTOR, NODE
from .support import require_installed

# The list and front caches of every offprompt the tests start, out of the user's own cache directory (a test
# that needs its caches where it can see them sets OFFPROMPT_CACHE_DIR itself).
os.environ.setdefault("OFFPROMPT_CACHE_DIR", tempfile.mkdtemp(prefix="offprompt-test-cache-"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `busy_clients` tests keep both cores busy: they run as a step of their own after the suite."""
    if os.environ.get("OFFPROMPT_BUSY_CLIENTS") == "1":
        return
    skip = pytest.mark.skip(
        reason="a step of its own after the suite: OFFPROMPT_BUSY_CLIENTS=1 pytest -n 0 -m busy_clients"
    )
    for item in items:
        if "busy_clients" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def npm_peers() -> None:
    """The Inspector and Node 22 from tests/peers: skipped without them, failed without them in CI."""
    require_installed([INSPECTOR, NODE], "npm ci --prefix tests/peers")


@pytest.fixture
def conformance_suite() -> None:
    require_installed([CONFORMANCE_CLI], "npm ci --prefix tests/conformance")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> MemorySettings:
    return MemorySettings(name="test", data_dir=tmp_path / "data")


@pytest.fixture
def memory(settings: MemorySettings) -> Iterator[TaskMemory]:
    memory = TaskMemory.open(settings)
    yield memory
    memory.close()


@pytest.fixture
async def client(memory: TaskMemory) -> AsyncIterator[Client]:
    async with Client(build_server(memory)) as client:
        yield client


from .postgres import chroma_url, memory_name, open_memory, postgres_dsn  # noqa: E402, F401  (the `postgres` tests')


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[ChromaServer]:
    """A real `chroma run` on 127.0.0.1 (it comes with the chromadb package), its data in tmp_path."""
    server = ChromaServer(tmp_path / "chroma-server")
    server.start()
    yield server
    server.stop()
