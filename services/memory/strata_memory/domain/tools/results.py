"""The texts a successful memory tool returns to the LLM.

Value edits return the block's whole new value (Letta's behaviour) or, when the agent asks for
``SNIPPET``, a few numbered lines around the edit. Create, delete, rename and description changes say
truthfully when the change reaches the system prompt: now (``on_edit`` recompiles after the edit) or
at the next recompile (``explicit``).
"""

from __future__ import annotations

from ..model import ToolResultStyle
from ..render import LINE_NUMBER_ARROW
from .outcome import PlanOptions
from .text import changed_region, split_lines

SNIPPET_CONTEXT_LINES = 4
"""Unchanged lines shown before and after the edited region (Letta's SNIPPET_LINES)."""
SNIPPET_MAX_LINES = 40
"""Longest snippet; a bigger edited region is cut with a note saying how many lines were left out."""


def edit_text(label: str, old_value: str, new_value: str, limit: int, options: PlanOptions) -> str:
    """What a value edit returns: the new value, or a snippet of it (see :class:`ToolResultStyle`)."""
    if options.result_style is ToolResultStyle.FULL_VALUE:
        return new_value
    return snippet(label, old_value, new_value, limit)


def snippet(label: str, old_value: str, new_value: str, limit: int) -> str:
    """A header with the block's size, then the edited lines with context, numbered as rendered."""
    lines = split_lines(new_value)
    header = (
        f"Edited memory block '{label}' (now {len(new_value)} of {limit} characters, {len(lines)} lines)."
    )
    if not lines:
        return header + " It is now empty."
    region = changed_region(old_value, new_value)
    first = max(0, region.start - SNIPPET_CONTEXT_LINES)
    stop = min(len(lines), max(region.stop, region.start) + SNIPPET_CONTEXT_LINES)
    shown = min(stop, first + SNIPPET_MAX_LINES)
    body = "".join(f"{i + 1}{LINE_NUMBER_ARROW} {lines[i]}\n" for i in range(first, shown))
    more = f"... ({stop - shown} more edited lines not shown)\n" if shown < stop else ""
    return (
        f"{header} Lines {first + 1}-{shown} after the edit (line numbers are for display only):\n"
        f"{body}{more}"
    ).rstrip("\n")


def _when(options: PlanOptions, now: str, later: str) -> str:
    if options.recompile_on_edit:
        return f" Your system prompt has been recompiled {now}."
    return f" {later} at the next recompile of your system prompt; your current prompt is unchanged."


def created_text(label: str, options: PlanOptions) -> str:
    return f"Successfully created memory block '{label}'." + _when(
        options, "with the new memory block", "It will appear"
    )


def deleted_text(label: str, options: PlanOptions) -> str:
    return f"Successfully deleted memory block '{label}'." + _when(
        options, "without this memory block", "It will disappear"
    )


def renamed_text(old_label: str, new_label: str, options: PlanOptions) -> str:
    return f"Successfully renamed memory block '{old_label}' to '{new_label}'." + _when(
        options, "with the renamed memory block", "The new name will show"
    )


def described_text(label: str, options: PlanOptions) -> str:
    return f"Successfully updated description of memory block '{label}'." + _when(
        options, "with the updated description", "The new description will show"
    )
