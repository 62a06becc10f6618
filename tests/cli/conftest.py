"""Fixtures of the command-line tests: a memory filled through the proxy."""

from __future__ import annotations

from pathlib import Path

import pytest

from offprompt.memory.settings import MemorySettings

from .fill import Session, fill


@pytest.fixture
def memory_settings(tmp_path: Path) -> MemorySettings:
    return MemorySettings(name="cli", data_dir=tmp_path / "data")


@pytest.fixture
async def session(memory_settings: MemorySettings, tmp_path: Path) -> Session:
    return await fill(memory_settings, tmp_path)
