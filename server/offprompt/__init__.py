"""offprompt: an MCP server that keeps large and sensitive tool results out of the prompt."""

__version__ = "0.1.0"

from offprompt.wrap import OffPromptMiddleware, wrap

__all__ = ["OffPromptMiddleware", "__version__", "wrap"]
