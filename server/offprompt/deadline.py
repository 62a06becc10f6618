"""How long one result may take to look at and store: its call's `timeout_seconds`, checked between the steps.

The result boundary sets the deadline for the call in flight (`due_within`); the steps whose cost grows with the
result (tokenizing, the outline, the secret scan, writing it) call `check` between their pieces, in whatever worker
thread runs them (a context variable: anyio copies it into its threads). A result past its deadline stops there
with `ResultTimeoutError`, and the store it was in removes what it wrote: nothing half-stored is left behind.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from offprompt.errors import ResultTimeoutError

#: When the result in hand is due (monotonic seconds), and the timeout that set it; None: no deadline.
_DUE: ContextVar[tuple[float, float] | None] = ContextVar("offprompt_result_due", default=None)


@contextmanager
def due_within(seconds: float | None) -> Iterator[None]:
    """Within this block, `check` raises once `seconds` have passed (None: never)."""
    token = _DUE.set(None if seconds is None else (time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DUE.reset(token)


def check() -> None:
    """Raise `ResultTimeoutError` when the result in hand is past its deadline."""
    due = _DUE.get()
    if due is not None and time.monotonic() > due[0]:
        raise ResultTimeoutError(
            f"took longer than the call's timeout ({due[1]:g} s) to look at and store, so it was stopped and nothing "
            "of it was kept: raise timeout_seconds for this server in the offprompt config, or ask the tool for less."
        )
