"""What one answer can carry: `TaskMemory.window_within` keeps a window's text, written as a JSON string, under a
byte limit (escapes included), so a memory_load or a memory:// read never outgrows the wire."""

from __future__ import annotations

import json

from offprompt.artifacts import TextArtifact
from offprompt.memory.task_memory import TaskMemory


def json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def test_a_window_that_fits_is_the_plain_window(memory: TaskMemory) -> None:
    text = "".join(f"line {i} of plain words\n" for i in range(400))
    ns = memory.store([TextArtifact(value=text)], tool="t").namespace
    assert memory.window_within(ns, 0, 10, 200, 100_000) == memory.window(ns, 0, 10, 200)


def test_escapes_shorten_the_window_to_the_byte_limit_from_the_same_offset(memory: TaskMemory) -> None:
    # Quotes, backslashes and control characters double (or sextuple) on the wire: bytes under-count them.
    text = "".join(f'"q{i}"\\\t\x01\n' for i in range(3000))
    ns = memory.store([TextArtifact(value=text)], tool="t").namespace
    limit = 2_000
    whole = memory.window(ns, 0, 40, 5_000)
    assert json_bytes(whole.text) > limit
    cut = memory.window_within(ns, 0, 40, 5_000, limit)
    assert cut.offset == 40
    assert whole.text.startswith(cut.text)
    assert limit // 4 < json_bytes(cut.text) <= limit  # as much as fits, within a halving of the budget
    assert cut.next_offset is not None
    follow = memory.window_within(ns, 0, cut.next_offset, 5_000, limit)
    assert whole.text.startswith(cut.text + follow.text)  # the next answer goes on where this one stopped


def test_a_single_token_over_the_limit_still_comes_alone(memory: TaskMemory) -> None:
    text = "\x01" * 50 + "\n" + "after\n" * 10
    ns = memory.store([TextArtifact(value=text)], tool="t").namespace
    one = memory.window_within(ns, 0, 0, 100, 5)  # no single token fits 5 bytes once escaped
    assert one.offset == 0
    assert one.next_offset == 1
    assert one.text == memory.window(ns, 0, 0, 1).text
