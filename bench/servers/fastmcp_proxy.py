"""FastMCP's `create_proxy` in front of one stdio server: `python -m bench.servers.fastmcp_proxy CMD ARG...`.

The reference point for a general-purpose proxy's per-call cost.
"""

import os
import sys

from fastmcp.server import create_proxy


def main() -> None:
    command, *args = sys.argv[1:]
    # The child gets this process's environment, as offprompt's proxy gives it (PYTHONPATH, PATH for node).
    server = {"command": command, "args": args, "env": dict(os.environ)}
    proxy = create_proxy({"mcpServers": {"down": server}}, name="fastmcp-proxy")
    proxy.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
