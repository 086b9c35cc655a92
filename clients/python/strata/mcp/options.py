"""What a ``strata mcp`` server is asked to serve: options without the SDK, so the CLI can offer
``strata mcp`` without importing the MCP SDK until it runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from strata.client.arguments import DEFAULT_TIMEOUT

MAX_REQUEST_BYTES = 8 * 1024 * 1024
"""MemoryService's default request limit (``memory.request_bytes`` in docs/security.md)."""


@dataclass(frozen=True)
class McpOptions:
    """What a ``strata mcp`` server serves and how it reaches MemoryService.

    ``agent``: the one agent every call uses ("" lets each call choose with ``agent_id``).
    ``api_key``: the key of stdio calls (HTTP calls bring their own). ``tenant``: sent as
    ``x-strata-tenant`` over stdio, for a MemoryService without keys.
    """

    target: str
    agent: str = ""
    api_key: str | None = None
    tenant: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    client_options: Sequence[tuple[str, Any]] = field(default_factory=tuple)
