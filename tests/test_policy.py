"""The off-prompt policy: what is stored, what passes through."""

from __future__ import annotations

import base64
import hashlib

import mcp_types as mt
import pytest

from offprompt.config import StdioServer
from offprompt.policy import Thresholds, decide, result_text_size
from offprompt.proxy.downstreams import Proxy, public_name
from offprompt.tokens import count_tokens

THRESHOLDS = Thresholds(tokens=4000, blob_bytes=256 * 1024)


def image(size: int) -> mt.ImageContent:
    return mt.ImageContent(data=base64.b64encode(b"\x89PNG" + bytes(size - 4)).decode(), mime_type="image/png")


def test_small_text_passes_and_large_text_is_stored() -> None:
    small = mt.CallToolResult(content=[mt.TextContent(text="word " * 100)])
    large = mt.CallToolResult(content=[mt.TextContent(text="word " * 5000)])
    assert not decide("auto", small, THRESHOLDS).store
    assert decide("auto", large, THRESHOLDS).store


def test_structured_content_counts_as_the_client_would_send_it() -> None:
    # Compact, as it goes on the wire: the fast lane's byte check and this count must agree.
    result = mt.CallToolResult(content=[], structured_content={"v": [0, 1], "k": "é"})
    assert result_text_size(result) == (len('{"v":[0,1],"k":"é"}'.encode()), '{"v":[0,1],"k":"é"}')


def test_many_images_weigh_together() -> None:
    result = mt.CallToolResult(content=[image(200 * 1024) for _ in range(5)])
    assert decide("auto", result, THRESHOLDS).store
    assert not decide("auto", mt.CallToolResult(content=[image(10 * 1024)]), THRESHOLDS).store


@pytest.mark.parametrize("mode", ["auto", "always"])
def test_errors_and_empty_results_are_never_stored(mode: str) -> None:
    error = mt.CallToolResult(content=[mt.TextContent(text="x" * 50_000)], is_error=True)
    empty = mt.CallToolResult(content=[mt.TextContent(text="  \n")])
    assert not decide(mode, error, THRESHOLDS).store  # type: ignore[arg-type]
    assert not decide(mode, empty, THRESHOLDS).store  # type: ignore[arg-type]


def test_always_stores_a_tiny_result_and_never_passes_a_huge_one() -> None:
    tiny = mt.CallToolResult(content=[mt.TextContent(text="hunter2")])
    huge = mt.CallToolResult(content=[mt.TextContent(text="x " * 100_000)])
    assert decide("always", tiny, THRESHOLDS).store
    assert not decide("never", huge, THRESHOLDS).store


def test_colliding_public_names_are_told_apart() -> None:
    assert public_name("a__b", "c") == public_name("a", "b__c")
    proxy = Proxy({"a__b": StdioServer(command="x"), "a": StdioServer(command="y")})
    proxy.downstreams["a__b"].tools = [mt.Tool(name="c", input_schema={"type": "object"})]
    proxy.downstreams["a"].tools = [mt.Tool(name="b__c", input_schema={"type": "object"})]
    routes = proxy.routes()
    assert len(routes) == 2
    assert {(r.server, r.tool) for r in routes.values()} == {("a__b", "c"), ("a", "b__c")}


def hex_hashes(tokens: int) -> str:
    """Lines of sha256 hex digests (a lock file, a git log), cut to exactly `tokens` tokens: under two bytes a
    token, so far fewer bytes than four times its tokens."""
    lines = "".join(hashlib.sha256(str(i).encode()).hexdigest() + "\n" for i in range(tokens))
    low, high = 0, len(lines)
    while low < high:  # the shortest prefix with that many tokens
        mid = (low + high) // 2
        if count_tokens(lines[:mid]) < tokens:
            low = mid + 1
        else:
            high = mid
    assert count_tokens(lines[:low]) == tokens
    return lines[:low]


def test_dense_text_one_token_over_the_threshold_is_stored_and_at_it_passes() -> None:
    over, at = hex_hashes(THRESHOLDS.tokens + 1), hex_hashes(THRESHOLDS.tokens)
    assert len(over.encode()) < 2 * THRESHOLDS.tokens  # a byte pre-check twice too lax would pass it inline
    assert decide("auto", mt.CallToolResult(content=[mt.TextContent(text=over)]), THRESHOLDS).store
    assert not decide("auto", mt.CallToolResult(content=[mt.TextContent(text=at)]), THRESHOLDS).store
