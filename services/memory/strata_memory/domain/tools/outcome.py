"""What planning a memory tool call yields: the text for the LLM and the changes to apply.

The planner decides, the caller applies: every ``Change`` is already checked against budgets and the
guards, so applying it needs only the store's version check (``expected_version`` is the version of the
block the plan was made from; 0 for a block that does not exist yet).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import DEFAULT_BLOCK_LIMIT, ToolResultStyle


@dataclass(frozen=True, slots=True)
class SetValue:
    """Replace the whole value of an existing block."""

    label: str
    value: str
    expected_version: int = 0


@dataclass(frozen=True, slots=True)
class CreateBlock:
    """Create a block and attach it to this agent (at the end of its render order)."""

    label: str
    value: str
    description: str
    limit: int


@dataclass(frozen=True, slots=True)
class DeleteBlock:
    """Remove the block from this agent's memory (detach; other agents sharing it keep it)."""

    label: str
    expected_version: int = 0


@dataclass(frozen=True, slots=True)
class RenameBlock:
    """Give a block a new label (the new label was free when planned)."""

    old_label: str
    new_label: str
    expected_version: int = 0


@dataclass(frozen=True, slots=True)
class SetDescription:
    """Replace a block's description."""

    label: str
    description: str
    expected_version: int = 0


Change = SetValue | CreateBlock | DeleteBlock | RenameBlock | SetDescription


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A successful plan: ``text`` is what the LLM reads; ``changes`` are applied in order."""

    text: str
    changes: tuple[Change, ...]
    edited_label: str | None
    """The label the call changed (the new one after a rename), for the caller's response."""


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """Agent settings that shape a plan."""

    recompile_on_edit: bool
    """True under the ``on_edit`` policy: result texts then say the prompt was recompiled."""
    result_style: ToolResultStyle
    default_limit: int = DEFAULT_BLOCK_LIMIT
    """Limit of blocks the tools create (``memory create``, ``memory_rethink`` on a missing label)."""
