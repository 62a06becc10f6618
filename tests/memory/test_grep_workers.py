"""memory_grep runs in worker processes: one that died between searches (the OOM killer, a kill -9) costs the
next search nothing but a fresh worker."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from offprompt.artifacts import TextArtifact
from offprompt.memory.task_memory import TaskMemory


def _grep_workers() -> list[int]:
    """This process's grep workers, by pid, as `ps` would show them."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (proc / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if parent == os.getpid() and b"_grep_worker" in command:
            found.append(int(proc.name))
    return found


def test_a_grep_after_its_worker_was_killed_finds_what_the_first_found(memory: TaskMemory) -> None:
    memory.store([TextArtifact(value="ok\nERROR disk full on /var\nok\n")], tool="logs")
    first, _ = memory.grep(r"ERROR \w+ \w+")
    workers = _grep_workers()
    assert workers  # the idle worker, kept for the next search
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    again, _ = memory.grep(r"ERROR \w+ \w+")
    assert [(m.line, m.text) for m in again] == [(m.line, m.text) for m in first] == [(2, "ERROR disk full on /var")]
    assert set(_grep_workers()).isdisjoint(workers)
