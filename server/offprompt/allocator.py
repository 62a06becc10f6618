"""Big buffers go back to the system when they are freed (glibc).

glibc serves an allocation over its mmap threshold with a mapping of its own, unmapped when freed; but each
time such a block is freed it raises the threshold to that block's size (up to 32 MiB). After the first 10 MB
result, later 10 MB buffers (a stored text read back, the line that passes it to a server) come from the heap
and stay resident once freed: a 10 MB output passed on peaked at 3.1x its size, 2.0x with the threshold fixed
(`python -m bench --only pass_on`). A fixed threshold also stops that adjustment.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Final

__all__ = ["MMAP_THRESHOLD_BYTES", "return_big_buffers"]

#: Allocations from this size on get a mapping of their own.
MMAP_THRESHOLD_BYTES: Final = 1 << 20
_M_MMAP_THRESHOLD: Final = -3  # glibc's malloc.h


def return_big_buffers() -> bool:
    """Fix glibc's mmap threshold at MMAP_THRESHOLD_BYTES; False where that does not apply (not glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):  # musl and others have no mallopt, or no libc.so.6
        return False
