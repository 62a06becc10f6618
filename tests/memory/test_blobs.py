"""Images and files kept off the prompt: stored once however many outputs hold them, and gone with the last."""

from __future__ import annotations

from pathlib import Path

import pytest

from offprompt.artifacts import ImageArtifact, TextArtifact
from offprompt.errors import NotFoundError
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def _objects(directory: Path) -> list[Path]:
    return [p for p in (directory / "blobs").rglob("*") if p.is_file() and "objects" in p.parts]


def test_an_image_two_outputs_hold_is_kept_once_and_until_both_are_deleted(memory: TaskMemory) -> None:
    assert memory.directory is not None
    first = memory.store([TextArtifact(value="a chart"), ImageArtifact(value=PNG, mime_type="image/png")], tool="a")
    second = memory.store([ImageArtifact(value=PNG, mime_type="image/png")], tool="b")
    assert len(_objects(memory.directory)) == 1  # the same bytes, stored once
    memory.delete(first.namespace)
    assert memory.load(second.namespace, 0).value == PNG  # still the other output's
    with pytest.raises(NotFoundError):
        memory.load(first.namespace, 1)
    memory.delete(second.namespace)
    assert _objects(memory.directory) == []  # the disk is given back with the last output that held it


def test_blobs_kept_in_the_process_load_back_and_go_with_their_output(tmp_path: Path) -> None:
    """`"blobs": "memory"`: images live in the server's process only, as a stored one reads back."""
    settings = MemorySettings(name="test", data_dir=tmp_path / "data", blobs="memory")
    memory = TaskMemory.open(settings)
    try:
        stored = memory.store([ImageArtifact(value=PNG, mime_type="image/png")], tool="screenshot")
        assert memory.load(stored.namespace, 0).value == PNG
        assert _objects(settings.directory) == []  # nothing of it on disk
        memory.delete(stored.namespace)
        with pytest.raises(NotFoundError, match=stored.namespace):
            memory.load(stored.namespace, 0)
    finally:
        memory.close()
