"""Property tests where the invariant is the spec: windows join back to the exact text, a grep hit's offset loads
a window starting at the match, the threshold decision equals a full count, JSONC keeps every line number.

Each is bounded (max_examples, no deadline) so the suite stays fast; the examples hypothesis finds failing are
kept in its database only when it is enabled (the tests run with -p no:cacheprovider here).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import mcp_types as mt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offprompt.artifacts import TextArtifact
from offprompt.config import load_config
from offprompt.memory.settings import MemorySettings
from offprompt.memory.task_memory import TaskMemory
from offprompt.policy import Thresholds, decide
from offprompt.tokens import count_tokens, count_tokens_beyond, well_formed

BOUNDED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: Pieces that stress token boundaries: astral planes (Linear B, math italics, CJK Ext. B, emoji with a skin
#: tone), combining marks, CRLF, tabs and indentation, JSON punctuation, a lone surrogate (replaced on storing).
PIECES = st.sampled_from(
    ["𐀀", "\U0001d440", "𠀀", "👋🏽", "e\u0301", "\u0301", "\r\n", "\n", "\t", "    ", '{"k": ', "],", "\ud800", "é"]
)
UNICODE = st.lists(
    st.one_of(PIECES, st.text(min_size=1, max_size=8), st.characters(min_codepoint=0x10000)), max_size=60
).map("".join)


@pytest.fixture(scope="module")
def memory() -> Iterator[TaskMemory]:
    with tempfile.TemporaryDirectory() as directory:
        memory = TaskMemory.open(MemorySettings(name="props", data_dir=Path(directory)))
        yield memory
        memory.close()


def stored(memory: TaskMemory, text: str) -> str:
    """Store `text` as memory_load would read it (unindexed: only the raw file and its token index)."""
    namespace = f"p{abs(hash(text)) % 10**12}x{len(text)}"
    memory.text.delete(namespace)
    memory.text.store(namespace, 0, TextArtifact(value=text), searchable=False)
    return namespace


def read_back(memory: TaskMemory, namespace: str, window: int) -> str:
    parts, offset = [], 0
    while True:
        got = memory.text.window(namespace, 0, offset, window)
        parts.append(got.text)
        if got.next_offset is None:
            return "".join(parts)
        offset = got.next_offset


@BOUNDED
@given(text=UNICODE.filter(bool), window=st.integers(min_value=1, max_value=7))
def test_windows_join_back_to_the_exact_text(memory: TaskMemory, text: str, window: int) -> None:
    namespace = stored(memory, text)
    expected = well_formed(text)  # lone surrogates become U+FFFD; everything else byte for byte
    assert "\ud800" not in expected
    assert read_back(memory, namespace, window).encode() == expected.encode()


@BOUNDED
@given(before=UNICODE, after=UNICODE, lines=st.integers(min_value=0, max_value=5))
def test_a_grep_hit_loads_a_window_starting_at_the_match(
    memory: TaskMemory, before: str, after: str, lines: int
) -> None:
    needle = "NEEDLE_7Q"
    text = "\n".join([before] * lines + [before + needle + after])
    namespace = stored(memory, text)
    [hit], _ = memory.text.grep(re.escape(needle), [(namespace, 0)], 5)
    got = memory.text.window(namespace, 0, hit.offset, 8).text
    first = memory.text.window(namespace, 0, hit.offset, 1).text  # the token that holds the match's first byte
    assert needle in got
    assert got.index(needle) < len(first)


def result(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(text=text)])


LINES = st.lists(
    st.one_of(
        st.sampled_from(['  "key": "value",', "    [1, 2, 3],", "def f(x):", "\treturn x", "a5f3c9e1" * 8, "}"]),
        UNICODE,
    ),
    min_size=1,
    max_size=200,
).map("\n".join)


@BOUNDED
@given(text=LINES.filter(str.strip))
def test_the_threshold_decision_equals_a_full_count_at_its_edge(text: str) -> None:
    tokens = count_tokens(text)
    for threshold in (tokens - 1, tokens, tokens + 1):
        if threshold < 1:
            continue
        decision = decide("auto", result(text), Thresholds(tokens=threshold))
        assert decision.store == (tokens > threshold), (threshold, tokens, decision.reason)
    for limit in {1, tokens // 20, tokens // 3, tokens - 1, tokens, tokens + 1}:  # small limits count a prefix
        counted, over = count_tokens_beyond(text, limit)
        assert over == (tokens > limit)
        assert counted > limit if over else counted == tokens


COMMENT = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=20).map(
        lambda s: "// " + s
    ),
    st.lists(st.text(alphabet="ab {}\"',:/ ", max_size=12), min_size=1, max_size=4).map(
        lambda lines: "/* " + "\n".join(lines).replace("*/", "") + " */"
    ),
    st.just(""),
)


@BOUNDED
@given(comments=st.lists(COMMENT, min_size=7, max_size=7))
def test_config_problems_name_the_right_line_after_any_comments(comments: list[str]) -> None:
    body = ["{", '"mcpServers": {', '"ok": {"command": "x"},', '"s": {', '"comand": "npx"', "}", "}", "}"]
    text, line = "", 0
    for k, row in enumerate(body):
        text += (comments[k] + "\n" if k < len(comments) else "") + row + "\n"
        if row.startswith('"comand"'):
            line = text.count("\n")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "mcp.json"
        path.write_text(text, encoding="utf-8")
        problem = load_config(path, check_paths=False).problems["s"]
    assert problem.startswith(f"{path}:{line}: mcpServers.s.comand: unknown key"), (problem, json.dumps(text))
