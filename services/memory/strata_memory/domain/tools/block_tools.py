"""The label-addressed edit tools: core_memory_append/replace and memory_replace/insert/rethink.

Each planner checks, in order: arguments (presence, types, emptiness), that the block exists, that it
is not read-only, the line-number guard on every text argument, the edit itself, then the budget.
"""

from __future__ import annotations

from ..budgets import check_budget, validate_label
from ..errors import BlockExists, TextNotFound, ToolArgumentError
from ..model import Block
from .arguments import Arguments, refuse_line_numbers
from .context import MemoryView, current_value
from .outcome import CreateBlock, ToolOutcome
from .results import created_text


def core_memory_append(args: Arguments, memory: MemoryView) -> ToolOutcome:
    """Value becomes ``value + "\\n" + content``; an empty block becomes ``content`` alone.

    An empty block has no lines (see ``text.split_lines``), so appending to it gives the same value
    as ``memory_insert`` at the end would; Letta's leading newline there is not kept.
    """
    label = args.required_str("label")
    content = args.required_str("content")
    block = memory.editable(label)
    refuse_line_numbers("content", content)
    value = current_value(block)
    return memory.set_value(block, value + "\n" + content if value else content)


def core_memory_replace(args: Arguments, memory: MemoryView) -> ToolOutcome:
    """Replace every occurrence of ``old_content``; an empty ``new_content`` deletes it.

    An empty ``old_content`` is refused (Letta would interleave ``new_content`` between every
    character of the block).
    """
    label = args.required_str("label")
    old = args.required_str("old_content")
    new = args.required_str("new_content")
    if not old:
        raise ToolArgumentError(
            "core_memory_replace: 'old_content' must not be empty; name the exact text to replace "
            "(use core_memory_append to add text).",
            field_violations=[("old_content", "must not be empty")],
        )
    block = memory.editable(label)
    refuse_line_numbers("old_content", old)
    refuse_line_numbers("new_content", new)
    value = current_value(block)
    if old not in value:
        raise TextNotFound(
            f"Old content '{old}' not found in memory block '{label}'", metadata={"label": label}
        )
    return memory.set_value(block, value.replace(old, new))


def memory_replace(args: Arguments, memory: MemoryView) -> ToolOutcome:
    """Replace exactly one occurrence of ``old_string``; an empty ``new_string`` deletes it."""
    label = args.required_str("label")
    old = args.required_str("old_string")
    new = args.required_str("new_string")
    return replace_in(memory, args.tool, label, old, new)


def replace_in(memory: MemoryView, tool: str, label: str, old: str, new: str) -> ToolOutcome:
    """The shared body of ``memory_replace`` and ``memory`` ``str_replace``."""
    if not old:
        raise ToolArgumentError(
            f"{tool}: 'old_string' must not be empty; quote the exact text to replace "
            "(use an insert to add text).",
            field_violations=[("old_string", "must not be empty")],
        )
    block = memory.editable(label)
    refuse_line_numbers("old_string", old)
    refuse_line_numbers("new_string", new)
    return memory.replace_unique(block, old, new, old_name="old_string")


def memory_insert(args: Arguments, memory: MemoryView) -> ToolOutcome:
    """Insert ``new_string`` after line ``insert_line`` (1-based; 0 = top; -1, the default = end)."""
    label = args.required_str("label")
    text = args.required_str("new_string")
    insert_line = args.optional_int("insert_line", -1)
    block = memory.editable(label)
    refuse_line_numbers("new_string", text)
    return memory.insert(block, text, insert_line)


def memory_rethink(args: Arguments, memory: MemoryView) -> ToolOutcome:
    """Rewrite the whole block with ``new_memory``; create it (default limit) if the label is new."""
    label = args.required_str("label")
    new_memory = args.required_str("new_memory")
    if label not in memory.blocks:
        return create_block(
            memory, label, new_memory, description="", label_field="label", value_field="new_memory"
        )
    block = memory.editable(label)
    refuse_line_numbers("new_memory", new_memory)
    return memory.set_value(block, new_memory)


def create_block(
    memory: MemoryView,
    label: str,
    value: str,
    *,
    description: str,
    label_field: str,
    value_field: str,
) -> ToolOutcome:
    """Plan a new block with the agent's default limit; the label must be well formed and free."""
    validate_label(label, field=label_field, error=ToolArgumentError)
    if label in memory.blocks:
        raise BlockExists(label)
    refuse_line_numbers(value_field, value)
    refuse_line_numbers("description", description)
    limit = memory.options.default_limit
    check_budget(Block(label, limit=limit), value)
    return ToolOutcome(
        text=created_text(label, memory.options),
        changes=(CreateBlock(label, value, description, limit),),
        edited_label=label,
    )
