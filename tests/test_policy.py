"""The off-prompt policy: what is stored, what passes through."""

from __future__ import annotations

import base64

import mcp_types as mt
import pytest

from offprompt.config import StdioServer
from offprompt.policy import Thresholds, decide, result_text_size
from offprompt.proxy.downstreams import Proxy, public_name

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
