"""The pure text helpers behind the tools."""

from __future__ import annotations

import pytest

from strata_memory.domain.tools.text import (
    Region,
    changed_region,
    insert_lines,
    occurrence_lines,
    split_lines,
)


def test_split_lines() -> None:
    assert split_lines("") == []
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a", ""]
    assert split_lines("\n") == ["", ""]


@pytest.mark.parametrize(
    ("value", "needle", "lines"),
    [
        ("abc", "x", []),
        ("a\nb\na", "a", [1, 3]),
        ("a\na\na\na", "a", [1, 2, 3, 4]),
        ("aa\nb", "a", [1]),
        ("aaa", "aa", [1]),
        ("x\na\ncab", "a\nc", [2]),
        ("\n\n", "\n", [1, 2]),
    ],
)
def test_occurrence_lines(value: str, needle: str, lines: list[int]) -> None:
    assert occurrence_lines(value, needle) == lines


def test_insert_lines() -> None:
    assert insert_lines("", "x", 0) == "x"
    assert insert_lines("a", "x\ny", 1) == "a\nx\ny"
    assert insert_lines("a\nb", "x", 1) == "a\nx\nb"


@pytest.mark.parametrize(
    ("old", "new", "region"),
    [
        ("a\nb\nc", "a\nB\nc", Region(1, 2)),
        ("a\nb\nc", "a\nc", Region(1, 1)),
        ("a\nc", "a\nb\nc", Region(1, 2)),
        ("", "x", Region(0, 1)),
        ("x", "", Region(0, 0)),
        ("a\na", "a\na\na", Region(2, 3)),
        ("same", "same", Region(1, 1)),
    ],
)
def test_changed_region(old: str, new: str, region: Region) -> None:
    assert changed_region(old, new) == region
