"""Logs name sizes and kinds, never the content of a message: a sensitive result must not reach a log file.

The MCP SDK's transports log whole JSON-RPC messages at DEBUG (results of HTTP and SSE downstreams, the
bodies clients send), and sse_starlette logs every event it streams. Those records keep their first words and
lose the message itself. URLs in any of these loggers' records (a downstream's, which may carry a password or a
key in its query) keep their scheme, host and path only.
"""

from __future__ import annotations

import logging
import re

#: The loggers that write whole messages or URLs, and the words that start a message record.
_MESSAGE_LOGGERS = (
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.server.sse",
    "mcp.server.streamable_http",
    "sse_starlette.sse",
    "httpx",
    "httpcore",
)
_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?:[^/\s@]*@)?(?P<rest>[^\s?#'\"]*)(?:[?#][^\s'\"]*)?")
_MESSAGE_PREFIXES = (
    "chunk:",
    "ping:",
    "SSE message:",
    "Sending client message:",
    "Received server message:",
    "Sending message via SSE:",
    "Received JSON:",
    "Validated client message:",
    "Sending session message to writer:",
)


class MessageContentFilter(logging.Filter):
    """Replaces a logged message's content with its length."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        for prefix in _MESSAGE_PREFIXES:
            if text.startswith(prefix):
                record.msg = f"{prefix} ({len(text) - len(prefix) - 1:,} characters, not logged)"
                record.args = ()
                return True
        if "://" in text:
            record.msg = _URL.sub(lambda m: f"{m['scheme']}{m['rest']}", text)  # no user, password or query
            record.args = ()
        return True


_FILTER = MessageContentFilter()


def keep_message_content_out_of_logs() -> None:
    """Install the filter on the SDK's message-logging loggers (idempotent)."""
    for name in _MESSAGE_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
