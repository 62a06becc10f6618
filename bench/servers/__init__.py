"""Small MCP servers the bench spawns as peers: a bare hello-world and a FastMCP proxy."""
