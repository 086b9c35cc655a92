"""Result texts: FULL_VALUE returns the value, SNIPPET a numbered window around the edit."""

from __future__ import annotations

from strata_memory.domain.model import Block
from strata_memory.domain.tools.results import SNIPPET_MAX_LINES
from tests.memory.domain.tools.helpers import SNIPPET, plan

TEN = Block("b", "\n".join(f"line {i}" for i in range(1, 11)), limit=1000)


def test_snippet_shows_four_lines_of_context_around_the_edit() -> None:
    outcome = plan(
        "memory_replace", {"label": "b", "old_string": "line 6", "new_string": "six"}, [TEN], style=SNIPPET
    )
    assert outcome.text == (
        "Edited memory block 'b' (now 67 of 1000 characters, 10 lines). "
        "Lines 2-10 after the edit (line numbers are for display only):\n"
        "2→ line 2\n3→ line 3\n4→ line 4\n5→ line 5\n6→ six\n7→ line 7\n8→ line 8\n9→ line 9\n10→ line 10"
    )


def test_snippet_at_the_top_is_clipped() -> None:
    outcome = plan(
        "memory_insert", {"label": "b", "new_string": "zero", "insert_line": 0}, [TEN], style=SNIPPET
    )
    assert outcome.text.splitlines()[1:] == ["1→ zero", "2→ line 1", "3→ line 2", "4→ line 3", "5→ line 4"]
    assert "Lines 1-5 after the edit" in outcome.text


def test_snippet_for_a_deletion_shows_the_surrounding_lines() -> None:
    outcome = plan(
        "memory_replace", {"label": "b", "old_string": "line 5\n", "new_string": ""}, [TEN], style=SNIPPET
    )
    assert outcome.text.splitlines()[1:] == [
        "1→ line 1",
        "2→ line 2",
        "3→ line 3",
        "4→ line 4",
        "5→ line 6",
        "6→ line 7",
        "7→ line 8",
        "8→ line 9",
    ]


def test_snippet_of_an_emptied_block() -> None:
    outcome = plan("memory_rethink", {"label": "b", "new_memory": ""}, [TEN], style=SNIPPET)
    assert outcome.text == "Edited memory block 'b' (now 0 of 1000 characters, 0 lines). It is now empty."


def test_snippet_of_a_big_rewrite_is_cut() -> None:
    new = "\n".join(f"new {i}" for i in range(100))
    outcome = plan("memory_rethink", {"label": "b", "new_memory": new}, [TEN], style=SNIPPET)
    lines = outcome.text.splitlines()
    assert len(lines) == 1 + SNIPPET_MAX_LINES + 1
    assert lines[-1] == "... (60 more edited lines not shown)"
    assert lines[1] == "1→ new 0"


def test_snippet_counts_code_points() -> None:
    block = Block("u", "🙂", limit=10)
    outcome = plan("core_memory_append", {"label": "u", "content": "é"}, [block], style=SNIPPET)
    assert outcome.text.startswith("Edited memory block 'u' (now 3 of 10 characters, 2 lines).")


def test_full_value_is_the_bare_value() -> None:
    outcome = plan("core_memory_append", {"label": "b", "content": "x"}, [Block("b", "a")])
    assert outcome.text == "a\nx"
