"""The agent's memory as a tool sees it while planning: lookups, guards and edit outcomes."""

from __future__ import annotations

from collections.abc import Mapping

from ..budgets import check_budget
from ..errors import BlockNotFound, InsertLineOutOfRange, ReadOnlyBlock, TextNotFound, TextNotUnique
from ..model import Block
from ..newlines import normalise_newlines
from .outcome import PlanOptions, SetValue, ToolOutcome
from .results import edit_text
from .text import insert_lines, occurrence_lines, split_lines


class MemoryView:
    """Read-only access to the blocks by label, plus the shared steps of every value edit."""

    def __init__(self, blocks: Mapping[str, Block], options: PlanOptions) -> None:
        self.blocks = blocks
        self.options = options

    def find(self, label: str) -> Block:
        """The block with ``label``, or :class:`BlockNotFound` listing the labels that exist."""
        block = self.blocks.get(label)
        if block is None:
            raise BlockNotFound(label, available=tuple(self.blocks))
        return block

    def editable(self, label: str) -> Block:
        """The block with ``label`` if the agent may change it (not read-only)."""
        block = self.find(label)
        if block.read_only:
            raise ReadOnlyBlock(label)
        return block

    def set_value(self, block: Block, new_value: str) -> ToolOutcome:
        """Plan writing ``new_value`` into ``block``, after the budget check."""
        check_budget(block, new_value)
        return ToolOutcome(
            text=edit_text(block.label, current_value(block), new_value, block.limit, self.options),
            changes=(SetValue(block.label, new_value, expected_version=block.version),),
            edited_label=block.label,
        )

    def replace_unique(self, block: Block, old: str, new: str, *, old_name: str) -> ToolOutcome:
        """Replace the single occurrence of ``old``; none or several are refused with Letta's texts."""
        value = current_value(block)
        count = value.count(old)
        if count == 0:
            raise TextNotFound(
                f"No replacement was performed, {old_name} `{old}` did not appear verbatim in memory "
                f"block with label `{block.label}`.",
                metadata={"label": block.label},
            )
        if count > 1:
            lines = occurrence_lines(value, old)
            raise TextNotUnique(
                f"No replacement was performed. Multiple occurrences of {old_name} `{old}` in lines "
                f"{lines}. Please ensure it is unique.",
                metadata={"label": block.label, "occurrences": count},
            )
        return self.set_value(block, value.replace(old, new, 1))

    def insert(self, block: Block, text: str, insert_line: int) -> ToolOutcome:
        """Insert ``text`` after line ``insert_line`` (0 = top, -1 = end)."""
        value = current_value(block)
        line_count = len(split_lines(value))
        after = line_count if insert_line == -1 else insert_line
        if not 0 <= after <= line_count:
            raise InsertLineOutOfRange(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines "
                f"of the memory block: [0, {line_count}], or -1 to append to the end of the memory block.",
                metadata={"label": block.label, "insert_line": insert_line, "lines": line_count},
                field_violations=[("insert_line", f"must be in [0, {line_count}] or -1")],
            )
        return self.set_value(block, insert_lines(value, text, after))


def current_value(block: Block) -> str:
    """The block's value as tools edit it: with its line endings normalised to ``\\n``."""
    return normalise_newlines(block.value)
