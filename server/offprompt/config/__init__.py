"""The config file: the `mcpServers` block MCP clients already write, plus offprompt's own `offprompt` block.

`load_config(path)` reads a file, `parse_config(data)` a dict already in memory. A problem with the file as a
whole or with the `offprompt` block raises `ConfigError`. A problem inside one server's block only drops that
server: it lands in `LoadedConfig.problems` and the other servers still serve. Every message names the key as a
dotted path (`mcpServers.fs.tools.read_file.off_prompt`), the line it is on, and what is allowed.

Blocks pasted from Claude Desktop, Cursor, Claude Code (`.mcp.json`), VS Code (`servers`, `inputs`), Cline,
Roo Code, Windsurf (`serverUrl`) and Gemini CLI (`httpUrl`) load as they are: their transport keys (`type`,
`transportType`) pick the transport, their `envFile` is read, and their client-side keys (`autoApprove`,
`alwaysAllow`, ...) are ignored. The file may hold `//` and `/* */` comments and trailing commas (JSONC), as
VS Code's `mcp.json` does.

`${VAR}`, `${env:VAR}` and `${VAR:-default}` in any string value come from the environment, so secrets stay out of
the file; `$${` writes a literal `${`.
"""

from offprompt.config.models import (
    ChromaSettings,
    HttpServer,
    LoadedConfig,
    OffPrompt,
    OffpromptSettings,
    SecretsMode,
    ServerConfig,
    StdioServer,
    ToolPolicy,
    Transport,
    redact_dsn,
    unknown_tool_entries,
    unknown_tool_message,
)
from offprompt.config.parsing import load_config, parse_config

__all__ = [
    "ChromaSettings",
    "HttpServer",
    "LoadedConfig",
    "OffPrompt",
    "OffpromptSettings",
    "SecretsMode",
    "ServerConfig",
    "StdioServer",
    "ToolPolicy",
    "Transport",
    "load_config",
    "parse_config",
    "redact_dsn",
    "unknown_tool_entries",
    "unknown_tool_message",
]
