"""The one place offprompt reads the MCP SDK past its public API.

mcp 2.3.0 (`mcp>=2.3,<3` in pyproject): a low-level handler gets a `ServerRequestContext` whose `session` is a
`ServerSession` built afresh for each request. Its public properties read the client's `Connection`
(`protocol_version`, `client_capabilities`), but the connection itself is only the private
`ServerSession._connection`: `mcp.server.context.Context.connection` is public but, by its own docstring, not
constructed by the `ServerRunner` that calls the handlers.

offprompt needs the connection for what outlives one request: one object per client to hold weakly (whom to
tell of changed lists, resource updates, a task's status), the connection's standalone stream (a `per_session`
server's requests between calls), and its `state` and `exit_stack` (end that server's processes with the
session). Drop this module once the SDK hands handlers the connection (`ctx.connection`).
"""

from __future__ import annotations

from mcp.server.connection import Connection
from mcp.server.session import ServerSession


def connection_of(session: ServerSession) -> Connection | None:
    """The client connection `session` belongs to; None for a session of another shape (a test's stand-in)."""
    connection = getattr(session, "_connection", None)
    return connection if isinstance(connection, Connection) else None
