"""Secrets in a file are never stored: their values are emptied wherever they sit.

A key counts as secret by its name (``SECRET_KEYS``, any case): Letta's ``secrets`` and
``tool_exec_environment_variables`` (it exports them with empty values), and the credentials an MCP
server's configuration may carry. Agents are scrubbed at their top level and in their LLM and
embedding settings, MCP server configurations all through (not everything: a tool's JSON schema may
well name a parameter ``token``). The emptied value keeps its JSON type (``{}``, ``[]``, ``""`` or
``null``), so an exported file has the same shape; non-empty ones are reported as dropped.
"""

from __future__ import annotations

from typing import Any

SECRET_KEYS = frozenset(
    {
        "secrets",
        "tool_exec_environment_variables",
        "environment_variables",
        "env",
        "api_key",
        "token",
        "access_token",
        "refresh_token",
        "password",
        "authorization",
        "auth_header",
        "auth_token",
        "custom_headers",
    }
)


def scrub(value: Any, path: str, *, deep: bool) -> list[str]:
    """Empty every secret of ``value`` (``deep``: at any depth) in place; returns the paths of the
    non-empty ones."""
    dropped: list[str] = []
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
            continue
        if not isinstance(item, dict):
            continue
        for key, child in item.items():
            inner = f"{where}.{key}" if where else str(key)
            if str(key).lower() in SECRET_KEYS:
                if child not in (None, "", [], {}):
                    dropped.append(inner)
                item[key] = _empty_like(child)
            elif deep:
                stack.append((child, inner))
    return sorted(dropped)


def _empty_like(value: Any) -> Any:
    if isinstance(value, dict):
        return {}
    if isinstance(value, list):
        return []
    return "" if isinstance(value, str) else None
