"""An MCP server for Strata's memory (``strata mcp``): the memory tools exactly as MemoryService's
``ListTools`` serves them, the agent's rendered memory, system prompt and blocks as resources, over
stdio or streamable HTTP, each request acting as its caller's Strata API key. See docs/agents.md."""

from strata.mcp.server import McpOptions, build_server, http_app, serve_http, serve_stdio

__all__ = ["McpOptions", "build_server", "http_app", "serve_http", "serve_stdio"]
