"""A stdio MCP server that starts only once its gate file exists, as a slow `npx -y` server starts late.

    python tests/servers/gated.py GATE_FILE

Until GATE_FILE exists it reads nothing, so it cannot have answered `initialize`. Then it serves `echo`, a
prompt `greeting` and a resource `gated://readme`, and one more tool for each word the gate file holds
(`extra` → a tool `extra`; `prompt-brief` → a prompt `brief`), so a test can change its lists between starts.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

GATE = Path(sys.argv[1])
while not GATE.exists():
    time.sleep(0.05)

from mcp.server.mcpserver import MCPServer  # noqa: E402  (after the gate: nothing before it answers)
from mcp.server.mcpserver.prompts import Prompt  # noqa: E402

server = MCPServer("gated")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.prompt()
def greeting(name: str) -> str:
    """Greet someone by name."""
    return f"Say hello to {name}."


@server.resource("gated://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    return "the gated server's readme"


for word in GATE.read_text().split():
    if word.startswith("prompt-"):
        server.add_prompt(Prompt.from_function(lambda: "an extra prompt", name=word.removeprefix("prompt-")))
        continue

    def extra(text: str) -> str:
        return text.upper()

    server.add_tool(extra, name=word, description=f"the extra tool {word}")

if __name__ == "__main__":
    server.run()
