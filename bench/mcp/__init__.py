"""What the MCP hop (``strata mcp``) costs per tool call next to calling MemoryService directly."""
