"""Serving offprompt to clients: the MCP server, stdio with its fast lane, streamable HTTP and SSE."""
