"""Pure text edits behind the memory tools: occurrences, insertion by line, and the changed region.

Lines are what ``value.split("\\n")`` gives, numbered from 1, except that an empty value has no lines
at all (Letta counts it as one empty line, which made appending to an empty block start with a
newline; line-numbered rendering shows no lines for it either).
"""

from __future__ import annotations

from dataclasses import dataclass


def split_lines(value: str) -> list[str]:
    """The value's lines; ``[]`` for an empty value."""
    return value.split("\n") if value else []


def occurrence_lines(value: str, needle: str) -> list[int]:
    """1-based lines where each non-overlapping occurrence of ``needle`` starts, without repeats.

    Unlike Letta (which looked for the needle within single lines), this also locates needles that
    span several lines. ``needle`` must not be empty.
    """
    lines: list[int] = []
    start = value.find(needle)
    while start != -1:
        line = value.count("\n", 0, start) + 1
        if not lines or lines[-1] != line:
            lines.append(line)
        start = value.find(needle, start + len(needle))
    return lines


def insert_lines(value: str, text: str, after_line: int) -> str:
    """``text``'s lines placed after line ``after_line`` (0 = before the first line).

    The caller has checked ``0 <= after_line <= len(split_lines(value))``. Inserting into an empty
    value gives ``text`` itself.
    """
    lines = split_lines(value)
    return "\n".join([*lines[:after_line], *text.split("\n"), *lines[after_line:]])


@dataclass(frozen=True, slots=True)
class Region:
    """Lines ``[start, stop)`` (0-based) of the new value that differ from the old value."""

    start: int
    stop: int


def changed_region(old: str, new: str) -> Region:
    """The smallest run of new lines outside the common leading and trailing lines of old and new.

    For a pure deletion the region is empty (``start == stop``) and sits where the lines were removed.
    """
    old_lines, new_lines = split_lines(old), split_lines(new)
    limit = min(len(old_lines), len(new_lines))
    head = 0
    while head < limit and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while tail < limit - head and old_lines[-1 - tail] == new_lines[-1 - tail]:
        tail += 1
    return Region(head, len(new_lines) - tail)
