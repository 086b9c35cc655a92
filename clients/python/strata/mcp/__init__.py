"""An MCP server for Strata's memory (``strata mcp``): the memory tools exactly as MemoryService's
``ListTools`` serves them, the agent's rendered memory, system prompt and blocks as resources, over
stdio or streamable HTTP, each request acting as its caller's Strata API key. See docs/agents.md.

:mod:`strata.mcp.server` builds and runs it (``serve_stdio``, ``serve_http``, ``http_app``);
:mod:`strata.mcp.options` holds its options and imports no SDK."""
