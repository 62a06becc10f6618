"""Logs name sizes and kinds, never the content of a message: a sensitive result must not reach a log file.

The MCP SDK's transports log whole JSON-RPC messages at DEBUG (results of HTTP and SSE downstreams, the
bodies clients send). Those records keep their first words and lose the message itself.
"""

from __future__ import annotations

import logging

#: The SDK's loggers that write whole messages, and the words that start such a record.
_MESSAGE_LOGGERS = ("mcp.client.streamable_http", "mcp.client.sse", "mcp.server.sse", "mcp.server.streamable_http")
_MESSAGE_PREFIXES = (
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
                break
        return True


_FILTER = MessageContentFilter()


def keep_message_content_out_of_logs() -> None:
    """Install the filter on the SDK's message-logging loggers (idempotent)."""
    for name in _MESSAGE_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
