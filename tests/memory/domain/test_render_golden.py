"""Every render mode against hand-written golden files, byte for byte."""

from __future__ import annotations

import pytest

from strata_memory.domain.model import Block, RenderMode
from strata_memory.domain.render import compile_memory
from tests.memory.domain.golden_cases import CASES, UNICODE
from tests.memory.domain.golden_diff import GOLDEN_DIR, diff, expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden_file(name: str) -> None:
    actual = CASES[name]()
    assert actual == expected(name), "render differs from golden file:\n" + diff(name, actual)


def test_every_golden_file_has_a_case() -> None:
    assert {path.stem for path in GOLDEN_DIR.glob("*.txt")} == set(CASES)


def test_unicode_length_counts_code_points_not_bytes_or_graphemes() -> None:
    # 15 code points: the emoji is one, "e" + U+0301 is two, CJK characters are one each.
    assert len(UNICODE.value) == 15
    assert len(UNICODE.value.encode()) > 15


def test_git_render_keeps_trailing_spaces_and_tabs_of_a_value() -> None:
    blocks = [Block("system/persona", "me\t \n"), Block("system/notes/todo", "buy tea  \n", description="d")]
    text = compile_memory(blocks, [], RenderMode.GIT)
    assert "<projection>$MEMORY_DIR/system/persona.md</projection>\nme\t \n</self>" in text
    assert "    <description>d</description>\n    buy tea  \n  </todo>" in text
