"""`serve --ephemeral`'s memory goes with its process, even a killed one: the next start sweeps it away, and
never takes the memory of a process that still runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from offprompt.memory import ephemeral
from offprompt.memory.ephemeral import EphemeralDirectory, sweep_abandoned

#: A process that makes its ephemeral directory, says where, and waits to be killed.
HOLDER = """
import sys, time
from offprompt.memory.ephemeral import EphemeralDirectory
held = EphemeralDirectory()
print(held.path, flush=True)
time.sleep(600)
"""


def _started_holder(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    process = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


def test_a_killed_servers_memory_is_swept_and_a_live_ones_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed, gone = _started_holder(tmp_path)
    running, kept = _started_holder(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = EphemeralDirectory()
    try:
        (gone / "catalog.sqlite3").write_bytes(b"what the killed server stored")
        killed.send_signal(signal.SIGKILL)  # a client that found it slow to stop: nothing of its own cleanup runs
        killed.wait()
        assert gone.exists()
        assert sweep_abandoned(tmp_path) == 1
        assert not gone.exists()
        assert kept.exists()  # its process still holds it
        assert mine.path.exists()  # and so does this one
        assert sweep_abandoned(tmp_path) == 0
    finally:
        running.kill()
        running.wait()
        mine.remove()
    assert not mine.path.exists()
    assert sweep_abandoned(tmp_path) == 1  # the one whose process was just stopped


def test_a_directory_never_locked_is_swept_once_it_is_old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed before it locked its directory leaves one with no lock file: a young one may be being
    made right now and stays; an old one goes."""
    young = tmp_path / f"{ephemeral.PREFIX}young"
    old = tmp_path / f"{ephemeral.PREFIX}old"
    young.mkdir()
    old.mkdir()
    os.utime(old, (0, 0))
    other = tmp_path / "someone-elses"
    other.mkdir()
    os.utime(other, (0, 0))
    assert sweep_abandoned(tmp_path) == 1
    assert young.exists()
    assert other.exists()
    assert not old.exists()
