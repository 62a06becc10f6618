"""What one scan of a text learns about the whole text once (where its test code starts, whether it has a
doctest line), kept for the length of that `find_secrets` call only: a cache keyed on the text would keep the
last results' texts alive, megabytes each, long after they were answered."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

_T = TypeVar("_T")

#: The text being scanned and what was learnt of it; per thread and task, as redaction runs in worker threads.
_SCAN: ContextVar[tuple[str, dict[str, Any]] | None] = ContextVar("offprompt_secret_scan", default=None)


@contextmanager
def scanning(text: str) -> Iterator[None]:
    """Within it, `once(text, …)` computes each fact of `text` once."""
    token = _SCAN.set((text, {}))
    try:
        yield
    finally:
        _SCAN.reset(token)


def once(text: str, fact: str, compute: Callable[[], _T]) -> _T:
    """`compute()`, once per scan of `text`; outside one (a rule asked on its own), each time."""
    scan = _SCAN.get()
    if scan is None or scan[0] is not text:
        return compute()
    known = scan[1]
    if fact not in known:
        known[fact] = compute()
    result: _T = known[fact]
    return result
