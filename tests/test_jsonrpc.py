"""The JSON boundary: whatever a line holds, what offprompt reads and writes is Unicode text (a lone surrogate
read or written as U+FFFD, or a client's request holding one refused), and every other value is kept as it was."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as mt
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from offprompt.jsonrpc import decode, dumps, invalid_request, loads
from offprompt.serve.stdio import _model_line

#: Any code point, lone surrogates (category Cs) included.
_any_text = st.text(st.characters(codec=None, categories=None), max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _any_text,  # orjson reads a bigger one as a float
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_any_text, inner, max_size=3),
    max_leaves=12,
)


def _fffd(value: Any) -> Any:
    """`value` with each lone surrogate replaced, the slow and obvious way."""
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, list):
        return [_fffd(item) for item in value]
    if isinstance(value, dict):
        return {_fffd(key): _fffd(item) for key, item in value.items()}
    return value


@given(_json)
def test_any_line_reads_as_unicode_with_each_lone_surrogate_as_u_fffd(value: Any) -> None:
    for line in (json.dumps(value).encode(), json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")):
        read = loads(line)
        assert read == _fffd(value)
        assert orjson.loads(orjson.dumps(read)) == read  # strict UTF-8 both ways: nothing lone is left


@given(_json)
def test_what_offprompt_writes_is_strict_utf_8_json(value: Any) -> None:
    assert orjson.loads(dumps(value)) == _fffd(value)


def test_a_line_says_where_its_lone_surrogates_were_outer_members_first() -> None:
    line = b'{"params": {"arguments": {"text": "a\\ud800b", "list": ["ok", "\\udfff"]}}, "id": "\\udc00"}'
    decoded = decode(line)
    assert decoded.replaced == ("id", "params.arguments.text", "params.arguments.list[1]")
    assert decoded.value == {"params": {"arguments": {"text": "a\ufffdb", "list": ["ok", "\ufffd"]}}, "id": "\ufffd"}
    assert decode(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}').replaced == ()


def test_a_downstream_line_of_latin_1_reads_as_u_fffd_and_a_client_s_is_no_json() -> None:
    line = '{"text": "caf\u00e9"}'.encode("latin-1")
    assert loads(line) == {"text": "caf\ufffd"}
    with pytest.raises(ValueError, match="utf-8"):
        decode(line)


@pytest.mark.parametrize(
    ("line", "code", "answer_id", "says"),
    [
        (b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', -32600, None, "id holds a lone surrogate"),
        (b'{"jsonrpc": "2.0", "id": 3, "method": "pi\\ud800ng"}', -32600, 3, "method holds a lone surrogate"),
        (
            b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {"q": "\\udfff"}}}',
            -32602,
            4,
            "params.arguments.q holds a lone surrogate",
        ),
        (b'{"jsonrpc": "2.0", "id": "\\ud800", "result": {}}', -32600, None, "id holds a lone surrogate"),
    ],
)
def test_a_client_message_holding_a_lone_surrogate_where_it_matters_is_refused(
    line: bytes, code: int, answer_id: Any, says: str
) -> None:
    decoded = decode(line)
    refusal = invalid_request(decoded.value, decoded.replaced)
    assert refusal is not None
    assert refusal["id"] == answer_id
    assert refusal["error"]["code"] == code
    assert says in refusal["error"]["message"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "\\ud800"}}',
        b'{"jsonrpc": "2.0", "id": 7, "result": {"content": {"type": "text", "text": "\\udfff"}}}',
        b'{"jsonrpc": "2.0", "id": 8, "method": "ping"}',
    ],
)
def test_a_client_notification_or_response_holding_a_lone_surrogate_in_its_params_is_served(line: bytes) -> None:
    decoded = decode(line)
    assert invalid_request(decoded.value, decoded.replaced) is None


def test_an_sdk_message_holding_a_lone_surrogate_is_written_with_u_fffd() -> None:
    # pydantic cannot write it: a log message holding one made the stdio server exit 1.
    params = {"level": "error", "logger": "x\udfff", "data": {"\ud800": "y"}}
    note = mt.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params=params)
    written = orjson.loads(_model_line(note))
    assert written["params"] == {"level": "error", "logger": "x\ufffd", "data": {"\ufffd": "y"}}
    plain = mt.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info"})
    assert _model_line(plain) == plain.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
