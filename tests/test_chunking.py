from __future__ import annotations

import json

from offprompt.chunking import chunk
from offprompt.tokens import index_tokens


def test_json_chunks_cover_the_text_and_start_at_records() -> None:
    records = [{"id": i, "name": f"user{i}", "bio": "likes " + "tea " * (i % 30)} for i in range(300)]
    data = json.dumps(records, indent=1).encode()
    spans = chunk(data, index_tokens(data), "json")
    assert b"".join(data[a:b] for a, b in spans) == data
    assert len(spans) > 10
    assert all(data[a:b].lstrip().startswith(b"{") for a, b in spans[1:])


def test_text_chunks_end_at_line_ends_and_stay_under_the_target() -> None:
    text = "".join(f"line {i}: " + "word " * (i % 17) + "\n" for i in range(2000))
    data = text.encode()
    index = index_tokens(data)
    spans = chunk(data, index, "text", target=200)
    assert b"".join(data[a:b] for a, b in spans) == data
    assert all(data[a:b].endswith(b"\n") for a, b in spans)
    assert max(index.token_at(b - 1) - index.token_at(a) + 1 for a, b in spans) <= 200


def test_a_line_longer_than_a_chunk_is_cut_on_tokens() -> None:
    data = ("x " * 5000).encode()
    index = index_tokens(data)
    spans = chunk(data, index, "text", target=200)
    assert b"".join(data[a:b] for a, b in spans) == data
    assert all(index.token_at(b - 1) - index.token_at(a) + 1 <= 200 for a, b in spans)
