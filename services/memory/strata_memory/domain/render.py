"""Render core memory into the text of the system prompt, byte-exact with Letta's formats.

Three modes for blocks (standard, line-numbered, git; see DESIGN.md "Rendering") plus the
``<directories>`` section for attached documents. Rendering never fails and never checks budgets: a
block over its limit renders with ``chars_current`` above ``chars_limit``. Nothing is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import Block, Directory, FileBlock, RenderMode
from .render_git import render_git

LINE_NUMBER_WARNING = (
    "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing. "
    "Do NOT include line number prefixes in your memory edit tool calls."
)
"""Shown above each value in line-numbered mode (Letta's CORE_MEMORY_LINE_NUMBER_WARNING)."""
LINE_NUMBER_ARROW = "→"
"""U+2192: a value line renders as ``f"{i}→ {line}"``."""

_HEADER = "<memory_blocks>\nThe following memory blocks are currently engaged in your core memory unit:\n\n"
_FOOTER = "\n</memory_blocks>"


def render_blocks(blocks: Sequence[Block], mode: RenderMode) -> str:
    """Render ``blocks`` in their given order in ``mode``.

    Standard and git return ``""`` when nothing renders; line-numbered always emits its wrapper.
    """
    if mode is RenderMode.GIT:
        return render_git(blocks)
    numbered = mode is RenderMode.LINE_NUMBERED
    if not blocks and not numbered:
        return ""
    body = "\n".join(_render_block(block, numbered=numbered) for block in blocks)
    return _HEADER + body + _FOOTER


def _render_block(block: Block, *, numbered: bool) -> str:
    """One block, ending with a newline (blocks are then joined by one more newline: a blank line)."""
    parts = [
        f"<{block.label}>\n",
        f"<description>\n{block.description}\n</description>\n",
        _metadata(block.read_only, len(block.value), block.limit),
    ]
    if numbered:
        parts.append(f"<warning>\n{LINE_NUMBER_WARNING}\n</warning>\n")
        parts.append(f"<value>\n{number_lines(block.value)}</value>\n")
    else:
        parts.append(f"<value>\n{block.value}\n</value>\n")
    parts.append(f"</{block.label}>\n")
    return "".join(parts)


def _metadata(read_only: bool, chars_current: int, chars_limit: int) -> str:
    flag = "\n- read_only=true" if read_only else ""
    return f"<metadata>{flag}\n- chars_current={chars_current}\n- chars_limit={chars_limit}\n</metadata>\n"


def number_lines(value: str) -> str:
    """``value`` as ``"1→ first\\n2→ second\\n"``; an empty value gives ``""`` (no lines at all)."""
    if not value:
        return ""
    return "".join(f"{i}{LINE_NUMBER_ARROW} {line}\n" for i, line in enumerate(value.split("\n"), start=1))


def render_directories(directories: Sequence[Directory], *, max_files_open: int | None = None) -> str:
    """The ``<directories>`` section (with its two leading newlines), or ``""`` without directories.

    Decisions where Letta differs from our model: a file's status comes from ``is_open`` (Letta infers
    it from a non-empty value); a closed file shows ``chars_current=0`` and no ``<value>``, as Letta
    shows for a closed file; every file carries ``- read_only=true`` (documents are read-only to the
    agent, as in Letta). ``<file_limits>`` appears only when ``max_files_open`` is given.
    """
    if not directories:
        return ""
    parts = ["\n\n<directories>\n"]
    if max_files_open is not None:
        open_count = sum(f.is_open for d in directories for f in d.files)
        parts.append(
            f"<file_limits>\n- current_files_open={open_count}\n- max_files_open={max_files_open}\n"
            "</file_limits>\n"
        )
    for directory in directories:
        parts.append(f'<directory name="{directory.name}">\n')
        if directory.description:
            parts.append(f"<description>{directory.description}</description>\n")
        if directory.instructions:
            parts.append(f"<instructions>{directory.instructions}</instructions>\n")
        parts.extend(_render_file(f) for f in directory.files)
        parts.append("</directory>\n")
    parts.append("</directories>")
    return "".join(parts)


def _render_file(file: FileBlock) -> str:
    status = "open" if file.is_open else "closed"
    parts = [f'<file status="{status}" name="{file.name}">\n']
    if file.description:
        parts.append(f"<description>\n{file.description}\n</description>\n")
    parts.append(_metadata(True, len(file.value) if file.is_open else 0, file.limit))
    if file.is_open:
        parts.append(f"<value>\n{file.value}\n</value>\n")
    parts.append("</file>\n")
    return "".join(parts)


def compile_memory(
    blocks: Sequence[Block],
    directories: Sequence[Directory],
    mode: RenderMode,
    *,
    max_files_open: int | None = None,
) -> str:
    """Everything core memory contributes to the system prompt: blocks, then directories."""
    return render_blocks(blocks, mode) + render_directories(directories, max_files_open=max_files_open)
