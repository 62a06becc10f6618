"""The user's MCP servers behind offprompt: starting them, sessions to them, routing calls."""
