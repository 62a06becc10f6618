"""Directories that are the user's alone (0700), from the first moment and whatever the process umask.

mkdir's mode is cut by the umask and `Path.mkdir(parents=True)` gives the parents the default mode, so each
missing directory is made and then set to 0700. The umask itself is never changed: the downstream servers
offprompt starts would inherit it. The standard library only, for the stdio prelude."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

DIR_MODE: Final = 0o700


def private_dir(path: Path) -> None:
    """Make `path` and its missing parents, each 0700."""
    missing = []
    for parent in (path, *path.parents):
        if parent.is_dir():
            break
        missing.append(parent)
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, DIR_MODE)
        os.chmod(directory, DIR_MODE)  # mkdir's mode is cut by the umask
