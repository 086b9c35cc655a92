"""Budgets on write, limit changes and label rules."""

from __future__ import annotations

import pytest

from strata_memory.domain.budgets import (
    MAX_LABEL_LENGTH,
    check_budget,
    check_limit_change,
    validate_label,
    validate_limit,
)
from strata_memory.domain.errors import CharLimitExceeded, ToolArgumentError
from strata_memory.domain.model import MAX_BLOCK_LIMIT, Block
from strata_serving.errors import FailedPrecondition, InvalidArgument


def test_value_exactly_at_the_limit_is_accepted() -> None:
    check_budget(Block("human", "abc", limit=5), "abcde")


def test_value_one_over_the_limit_is_refused_with_every_length_named() -> None:
    with pytest.raises(CharLimitExceeded) as caught:
        check_budget(Block("human", "abc", limit=5), "abcdef")
    error = caught.value
    assert isinstance(error, FailedPrecondition)
    assert error.reason == "CHAR_LIMIT_EXCEEDED"
    assert error.metadata == {"label": "human", "limit": "5", "current": "3", "requested": "6"}
    assert error.message == (
        "Edit failed: memory block 'human' would hold 6 characters, over its limit of 5 (it holds 3 now). "
        "Shorten the new text or remove something first."
    )


def test_budget_counts_code_points() -> None:
    block = Block("x", limit=3)
    check_budget(block, "\U0001f642e\u0301")  # emoji + e + combining mark: 3 code points, 7 bytes
    with pytest.raises(CharLimitExceeded):
        check_budget(block, "\U0001f642\U0001f642\U0001f642\U0001f642")


def test_an_over_limit_block_can_still_shrink() -> None:
    check_budget(Block("x", "a" * 10, limit=5), "a" * 5)


@pytest.mark.parametrize("limit", [1, 5, MAX_BLOCK_LIMIT])
def test_limit_in_range_is_valid(limit: int) -> None:
    assert validate_limit(limit) == limit


@pytest.mark.parametrize("limit", [0, -1, MAX_BLOCK_LIMIT + 1])
def test_limit_out_of_range_is_an_invalid_argument_naming_the_field(limit: int) -> None:
    with pytest.raises(InvalidArgument) as caught:
        validate_limit(limit)
    assert caught.value.reason == "INVALID_LIMIT"
    assert caught.value.field_violations[0][0] == "limit"


def test_limit_messages_say_the_range() -> None:
    with pytest.raises(InvalidArgument) as low:
        validate_limit(0, field="block.limit")
    assert low.value.message == "block.limit: must be positive, got 0"
    with pytest.raises(InvalidArgument) as high:
        validate_limit(MAX_BLOCK_LIMIT + 1)
    assert high.value.message == "limit: must be at most 2147483647 (int32), got 2147483648"


def test_limit_change_to_exactly_the_current_length_is_accepted() -> None:
    check_limit_change(Block("x", "abcd", limit=100), 4)


def test_limit_change_below_the_current_length_is_refused() -> None:
    with pytest.raises(CharLimitExceeded) as caught:
        check_limit_change(Block("x", "abcd", limit=100), 3)
    assert caught.value.metadata == {"label": "x", "limit": "3", "current": "4", "requested": "4"}


@pytest.mark.parametrize("limit", [0, -5, MAX_BLOCK_LIMIT + 1])
def test_limit_change_out_of_range_is_invalid_argument(limit: int) -> None:
    with pytest.raises(InvalidArgument):
        check_limit_change(Block("x"), limit)


@pytest.mark.parametrize(
    "label",
    [
        "human",
        "system/persona",
        "a/b/c",
        "日記",
        "notes-2026_v1.md",
        "x" * MAX_LABEL_LENGTH,
        "\u00e9",  # é as one code point (NFKC)
        "заметки",
        "notes/заметки",  # one script per segment
        "Ελληνικά/ἀρχή",
    ],
)
def test_valid_labels(label: str) -> None:
    assert validate_label(label) == label


@pytest.mark.parametrize(
    ("label", "problem"),
    [
        ("", "must not be empty"),
        ("/human", "start or end with '/'"),
        ("human/", "start or end with '/'"),
        ("a//b", "empty path segment"),
        ("my notes", "whitespace"),
        ("tab\there", "whitespace"),
        ("new\nline", "whitespace"),
        ("nbsp\u00a0", "whitespace"),
        ("bell\x07", "whitespace or control characters"),
        ("nul\x00", "whitespace or control characters"),
        ("surrogate\ud800", "whitespace or control characters"),
        ("a<b", "'<' or '>'"),
        ("a>b", "'<' or '>'"),
        ("hu\u200bman", "invisible, zero-width"),
        ("human\u202e", "bidi-control"),
        ("\u2066x\u2069", "U+2066"),
        ("x\ufeff", "U+FEFF"),
        ("x\u00ad", "U+00AD"),
        ("x\u3164", "U+3164"),
        ("x\ufe0f", "U+FE0F"),
        ("x\ue000", "private-use"),
        ("x\u0378", "unassigned"),
        ("e\u0301", "NFKC form (write 'é')"),  # decomposed: a look-alike of the composed label
        ("\uff48\uff55\uff4d\uff41\uff4e", "NFKC form (write 'human')"),
        ("hum\u0430n", "must not mix Cyrillic and Latin letters"),
        ("notes/p\u0430ge", "must not mix Cyrillic and Latin letters"),
        ("\u03bfk", "must not mix Greek and Latin letters"),
        ("x" * (MAX_LABEL_LENGTH + 1), "at most 200"),
    ],
)
def test_invalid_labels_name_the_field_and_the_problem(label: str, problem: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        validate_label(label, field="block.label")
    error = caught.value
    assert error.reason == "INVALID_LABEL"
    assert error.message.startswith("block.label: ")
    assert problem in error.message
    assert error.field_violations[0][0] == "block.label"


def test_validate_label_names_the_label_field_by_default() -> None:
    with pytest.raises(InvalidArgument) as caught:
        validate_label("my notes")
    assert caught.value.message == "label: must not contain whitespace or control characters, got 'my notes'"
    assert caught.value.field_violations[0][0] == "label"


def test_validate_label_raises_the_requested_error_type() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        validate_label("", field="path", error=ToolArgumentError)
    assert caught.value.reason == "INVALID_LABEL"
