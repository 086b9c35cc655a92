"""core_memory_append/replace and memory_replace/insert/rethink: results, every error, guards, budgets."""

from __future__ import annotations

import pytest

from strata_memory.domain.errors import (
    BlockExists,
    BlockNotFound,
    CharLimitExceeded,
    InsertLineOutOfRange,
    LineNumberPrefix,
    ReadOnlyBlock,
    TextNotFound,
    TextNotUnique,
    ToolArgumentError,
)
from strata_memory.domain.model import Block
from strata_memory.domain.tools import CreateBlock, SetValue
from tests.memory.domain.tools.helpers import GUARD_TAIL, WARNING, plan

HUMAN = Block("human", "Name: Bob\nLikes tea", limit=100, description="About the user", version=7)
RULES = Block("rules", "No spoilers.", read_only=True)
EDIT_CALLS = [
    ("core_memory_append", {"label": "rules", "content": "x"}),
    ("core_memory_replace", {"label": "rules", "old_content": "No", "new_content": "Some"}),
    ("memory_replace", {"label": "rules", "old_string": "No", "new_string": "Some"}),
    ("memory_insert", {"label": "rules", "new_string": "x"}),
    ("memory_rethink", {"label": "rules", "new_memory": "x"}),
]


# --- core_memory_append -------------------------------------------------------------------------


def test_append_adds_a_line_and_returns_the_new_value() -> None:
    outcome = plan("core_memory_append", {"label": "human", "content": "Has a cat"}, [HUMAN])
    assert outcome.text == "Name: Bob\nLikes tea\nHas a cat"
    assert outcome.changes == (SetValue("human", "Name: Bob\nLikes tea\nHas a cat", expected_version=7),)
    assert outcome.edited_label == "human"


def test_append_to_an_empty_block_gives_the_content_alone_like_insert() -> None:
    outcome = plan("core_memory_append", {"label": "human", "content": "x"}, [Block("human")])
    assert outcome.changes == (SetValue("human", "x"),)
    inserted = plan("memory_insert", {"label": "human", "new_string": "x"}, [Block("human")])
    assert inserted.changes == outcome.changes


def test_append_keeps_tabs_and_normalises_line_endings() -> None:
    outcome = plan("core_memory_append", {"label": "human", "content": "a\tb\r\nc\rd"}, [HUMAN])
    assert outcome.text == "Name: Bob\nLikes tea\na\tb\nc\nd"


def test_append_normalises_the_stored_value_it_edits() -> None:
    block = Block("human", "one\r\ntwo")
    assert plan("core_memory_append", {"label": "human", "content": "3"}, [block]).text == "one\ntwo\n3"


def test_append_exactly_to_the_limit_is_accepted() -> None:
    block = Block("b", "abc", limit=6)
    assert plan("core_memory_append", {"label": "b", "content": "de"}, [block]).text == "abc\nde"


def test_append_one_over_the_limit_is_refused_and_changes_nothing() -> None:
    block = Block("b", "abc", limit=6)
    with pytest.raises(CharLimitExceeded) as caught:
        plan("core_memory_append", {"label": "b", "content": "def"}, [block])
    assert caught.value.metadata == {"label": "b", "limit": "6", "current": "3", "requested": "7"}


def test_missing_block_names_the_available_ones() -> None:
    with pytest.raises(BlockNotFound) as caught:
        plan("core_memory_append", {"label": "nope", "content": "x"}, [HUMAN, RULES])
    assert caught.value.message == "Memory block 'nope' does not exist. Available blocks: human, rules."
    assert caught.value.reason == "BLOCK_NOT_FOUND"


@pytest.mark.parametrize(("name", "arguments"), EDIT_CALLS)
def test_read_only_blocks_are_refused_by_every_edit_tool(name: str, arguments: dict[str, object]) -> None:
    with pytest.raises(ReadOnlyBlock) as caught:
        plan(name, arguments, [RULES])
    assert caught.value.message == "This block is read-only and cannot be edited."
    assert caught.value.reason == "READ_ONLY_BLOCK"
    assert caught.value.metadata == {"label": "rules"}


# --- line-number guard ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["1→ Name: Bob", "  12→Name", "\t3→\tx", "fine\n2→ not fine", "a\n\n 10→ b\nc", "1→"],
)
def test_line_number_prefixes_are_refused(text: str) -> None:
    with pytest.raises(LineNumberPrefix) as caught:
        plan("core_memory_append", {"label": "human", "content": text}, [HUMAN])
    assert caught.value.message == f"content contains a line number prefix, {GUARD_TAIL}"
    assert caught.value.reason == "LINE_NUMBER_PREFIX"


