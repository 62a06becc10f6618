"""An HTTP downstream's answer reaches the SDK's parser as Unicode text, however its bytes arrive in chunks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import orjson
from hypothesis import given
from hypothesis import strategies as st

from offprompt.jsonrpc import unicode_json
from offprompt.proxy.http_text import UnicodeTransport

from ..test_jsonrpc import _fffd, _json


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _through_transport(chunks: list[bytes], headers: dict[str, str] | None = None) -> bytes:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, stream=_Chunks(chunks))

    async def fetch() -> bytes:
        async with httpx2.AsyncClient(transport=UnicodeTransport(httpx2.MockTransport(answer))) as client:
            return (await client.get("http://downstream.invalid/mcp")).content

    return anyio.run(fetch)


@given(st.lists(_json, min_size=1, max_size=3), st.data())
def test_server_sent_events_cut_anywhere_read_as_unicode_json(values: list[Any], data: st.DataObject) -> None:
    escaped = data.draw(st.booleans())
    body = b"".join(
        b"event: message\r\ndata: " + json.dumps(v, ensure_ascii=escaped).encode("utf-8", "surrogatepass") + b"\r\n\r\n"
        for v in values
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=6)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    events = _through_transport(chunks).split(b"\r\n\r\n")[:-1]
    assert [orjson.loads(event.split(b"data: ", 1)[1]) for event in events] == [_fffd(v) for v in values]


def test_a_pair_and_an_escaped_backslash_are_kept_and_only_lone_surrogates_change() -> None:
    text = rb'{"a": "\ud83d\ude00 \\ud800 \\\udfff \uD800x", "b": "caf' + "\u00e9".encode() + b'"}'
    assert (
        unicode_json(text) == rb'{"a": "\ud83d\ude00 \\ud800 \\\ufffd \ufffdx", "b": "caf' + "\u00e9".encode() + b'"}'
    )
    assert unicode_json(b'{"a": "caf\xe9"}') == '{"a": "caf\ufffd"}'.encode()  # Latin-1
    assert unicode_json(b'{"a": "\xed\xa0\x80"}') == '{"a": "\ufffd"}'.encode()  # a surrogate's bytes


def test_a_compressed_answer_passes_as_it_came() -> None:
    assert _through_transport([b'"\\ud800"'], {"content-encoding": "identity"}) == b'"\\ufffd"'
    assert _through_transport([b"\x1f\x8b"], {"content-encoding": "br"}) == b"\x1f\x8b"
