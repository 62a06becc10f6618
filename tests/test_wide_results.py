"""Wide text costs what long text costs: a result of one long line without white space, looked at and stored
off the event loop, within its call's timeout (issue 36, a line of 16 MiB of `zzz…` froze the server)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest

from offprompt import results, tokens
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.results import CallSite, ResultBoundary

pytestmark = pytest.mark.anyio

WIDE = "z" * (2 << 20)  # one line of 2 MiB, no white space


def wide_result(text: str = WIDE) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(text=text)])


class _Threads:
    """tiktoken's encoding as it is, noting how much each thread tokenized."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.chars: dict[int, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def encode_to_numpy(self, text: str, **kwargs: Any) -> Any:
        thread = threading.get_ident()
        self.chars[thread] = self.chars.get(thread, 0) + len(text)
        return self.real.encode_to_numpy(text, **kwargs)

    @property
    def threads(self) -> set[int]:
        """The threads that tokenized more than any reference holds."""
        return {thread for thread, chars in self.chars.items() if chars > 64 * 1024}


async def test_a_wide_result_is_counted_and_scanned_off_the_event_loop(
    memory: TaskMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The policy counted the whole line's tokens on the event loop (tens of seconds for 16 MiB): every other call,
    # memory_list included, waited. Nothing that grows with the result may run on the loop's own thread.
    tokens.warm_up()
    spy = _Threads(tokens.encoding())
    monkeypatch.setattr(tokens, "encoding", lambda name=tokens.ENCODING_NAME: spy)
    scanned: set[int] = set()
    prefilter = results.may_hold_secret_in

    def noted(result: Any) -> bool:
        scanned.add(threading.get_ident())
        return prefilter(result)

    monkeypatch.setattr(results, "may_hold_secret_in", noted)
    answer = await ResultBoundary(memory).settle(CallSite("files", "read", "auto"), wide_result())
    assert answer.meta is not None
    assert scanned
    assert answer.meta["offprompt"]["bytes"] == len(WIDE)  # stored whole
    assert spy.threads  # it was counted and indexed...
    assert threading.get_ident() not in spy.threads | scanned  # ...in worker threads only


async def test_a_result_past_its_calls_timeout_is_stopped_and_nothing_of_it_is_kept(
    memory: TaskMemory, settings: MemorySettings
) -> None:
    # 100 MiB with "timeout_seconds": 20 had no answer after 600 s. The timeout bounds the result's processing
    # too: an answer that says so, and no half-stored namespace.
    site = CallSite("files", "read", "auto", timeout=1e-9)
    answer = await ResultBoundary(memory).settle(site, wide_result())
    assert answer.is_error
    text = answer.content[0].text  # type: ignore[union-attr]
    assert "files.read" in text
    assert "timeout_seconds" in text
    assert memory.recent() == []
    assert not list(Path(settings.data_dir).rglob("*.txt"))  # noqa: ASYNC240
    within = await ResultBoundary(memory).settle(CallSite("files", "read", "auto", timeout=600), wide_result())
    assert not within.is_error  # the same result within a timeout it can meet: stored


def test_tokenizing_stops_between_pieces_once_the_result_is_due() -> None:
    from offprompt import deadline
    from offprompt.errors import ResultTimeoutError

    with deadline.due_within(0), pytest.raises(ResultTimeoutError):
        tokens.index_tokens(WIDE.encode())
    assert tokens.index_tokens(WIDE.encode()).tokens == len(WIDE) // 2  # no deadline outside the block
