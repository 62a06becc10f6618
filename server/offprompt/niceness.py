"""Background work runs below the threads that serve calls: Linux keeps niceness per thread, and a thread starts
with its creator's, so each background thread lowers its own (and the threads it starts inherit it)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Final

__all__ = ["BACKGROUND", "background_niceness", "lower_this_thread", "set_background"]

#: How far below the process's own priority background threads run, unless the config says otherwise
#: (`embedder_niceness`): on a machine with idle cores it costs the embedder nothing, and under contention it
#: keeps the calls being served ahead of it (CFS weighs a thread at nice 10 about 1/9 of one at nice 0).
BACKGROUND: Final = 10
_LOWEST: Final = 19
_levels = BACKGROUND


def set_background(levels: int) -> None:
    """Background threads started from now on run `levels` below the process (0: at its own priority). A thread
    already lowered stays where it is: raising a thread's priority again takes a privilege users lack."""
    global _levels
    _levels = max(0, min(levels, _LOWEST))


def background_niceness() -> int:
    """The niceness of background threads: the process's (its main thread's) plus the levels set."""
    return min(os.getpriority(os.PRIO_PROCESS, os.getpid()) + _levels, _LOWEST)


def lower_this_thread() -> None:
    """Run the calling thread (and the threads it starts from now on) at the background niceness."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), background_niceness())
