"""The three-way text merge: clean joins, conflicts with their hunks, and a property over random
non-overlapping edit pairs (the merge equals applying both edits)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_memory.domain.merge import ConflictHunk, FieldConflict, merge_field, merge_text

BASE = "name: Ada\nrole: engineer\ncity: Paris\nlikes: tea\n"


def test_changes_to_different_lines_both_land() -> None:
    current = BASE.replace("role: engineer", "role: architect")
    proposed = BASE.replace("likes: tea", "likes: coffee")
    result = merge_text(BASE, current, proposed)
    assert result.clean
    assert result.text == "name: Ada\nrole: architect\ncity: Paris\nlikes: coffee\n"


def test_the_same_line_changed_differently_is_a_conflict_with_its_hunk() -> None:
    current = BASE.replace("city: Paris", "city: Lyon")
    proposed = BASE.replace("city: Paris", "city: Nice")
    result = merge_text(BASE, current, proposed)
    assert not result.clean
    assert result.text == ""
    assert result.conflicts == (ConflictHunk(3, 3, "city: Paris\n", "city: Lyon\n", "city: Nice\n"),)
    assert "line 3 of the base" in result.conflicts[0].describe()


def test_adjacent_lines_conflict_as_in_git() -> None:
    current = BASE.replace("role: engineer", "role: architect")
    proposed = BASE.replace("city: Paris", "city: Nice")
    result = merge_text(BASE, current, proposed)
    assert [(h.base_start, h.base_end) for h in result.conflicts] == [(2, 3)]


def test_the_same_change_on_both_sides_lands_once() -> None:
    both = BASE.replace("likes: tea", "likes: mate")
    assert merge_text(BASE, both, both).text == both


def test_one_sided_changes_take_that_side() -> None:
    edited = BASE + "pets: none\n"
    assert merge_text(BASE, BASE, edited).text == edited
    assert merge_text(BASE, edited, BASE).text == edited


def test_both_inserting_at_one_place_is_a_conflict_before_that_line() -> None:
    current = "a\nX\nb\n"
    proposed = "a\nY\nb\n"
    (hunk,) = merge_text("a\nb\n", current, proposed).conflicts
    assert (hunk.base_start, hunk.base_end, hunk.base) == (2, 1, "")
    assert "insertion before line 2" in hunk.describe()


def test_a_last_line_without_newline_is_kept_as_is() -> None:
    base = "one\ntwo\nthree"
    current = "ONE\ntwo\nthree"
    proposed = "one\ntwo\nTHREE"
    assert merge_text(base, current, proposed).text == "ONE\ntwo\nTHREE"


def test_merge_field_takes_the_side_that_changed() -> None:
    assert merge_field("limit", 100, 200, 100) == 200
    assert merge_field("limit", 100, 100, 300) == 300
    assert merge_field("limit", 100, 300, 300) == 300
    assert merge_field("limit", 100, 200, 300) == FieldConflict("limit", 100, 200, 300)


LINE = st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=12)


@st.composite
def _edit_pair(draw: st.DrawFn) -> tuple[list[str], dict[int, list[str]], dict[int, list[str]]]:
    """Base lines and two edits, each replacing some lines with new ones (possibly none, or several),
    every edited line of one side at least two lines away from any of the other (one unchanged line
    between them, the anchor git's merge also needs). Every line is distinct: with repeated lines a
    line diff may align a change to another copy, so "which line changed" has no single answer."""
    pool = draw(st.lists(LINE.map(lambda s: s + "\n"), min_size=1, max_size=40, unique=True))
    size = draw(st.integers(1, min(14, len(pool))))
    base, spare = pool[:size], iter(pool[size:])
    chosen = draw(st.lists(st.sampled_from(range(size)), unique=True, max_size=size))
    sides = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    left = {i for i, side in zip(chosen, sides, strict=True) if side}
    right = {i for i in set(chosen) - left if all(abs(i - j) >= 2 for j in left)}

    def replacement() -> list[str]:
        return [line for _, line in zip(range(draw(st.integers(0, 3))), spare, strict=False)]

    return base, {i: replacement() for i in sorted(left)}, {i: replacement() for i in sorted(right)}


def _applied(base: list[str], *edits: dict[int, list[str]]) -> str:
    out: list[str] = []
    for index, line in enumerate(base):
        for edit in edits:
            if index in edit:
                out.extend(edit[index])
                break
        else:
            out.append(line)
    return "".join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_edit_pair())
def test_non_overlapping_edits_merge_to_both_applied(
    pair: tuple[list[str], dict[int, list[str]], dict[int, list[str]]],
) -> None:
    base, left, right = pair
    current, proposed = _applied(base, left), _applied(base, right)
    result = merge_text("".join(base), current, proposed)
    assert result.clean, result.conflicts
    assert result.text == _applied(base, left, right)
