"""A memory's files are the user's alone (results may be secrets), and a killed write leaves nothing behind."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from offprompt.artifacts import ImageArtifact, JsonArtifact, TextArtifact
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory


def _modes(directory: Path) -> dict[str, int]:
    """Every file and directory under `directory` (itself included) with its permission bits."""
    found = {".": stat.S_IMODE(directory.stat().st_mode)}
    for path in directory.rglob("*"):
        found[str(path.relative_to(directory))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def _store_everything(settings: MemorySettings) -> None:
    memory = TaskMemory.open(settings)
    try:
        memory.store([TextArtifact(value="SECRET-42 the launch code\n" * 50)], tool="vault.read")
        memory.store([ImageArtifact(value=b"\x89PNG\r\n\x1a\n" + b"\x01" * 300)], tool="vault.photo")
        memory.store([JsonArtifact(value={"token": "SECRET-43"})], tool="vault.json")
        assert memory.text.wait_indexed(timeout=300)  # Chroma's files and the lexical index exist too
        memory.delete(memory.store([TextArtifact(value="gone")], tool="t").namespace)
    finally:
        memory.close()


def test_a_memory_is_readable_by_its_owner_only(settings: MemorySettings) -> None:
    umask = os.umask(0o022)  # the usual umask, which would make files 0644
    try:
        _store_everything(settings)
        after = os.umask(0o022)
    finally:
        os.umask(umask)
    assert after == 0o022, "offprompt must not change the process umask (downstream servers inherit it)"
    modes = _modes(settings.directory)
    kinds = {name.split("/")[0] for name in modes}
    assert {"blobs", "text", "chroma", "catalog.sqlite3", ".offprompt.lock"} <= kinds
    assert any(name.startswith("chroma/") for name in modes), sorted(modes)
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (settings.directory / name).is_dir() else 0o600)
    }
    assert wrong == {}
    assert stat.S_IMODE(settings.data_dir.stat().st_mode) == 0o700


def test_a_memory_made_readable_by_everyone_is_made_private_when_opened(settings: MemorySettings) -> None:
    _store_everything(settings)
    for path in [settings.directory, *settings.directory.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # as older versions left them
    TaskMemory.open(settings).close()
    modes = _modes(settings.directory)
    assert {oct(m) for m in modes.values()} == {"0o700", "0o600"}


_KILLED_WRITER = """
import os, sys, time
from pathlib import Path
from offprompt.artifacts import ImageArtifact
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
memory = TaskMemory.open(MemorySettings(name="test", data_dir=Path(sys.argv[1])))
def hang(fd):  # the write is on disk but not yet renamed into place when the process is killed
    print("writing", flush=True)
    time.sleep(600)
os.fsync = hang
memory.store([ImageArtifact(value=os.urandom(3_000_000))], tool="shot")
"""


def test_half_written_files_of_a_killed_process_are_removed_when_the_memory_opens(settings: MemorySettings) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(settings.data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    leftovers = [p for p in settings.directory.rglob("*.tmp")]
    assert leftovers
    assert sum(p.stat().st_size for p in leftovers) >= 3_000_000
    deadline = time.monotonic() + 30
    while True:  # the OS drops the killed process's lock at once; be patient on a loaded machine anyway
        try:
            memory = TaskMemory.open(settings)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    try:
        assert list(settings.directory.rglob("*.tmp")) == []
        assert memory.recent() == []
    finally:
        memory.close()


_KILLED_AFTER_STORING = """
import os, sys, time
from pathlib import Path
from offprompt.artifacts import TextArtifact
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
os.umask(0o022)
memory = TaskMemory.open(MemorySettings(name="test", data_dir=Path(sys.argv[1])))
memory.store([TextArtifact(value="SECRET-44 the launch code\\n" * 50)], tool="vault.read")
print("stored", flush=True)
time.sleep(600)
"""


def test_a_memory_killed_before_it_closes_leaves_its_directories_private(settings: MemorySettings) -> None:
    """A SIGKILL skips the close that sets the modes again: each directory offprompt makes is 0700 as it is made."""
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_AFTER_STORING, str(settings.data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "stored"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    directories = [settings.data_dir, *(p for p in settings.data_dir.rglob("*") if p.is_dir())]
    assert settings.directory / "text" in directories
    modes = {str(d.relative_to(settings.data_dir)): oct(stat.S_IMODE(d.stat().st_mode)) for d in directories}
    assert {d: m for d, m in modes.items() if m != "0o700"} == {}
