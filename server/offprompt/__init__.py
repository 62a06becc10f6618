"""offprompt: an MCP server that keeps large and sensitive tool results out of the prompt."""

__version__ = "0.1.0"

__all__ = ["__version__"]
