"""``plan_tool_call``: from a tool name and the LLM's raw arguments to a checked plan, without I/O.

The planner reads the agent's current blocks and returns the result text plus the changes to apply;
it never mutates anything. Every failure is a typed :class:`StrataError` from ``domain.errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import RetrievalUnavailable, UnknownTool
from ..model import Block
from . import block_tools
from .arguments import Arguments, decode_arguments
from .context import MemoryView
from .memory_command import memory
from .outcome import PlanOptions, ToolOutcome
from .schemas import parameter_names

EDIT_TOOLS = (
    "core_memory_append",
    "core_memory_replace",
    "memory_replace",
    "memory_insert",
    "memory_rethink",
    "memory",
)
"""Tools that edit core memory; planned here."""
RETRIEVAL_TOOLS = ("archival_memory_insert", "archival_memory_search", "conversation_search")
"""Tools that need RetrievalService; listed in the schemas, executed elsewhere."""
ALL_TOOLS = EDIT_TOOLS + RETRIEVAL_TOOLS

_PLANNERS: dict[str, Callable[[Arguments, MemoryView], ToolOutcome]] = {
    "core_memory_append": block_tools.core_memory_append,
    "core_memory_replace": block_tools.core_memory_replace,
    "memory_replace": block_tools.memory_replace,
    "memory_insert": block_tools.memory_insert,
    "memory_rethink": block_tools.memory_rethink,
    "memory": memory,
}


def plan_tool_call(
    name: str,
    arguments: str | Mapping[str, Any],
    blocks: Mapping[str, Block],
    *,
    options: PlanOptions,
) -> ToolOutcome:
    """Plan one memory tool call against ``blocks`` (the agent's core memory by label).

    ``arguments`` is the JSON text exactly as the LLM emitted it, or an already decoded mapping.
    Raises ``UnknownTool`` for a name that is no memory tool, ``RetrievalUnavailable`` for the
    retrieval tools, ``ToolArgumentError`` for malformed arguments, and the edit's own errors
    (``BlockNotFound``, ``BlockExists``, ``ReadOnlyBlock``, ``LineNumberPrefix``, ``TextNotFound``,
    ``TextNotUnique``, ``CharLimitExceeded``...).
    """
    if name in RETRIEVAL_TOOLS:
        raise RetrievalUnavailable(
            f"{name} is not available yet: archival and conversation search need the retrieval "
            "service, which this deployment does not provide. Core memory tools work as usual.",
            metadata={"tool": name},
        )
    planner = _PLANNERS.get(name)
    if planner is None:
        raise UnknownTool(name, known=ALL_TOOLS)
    args = Arguments(name, decode_arguments(name, arguments), parameter_names(name))
    return planner(args, MemoryView(blocks, options))
