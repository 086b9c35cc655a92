"""Calling the planner the way ExecuteTool will: JSON text in, a plan or a typed error out."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from strata_memory.domain.model import DEFAULT_BLOCK_LIMIT, Block, ToolResultStyle
from strata_memory.domain.tools import PlanOptions, ToolOutcome, plan_tool_call

FULL = ToolResultStyle.FULL_VALUE
SNIPPET = ToolResultStyle.SNIPPET
GUARD_TAIL = (
    "which is not allowed. Do not include line numbers when calling memory tools "
    "(line numbers are for display purposes only)."
)
WARNING = (
    "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing. "
    "Do NOT include line number prefixes in your memory edit tool calls."
)


def plan(
    name: str,
    arguments: Mapping[str, Any] | str,
    blocks: Iterable[Block] = (),
    *,
    style: ToolResultStyle = FULL,
    recompile: bool = True,
    default_limit: int = DEFAULT_BLOCK_LIMIT,
) -> ToolOutcome:
    """Plan ``name``; a mapping is sent as JSON text, exactly as an LLM would emit it."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return plan_tool_call(
        name,
        text,
        {block.label: block for block in blocks},
        options=PlanOptions(recompile_on_edit=recompile, result_style=style, default_limit=default_limit),
    )
