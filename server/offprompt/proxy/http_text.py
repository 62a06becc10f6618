"""An HTTP downstream's answers read as Unicode text, as a stdio downstream's lines are (`jsonrpc.loads`).

The SDK's HTTP and SSE clients parse each message with pydantic, which refuses a lone surrogate (`"\\udfff"`) or
bytes that are no UTF-8 and drops the whole message: the call waits out its timeout. This transport hands them
on line by line with each such string's bad part made U+FFFD (`jsonrpc.unicode_json`) before they are parsed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from offprompt.jsonrpc import unicode_json


class UnicodeTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport: its responses' bodies come out as Unicode text, a whole line at a time."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._inner = inner if inner is not None else httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-encoding", "identity") == "identity":  # compressed bytes pass as they are
            response.stream = _UnicodeLines(response.stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _UnicodeLines(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream | httpx2.SyncByteStream) -> None:
        assert isinstance(inner, httpx2.AsyncByteStream)
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = bytearray()
        async for chunk in self._inner:
            start = len(pending)
            pending += chunk
            # The last line end (server-sent events may end lines with CR alone): what lies before it is whole lines.
            end = max(pending.rfind(b"\n", start), pending.rfind(b"\r", start))
            if end != -1:
                yield unicode_json(bytes(pending[: end + 1]))
                del pending[: end + 1]
        if pending:
            yield unicode_json(bytes(pending))

    async def aclose(self) -> None:
        await self._inner.aclose()


def unicode_client(
    headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
) -> httpx2.AsyncClient:
    """An HTTP client for a downstream, with the SDK's default timeouts (30 s, and 300 s to read: a server may hold
    a response stream open); the SDK's `McpHttpClientFactory`, for its SSE client."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        transport=UnicodeTransport(),
    )
