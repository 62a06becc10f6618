"""offprompt: an MCP server that keeps large and sensitive tool results out of the prompt.

The root stays light: `import offprompt.errors` loads nothing else of the package. `wrap` and its middleware
load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from offprompt._version import __version__

if TYPE_CHECKING:
    from offprompt.middleware import OffPromptMiddleware, wrap

__all__ = ["OffPromptMiddleware", "__version__", "wrap"]


def __getattr__(name: str) -> Any:
    if name in ("wrap", "OffPromptMiddleware"):
        from offprompt import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module 'offprompt' has no attribute {name!r}")