@pytest.mark.parametrize("text", ["Step 1→2", "a→b", "→ 1", "1. first", "Line 1: x", "x 1→ y", "1 → spaced"])
def test_arrows_that_are_not_line_prefixes_are_allowed(text: str) -> None:
    assert plan("core_memory_append", {"label": "human", "content": text}, [HUMAN]).text.endswith(text)


@pytest.mark.parametrize(
    "text",
    [
        WARNING,
        f"{WARNING}\nName: Bob",
        "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing.",
    ],
)
def test_the_line_number_warning_is_refused(text: str) -> None:
    with pytest.raises(LineNumberPrefix) as caught:
        plan("memory_replace", {"label": "human", "old_string": "Bob", "new_string": text}, [HUMAN])
    assert caught.value.message == f"new_string contains a line number prefix, {GUARD_TAIL}"
    assert caught.value.metadata == {"argument": "new_string", "found": "warning"}


@pytest.mark.parametrize(
    ("name", "arguments", "guarded"),
    [
        ("core_memory_replace", {"old_content": "1→ Bob", "new_content": "x"}, "old_content"),
        ("core_memory_replace", {"old_content": "Bob", "new_content": "1→ x"}, "new_content"),
        ("memory_replace", {"old_string": "1→ Bob", "new_string": "x"}, "old_string"),
        ("memory_replace", {"old_string": "Bob", "new_string": "1→ x"}, "new_string"),
        ("memory_insert", {"new_string": "1→ x"}, "new_string"),
        ("memory_rethink", {"new_memory": "1→ x"}, "new_memory"),
    ],
)
def test_every_text_argument_is_guarded(name: str, arguments: dict[str, object], guarded: str) -> None:
    with pytest.raises(LineNumberPrefix) as caught:
        plan(name, {"label": "human", **arguments}, [HUMAN])
    assert caught.value.message == f"{guarded} contains a line number prefix, {GUARD_TAIL}"
    assert caught.value.metadata == {"argument": guarded, "found": "prefix"}


# --- core_memory_replace --------------------------------------------------------------------------


def test_core_replace_replaces_every_occurrence() -> None:
    block = Block("b", "tea, tea and more tea")
    outcome = plan(
        "core_memory_replace", {"label": "b", "old_content": "tea", "new_content": "coffee"}, [block]
    )
    assert outcome.text == "coffee, coffee and more coffee"


def test_core_replace_with_empty_new_content_deletes() -> None:
    outcome = plan(
        "core_memory_replace", {"label": "human", "old_content": "\nLikes tea", "new_content": ""}, [HUMAN]
    )
    assert outcome.text == "Name: Bob"


def test_core_replace_missing_text_uses_lettas_message() -> None:
    with pytest.raises(TextNotFound) as caught:
        plan("core_memory_replace", {"label": "human", "old_content": "Alice", "new_content": "x"}, [HUMAN])
    assert caught.value.message == "Old content 'Alice' not found in memory block 'human'"
    assert caught.value.reason == "TEXT_NOT_FOUND"


def test_core_replace_empty_old_content_is_an_argument_error_not_interleaving() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("core_memory_replace", {"label": "human", "old_content": "", "new_content": "x"}, [HUMAN])
    assert "'old_content' must not be empty" in caught.value.message
    assert caught.value.field_violations == (("old_content", "must not be empty"),)


def test_core_replace_over_budget_is_refused() -> None:
    block = Block("b", "ab ab", limit=7)
    ok = plan("core_memory_replace", {"label": "b", "old_content": "b", "new_content": "bc"}, [block])
    assert ok.text == "abc abc"  # every occurrence counts towards the budget: exactly 7
    with pytest.raises(CharLimitExceeded) as caught:
        plan("core_memory_replace", {"label": "b", "old_content": "b", "new_content": "bcd"}, [block])
    assert caught.value.metadata["requested"] == "9"


# --- memory_replace -------------------------------------------------------------------------------


def test_memory_replace_replaces_the_single_occurrence() -> None:
    outcome = plan("memory_replace", {"label": "human", "old_string": "Bob", "new_string": "Alice"}, [HUMAN])
    assert outcome.text == "Name: Alice\nLikes tea"
    assert outcome.changes == (SetValue("human", "Name: Alice\nLikes tea", expected_version=7),)


def test_memory_replace_empty_new_string_deletes() -> None:
    outcome = plan("memory_replace", {"label": "human", "old_string": "Likes tea", "new_string": ""}, [HUMAN])
    assert outcome.text == "Name: Bob\n"


def test_memory_replace_not_found_message() -> None:
    with pytest.raises(TextNotFound) as caught:
        plan("memory_replace", {"label": "human", "old_string": "bob", "new_string": "x"}, [HUMAN])
    assert caught.value.message == (
        "No replacement was performed, old_string `bob` did not appear verbatim in memory block "
        "with label `human`."
    )


