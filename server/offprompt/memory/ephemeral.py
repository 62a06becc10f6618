"""`serve --ephemeral`'s throw-away data directory, gone when its process is, even one that was killed.

A client that finds a server slow to stop kills it (Claude Code within half a second, the SDK's stdio client
after two), and a killed process removes nothing. So each ephemeral directory holds a lock that its process
keeps for as long as it runs (the OS drops it at any exit, SIGKILL included), and every `offprompt serve`
sweeps away, when it starts, the ephemeral directories whose lock nobody holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["PREFIX", "EphemeralDirectory", "sweep_abandoned"]

logger = logging.getLogger(__name__)

PREFIX = "offprompt-ephemeral-"
OWNER_LOCK = ".owner.lock"
#: A directory this young with no lock file may be one whose process is making it right now.
_NEWBORN_SECONDS = 60.0


def _try_lock(fd: int) -> bool:
    """Take the lock of `fd` without waiting; whether it was free."""
    if sys.platform == "win32":  # Windows keeps an open file from being removed: nothing to sweep there
        return False
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


class EphemeralDirectory:
    """A fresh directory in the system's temp directory, locked by this process until `remove()`."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX))  # 0700
        # Locked before it has its name: a sweeper never finds the lock file free while this process lives.
        unnamed = self.path / f"{OWNER_LOCK}.new"
        self._fd = os.open(unnamed, os.O_RDWR | os.O_CREAT, 0o600)
        _try_lock(self._fd)
        os.replace(unnamed, self.path / OWNER_LOCK)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)  # first: Windows removes no open file
        shutil.rmtree(self.path, ignore_errors=True)


def sweep_abandoned(directory: Path | None = None) -> int:
    """Remove the ephemeral directories in `directory` (the system's temp directory) whose process is gone; how
    many."""
    swept = 0
    for found in Path(directory or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            fd = os.open(found / OWNER_LOCK, os.O_RDWR)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                if time.time() - found.stat().st_mtime > _NEWBORN_SECONDS:
                    shutil.rmtree(found, ignore_errors=True)  # old, and never locked
                    swept += 1
            continue
        except OSError:
            continue  # another user's, or not a directory
        try:
            if _try_lock(fd):  # free: its process is gone
                shutil.rmtree(found, ignore_errors=True)
                swept += 1
        finally:
            os.close(fd)
    if swept:
        logger.info("removed %d ephemeral memories left by offprompt processes that were killed", swept)
    return swept
