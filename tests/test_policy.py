"""The off-prompt policy: what is stored, what passes through."""

from __future__ import annotations

import base64
import hashlib

import mcp_types as mt
import pytest

from offprompt.config import StdioServer
from offprompt.policy import Thresholds, decide, passes_by_size, result_text_size
from offprompt.proxy.downstreams import Proxy
from offprompt.proxy.routes import public_name
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
def test_empty_results_are_never_stored_and_errors_only_when_sensitive(mode: str) -> None:
    error = mt.CallToolResult(content=[mt.TextContent(text="x" * 50_000)], is_error=True)
    empty = mt.CallToolResult(content=[mt.TextContent(text="  \n")])
    assert decide(mode, error, THRESHOLDS).store == (mode == "always")  # type: ignore[arg-type]
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


def test_the_fast_lanes_byte_check_passes_only_what_is_small_under_every_rule() -> None:
    small = Thresholds(tokens=4000, blob_bytes=256 * 1024)
    assert passes_by_size("never", False, 10**9, small)  # never: whatever its size
    assert passes_by_size("auto", True, 10**9, small)  # errors pass through
    assert not passes_by_size("always", True, 1, small)  # but not a sensitive tool's: it may quote the secret
    assert not passes_by_size("always", False, 1, small)  # a sensitive result is never relayed unread
    assert passes_by_size("auto", False, 4000, small)  # a token is at least one byte: 4,000 bytes are small
    assert not passes_by_size("auto", False, 4001, small)  # past it, the policy reads the result
    tight_blobs = Thresholds(tokens=4000, blob_bytes=1000)
    assert passes_by_size("auto", False, 1000, tight_blobs)
    assert not passes_by_size("auto", False, 1001, tight_blobs)  # a 1 KB image may be over a 1,000-byte limit


def blob_result(size: int, kind: str) -> mt.CallToolResult:
    data = base64.b64encode(bytes(size)).decode()
    if kind == "image":
        return mt.CallToolResult(content=[mt.ImageContent(data=data, mime_type="image/png")])
    resource = mt.BlobResourceContents(uri="file:///x.bin", blob=data, mime_type="application/octet-stream")
    return mt.CallToolResult(content=[mt.EmbeddedResource(resource=resource)])


@pytest.mark.parametrize("kind", ["image", "resource"])
def test_binaries_are_weighed_by_their_decoded_bytes_at_the_edge(kind: str) -> None:
    limit = Thresholds(tokens=4000, blob_bytes=3 * 1000)
    assert not decide("auto", blob_result(3000, kind), limit).store  # exactly the limit: inline
    over = decide("auto", blob_result(3003, kind), limit)
    assert over.store
    assert over.reason == "3,003 bytes of binaries is over 3,000 bytes"  # what the log says


def test_a_zero_blob_threshold_stores_every_binary_and_no_small_text() -> None:
    zero = Thresholds(tokens=4000, blob_bytes=0)
    assert decide("auto", blob_result(3, "image"), zero).store
    assert not decide("auto", mt.CallToolResult(content=[mt.TextContent(text="ok")] * 3), zero).store


def test_text_blocks_count_as_the_client_joins_them() -> None:
    result = mt.CallToolResult(content=[mt.TextContent(text="a"), mt.TextContent(text="é")])
    assert result_text_size(result) == (len("a\né".encode()), "a\né")


def test_each_decision_says_why_in_the_log() -> None:
    text = mt.CallToolResult(content=[mt.TextContent(text="word " * 5000)])
    assert decide("auto", mt.CallToolResult(content=[mt.TextContent(text="x")], is_error=True), THRESHOLDS).reason == (
        "the downstream reported an error"
    )
    assert decide("never", text, THRESHOLDS).reason == "off_prompt is never"
    assert decide("auto", mt.CallToolResult(content=[]), THRESHOLDS).reason == "the result is empty"
    assert decide("always", text, THRESHOLDS).reason == "off_prompt is always"
    assert decide("auto", mt.CallToolResult(content=[mt.TextContent(text="hi")]), THRESHOLDS).reason == "small"
    over = decide("auto", text, THRESHOLDS).reason
    assert over.endswith("tokens or more is over 4,000")
    assert int(over.split()[0].replace(",", "")) > 4000
    under = mt.CallToolResult(content=[mt.TextContent(text="word " * 3000)])
    assert decide("auto", under, THRESHOLDS).reason == f"{count_tokens('word ' * 3000):,} tokens"