@pytest.mark.parametrize(
    ("value", "old", "lines"),
    [
        ("tea\ncoffee\ntea", "tea", "[1, 3]"),
        ("x\ntea tea\ny", "tea", "[2]"),
        ("a\nb\na\nb", "a\nb", "[1, 3]"),
        ("aaaa", "aa", "[1]"),
        ("one\n\ttab\n\ttab", "\ttab", "[2, 3]"),
    ],
)
def test_memory_replace_multiple_occurrences_lists_their_lines(value: str, old: str, lines: str) -> None:
    with pytest.raises(TextNotUnique) as caught:
        plan("memory_replace", {"label": "b", "old_string": old, "new_string": "x"}, [Block("b", value)])
    assert caught.value.message == (
        f"No replacement was performed. Multiple occurrences of old_string `{old}` in lines {lines}. "
        "Please ensure it is unique."
    )
    assert caught.value.reason == "TEXT_NOT_UNIQUE"
    assert caught.value.metadata["label"] == "b"
    assert caught.value.metadata["occurrences"] == str(value.count(old))


def test_memory_replace_empty_old_string_is_an_argument_error() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory_replace", {"label": "human", "old_string": "", "new_string": "x"}, [HUMAN])
    assert caught.value.message == (
        "memory_replace: 'old_string' must not be empty; quote the exact text to replace "
        "(use an insert to add text)."
    )
    assert caught.value.field_violations == (("old_string", "must not be empty"),)


def test_memory_replace_keeps_tabs_no_expandtabs() -> None:
    block = Block("code", "def f():\n\treturn 1")
    outcome = plan(
        "memory_replace", {"label": "code", "old_string": "\treturn 1", "new_string": "\treturn 2"}, [block]
    )
    assert outcome.text == "def f():\n\treturn 2"


def test_memory_replace_matches_across_crlf() -> None:
    block = Block("b", "first\r\nsecond\r\nthird")
    outcome = plan(
        "memory_replace", {"label": "b", "old_string": "first\r\nsecond", "new_string": "1st\n2nd"}, [block]
    )
    assert outcome.text == "1st\n2nd\nthird"


def test_memory_replace_multi_line_old_string() -> None:
    block = Block("b", "a\nb\nc\nd")
    outcome = plan("memory_replace", {"label": "b", "old_string": "b\nc", "new_string": "B"}, [block])
    assert outcome.text == "a\nB\nd"


def test_memory_replace_budget() -> None:
    block = Block("b", "abc", limit=4)
    assert (
        plan("memory_replace", {"label": "b", "old_string": "c", "new_string": "cd"}, [block]).text == "abcd"
    )
    with pytest.raises(CharLimitExceeded):
        plan("memory_replace", {"label": "b", "old_string": "c", "new_string": "cde"}, [block])


# --- memory_insert --------------------------------------------------------------------------------

ABC = Block("b", "a\nb\nc")


@pytest.mark.parametrize(
    ("insert_line", "expected"),
    [
        (0, "x\na\nb\nc"),
        (1, "a\nx\nb\nc"),
        (2, "a\nb\nx\nc"),
        (3, "a\nb\nc\nx"),
        (-1, "a\nb\nc\nx"),
        (None, "a\nb\nc\nx"),
        (2.0, "a\nb\nx\nc"),
    ],
)
def test_insert_after_line(insert_line: float | None, expected: str) -> None:
    arguments: dict[str, object] = {"label": "b", "new_string": "x"}
    if insert_line is not None:
        arguments["insert_line"] = insert_line
    assert plan("memory_insert", arguments, [ABC]).text == expected


def test_insert_without_insert_line_key_appends() -> None:
    assert plan("memory_insert", {"label": "b", "new_string": "x"}, [ABC]).text == "a\nb\nc\nx"


@pytest.mark.parametrize("insert_line", [4, 100, -2, -100])
def test_insert_out_of_range_names_the_valid_range(insert_line: int) -> None:
    with pytest.raises(InsertLineOutOfRange) as caught:
        plan("memory_insert", {"label": "b", "new_string": "x", "insert_line": insert_line}, [ABC])
    assert caught.value.message == (
        f"Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines of the "
        "memory block: [0, 3], or -1 to append to the end of the memory block."
    )
    assert caught.value.reason == "INSERT_LINE_OUT_OF_RANGE"
    assert isinstance(caught.value, ToolArgumentError)
    assert caught.value.metadata == {"label": "b", "insert_line": str(insert_line), "lines": "3"}
    assert caught.value.field_violations == (("insert_line", "must be in [0, 3] or -1"),)


