"""Self-editing memory tools: a pure planner, their JSON schemas and the result envelope."""

from __future__ import annotations

from .envelope import tool_envelope
from .memory_command import path_to_label
from .outcome import (
    Change,
    CreateBlock,
    DeleteBlock,
    PlanOptions,
    RenameBlock,
    SetDescription,
    SetValue,
    ToolOutcome,
)
from .planner import ALL_TOOLS, EDIT_TOOLS, RETRIEVAL_TOOLS, plan_tool_call
from .schemas import tool_schema, tool_schemas

__all__ = [
    "ALL_TOOLS",
    "EDIT_TOOLS",
    "RETRIEVAL_TOOLS",
    "Change",
    "CreateBlock",
    "DeleteBlock",
    "PlanOptions",
    "RenameBlock",
    "SetDescription",
    "SetValue",
    "ToolOutcome",
    "path_to_label",
    "plan_tool_call",
    "tool_envelope",
    "tool_schema",
    "tool_schemas",
]
