"""Background work runs below the threads that serve calls: Linux keeps niceness per thread, and a thread starts
with its creator's, so each background thread lowers its own (and the threads it starts inherit it)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Final

__all__ = ["BACKGROUND", "background_niceness", "lower_this_thread"]

#: How far below the process's own priority background threads run.
BACKGROUND: Final = 10
_LOWEST: Final = 19


def background_niceness() -> int:
    """The niceness of background threads: the process's (its main thread's) plus BACKGROUND."""
    return min(os.getpriority(os.PRIO_PROCESS, os.getpid()) + BACKGROUND, _LOWEST)


def lower_this_thread() -> None:
    """Run the calling thread (and the threads it starts from now on) at the background niceness."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), background_niceness())