@pytest.mark.parametrize("insert_line", [0, -1])
def test_insert_into_an_empty_block_gives_just_the_text(insert_line: int) -> None:
    outcome = plan(
        "memory_insert", {"label": "e", "new_string": "x", "insert_line": insert_line}, [Block("e")]
    )
    assert outcome.text == "x"


def test_insert_into_an_empty_block_has_range_zero_to_zero() -> None:
    with pytest.raises(InsertLineOutOfRange) as caught:
        plan("memory_insert", {"label": "e", "new_string": "x", "insert_line": 1}, [Block("e")])
    assert "[0, 0]" in caught.value.message


def test_insert_multi_line_text_and_trailing_newline_block() -> None:
    block = Block("b", "a\n")  # two lines: "a" and ""
    assert (
        plan("memory_insert", {"label": "b", "new_string": "x\ny", "insert_line": 1}, [block]).text
        == "a\nx\ny\n"
    )
    assert plan("memory_insert", {"label": "b", "new_string": "z"}, [block]).text == "a\n\nz"


def test_insert_empty_string_adds_an_empty_line() -> None:
    assert (
        plan("memory_insert", {"label": "b", "new_string": "", "insert_line": 1}, [ABC]).text == "a\n\nb\nc"
    )


def test_insert_crlf_text_is_normalised() -> None:
    assert (
        plan("memory_insert", {"label": "b", "new_string": "x\r\ny", "insert_line": 0}, [ABC]).text
        == "x\ny\na\nb\nc"
    )


def test_insert_budget() -> None:
    block = Block("b", "ab", limit=5)
    assert plan("memory_insert", {"label": "b", "new_string": "cd"}, [block]).text == "ab\ncd"
    with pytest.raises(CharLimitExceeded):
        plan("memory_insert", {"label": "b", "new_string": "cde"}, [block])


# --- memory_rethink -------------------------------------------------------------------------------


def test_rethink_rewrites_the_whole_block() -> None:
    outcome = plan("memory_rethink", {"label": "human", "new_memory": "Name: Alice"}, [HUMAN])
    assert outcome.text == "Name: Alice"
    assert outcome.changes == (SetValue("human", "Name: Alice", expected_version=7),)


def test_rethink_creates_a_missing_block_with_the_default_limit() -> None:
    outcome = plan(
        "memory_rethink", {"label": "plans/2027", "new_memory": "Visit Kyoto"}, [HUMAN], default_limit=500
    )
    assert outcome.changes == (CreateBlock("plans/2027", "Visit Kyoto", "", 500),)
    assert outcome.edited_label == "plans/2027"
    assert outcome.text.startswith("Successfully created memory block 'plans/2027'.")


def test_rethink_create_checks_the_label() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory_rethink", {"label": "bad label", "new_memory": "x"}, [])
    assert caught.value.reason == "INVALID_LABEL"


def test_rethink_create_checks_the_budget() -> None:
    with pytest.raises(CharLimitExceeded) as caught:
        plan("memory_rethink", {"label": "new", "new_memory": "abcdef"}, [], default_limit=5)
    assert caught.value.metadata == {"label": "new", "limit": "5", "current": "0", "requested": "6"}
    assert plan("memory_rethink", {"label": "new", "new_memory": "abcde"}, [], default_limit=5).changes


def test_rethink_budget_on_existing_block() -> None:
    with pytest.raises(CharLimitExceeded):
        plan("memory_rethink", {"label": "human", "new_memory": "x" * 101}, [HUMAN])
    assert plan("memory_rethink", {"label": "human", "new_memory": "x" * 100}, [HUMAN]).changes


def test_rethink_create_guards_its_text() -> None:
    with pytest.raises(LineNumberPrefix):
        plan("memory_rethink", {"label": "new", "new_memory": "1→ x"}, [])


def test_rethink_to_empty_value_is_allowed() -> None:
    assert plan("memory_rethink", {"label": "human", "new_memory": ""}, [HUMAN]).changes == (
        SetValue("human", "", expected_version=7),
    )


def test_block_exists_is_not_raised_by_rethink_on_existing() -> None:
    # rethink on an existing label edits; BlockExists is reserved for `memory create`.
    try:
        plan("memory_rethink", {"label": "human", "new_memory": "y"}, [HUMAN])
    except BlockExists:  # pragma: no cover - the assertion below explains the failure
        pytest.fail("rethink must edit an existing block")


def test_rethink_creating_a_block_names_the_label_argument_when_the_label_is_bad() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory_rethink", {"label": "bad label", "new_memory": "x"}, [HUMAN])
    assert caught.value.message == "label: must not contain whitespace or control characters, got 'bad label'"
    assert caught.value.reason == "INVALID_LABEL"
    assert caught.value.field_violations[0][0] == "label"
