"""What went through offprompt, counted while it runs: the figures `offprompt stats` reports.

Counting is a dictionary update under a lock; the counts reach the catalog every few seconds and when the
memory closes, so a small result relayed as bytes costs no disk write and no tokenizing.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from typing import Final

from offprompt.memory.catalog import CatalogStore

#: Where memory tools' read-backs are counted: they are offprompt's own tools.
OWN_SERVER: Final = "offprompt"
FLUSH_SECONDS: Final = 5.0

_Key = tuple[int, str, str, str]


class Usage:
    """Per-minute counts of results passed inline, stored, and read back, flushed to the catalog."""

    def __init__(self, catalog: CatalogStore, flush_seconds: float = FLUSH_SECONDS) -> None:
        self._catalog = catalog
        self._flush_seconds = flush_seconds
        self._lock = threading.Lock()
        self._counts: dict[_Key, list[int]] = {}
        self._flushed = time.monotonic()
        self._closed = False
        # A memory nobody closes (a process that ends without closing its wrap memory) keeps its last counts.
        atexit.register(_flush_at_exit, weakref.ref(self))

    def inline(self, server: str, tool: str, size: int) -> None:
        """A result passed to the client as it came: its bytes (never tokenized on this path)."""
        self._add(server, tool, "inline", size, 0, 0)

    def stored(self, server: str, tool: str, size: int, tokens: int, reference_tokens: int) -> None:
        """A result kept off the prompt: what it held, and what the model got instead (the reference)."""
        self._add(server, tool, "stored", size, tokens, reference_tokens)

    def read(self, tool: str, tokens: int) -> None:
        """A memory tool's answer: the tokens the model read back."""
        self._add(OWN_SERVER, tool, "read", 0, 0, tokens)

    def _add(self, server: str, tool: str, kind: str, size: int, tokens: int, model_tokens: int) -> None:
        key = (int(time.time() // 60), server, tool, kind)
        with self._lock:
            counts = self._counts.setdefault(key, [0, 0, 0, 0])
            counts[0] += 1
            counts[1] += size
            counts[2] += tokens
            counts[3] += model_tokens
            due = time.monotonic() - self._flushed >= self._flush_seconds
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            counts, self._counts = self._counts, {}
            self._flushed = time.monotonic()
            if self._closed:
                return
        if counts:
            self._catalog.add_usage({key: (c[0], c[1], c[2], c[3]) for key, c in counts.items()})

    def close(self) -> None:
        """Write what is left; later counts are dropped (the catalog closes next)."""
        self.flush()
        with self._lock:
            self._closed = True


def _flush_at_exit(ref: weakref.ReferenceType[Usage]) -> None:
    usage = ref()
    if usage is not None:
        with contextlib.suppress(Exception):  # the interpreter is going: never fail its exit
            usage.close()
