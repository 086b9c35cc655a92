"""plan_tool_call's front door: tool names, JSON decoding, argument typing, purity."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest

from strata_memory.domain.errors import RetrievalUnavailable, ToolArgumentError, UnknownTool
from strata_memory.domain.model import Block, ToolResultStyle
from strata_memory.domain.tools import ALL_TOOLS, EDIT_TOOLS, RETRIEVAL_TOOLS, PlanOptions, plan_tool_call
from strata_serving.errors import InvalidArgument, NotFound, Unavailable
from tests.memory.domain.tools.helpers import plan

HUMAN = Block("human", "Name: Bob", limit=100)


def test_tool_name_constants() -> None:
    assert EDIT_TOOLS == (
        "core_memory_append",
        "core_memory_replace",
        "memory_replace",
        "memory_insert",
        "memory_rethink",
        "memory",
    )
    assert RETRIEVAL_TOOLS == ("archival_memory_insert", "archival_memory_search", "conversation_search")
    assert ALL_TOOLS == EDIT_TOOLS + RETRIEVAL_TOOLS


def test_unknown_tool_lists_every_tool() -> None:
    with pytest.raises(UnknownTool) as caught:
        plan("send_message", {"message": "hi"}, [HUMAN])
    assert isinstance(caught.value, NotFound)
    assert caught.value.reason == "UNKNOWN_TOOL"
    assert caught.value.message == f"Unknown tool 'send_message'. Available tools: {', '.join(ALL_TOOLS)}."


@pytest.mark.parametrize("name", RETRIEVAL_TOOLS)
def test_retrieval_tools_are_not_available_yet(name: str) -> None:
    with pytest.raises(RetrievalUnavailable) as caught:
        plan(name, {"query": "x", "content": "y"}, [HUMAN])
    assert isinstance(caught.value, Unavailable)
    assert caught.value.reason == "RETRIEVAL_UNAVAILABLE"
    assert caught.value.message.startswith(f"{name} is not available yet")
    assert caught.value.metadata == {"tool": name}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"label": "human", "content": ',
            "Arguments for core_memory_append are not valid JSON: Expecting value",
        ),
        (
            "{label: human}",
            "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
        ),
        ("[1, 2]", "Arguments for core_memory_append must be a JSON object, got an array."),
        ('"text"', "must be a JSON object, got a string."),
        ("42", "must be a JSON object, got a number."),
        ("null", "must be a JSON object, got null."),
        ("true", "must be a JSON object, got a boolean."),
    ],
)
def test_malformed_json_is_an_argument_error(text: str, message: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("core_memory_append", text, [HUMAN])
    assert message in caught.value.message
    assert caught.value.reason == "INVALID_TOOL_ARGUMENTS"
    assert isinstance(caught.value, InvalidArgument)


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_empty_arguments_mean_no_arguments(text: str) -> None:
    with pytest.raises(ToolArgumentError, match=re.escape("core_memory_append: 'label' is required.")):
        plan("core_memory_append", text, [HUMAN])


def test_raw_newlines_and_tabs_inside_json_strings_are_accepted() -> None:
    text = '{"label": "human", "content": "line one\nline\ttwo"}'
    assert plan("core_memory_append", text, [HUMAN]).text == "Name: Bob\nline one\nline\ttwo"


def test_deeply_nested_json_is_an_argument_error_not_a_recursion_crash() -> None:
    with pytest.raises(ToolArgumentError):
        plan("core_memory_append", "[" * 100_000 + "]" * 100_000, [HUMAN])


def test_huge_integer_literal_is_an_argument_error() -> None:
    with pytest.raises(ToolArgumentError):
        plan(
            "memory_insert",
            '{"label": "human", "new_string": "x", "insert_line": ' + "9" * 5000 + "}",
            [HUMAN],
        )


def test_unexpected_arguments_are_named_with_the_expected_ones() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory_replace", {"label": "human", "old_str": "Bob", "new_str": "Al"}, [HUMAN])
    assert caught.value.message == (
        "memory_replace got unexpected argument(s) 'new_str', 'old_str'; "
        "its arguments are: label, old_string, new_string."
    )
    assert caught.value.field_violations == (
        ("new_str", "unexpected argument"),
        ("old_str", "unexpected argument"),
    )


@pytest.mark.parametrize(
    ("value", "kind"),
    [(5, "a number"), (True, "a boolean"), (["x"], "an array"), ({"a": 1}, "an object"), (1.5, "a number")],
)
def test_mistyped_string_argument(value: object, kind: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("core_memory_append", {"label": "human", "content": value}, [HUMAN])
    assert caught.value.message == f"core_memory_append: 'content' must be a string, got {kind}."
    assert caught.value.field_violations == (("content", "must be a string"),)


@pytest.mark.parametrize("value", ["2", True, 1.5, [1], float("inf")])
def test_mistyped_integer_argument(value: object) -> None:
    with pytest.raises(ToolArgumentError, match="'insert_line' must be an integer"):
        plan_tool_call(
            "memory_insert",
            {"label": "human", "new_string": "x", "insert_line": value},
            {"human": HUMAN},
            options=PlanOptions(True, ToolResultStyle.FULL_VALUE),
        )


def test_null_required_argument_counts_as_missing() -> None:
    with pytest.raises(ToolArgumentError, match="'content' is required"):
        plan("core_memory_append", {"label": "human", "content": None}, [HUMAN])


def test_decoded_mapping_is_accepted_and_never_mutated() -> None:
    arguments = {"label": "human", "content": "x\r\ny"}
    blocks = {"human": HUMAN}
    outcome = plan_tool_call(
        "core_memory_append", arguments, blocks, options=PlanOptions(True, ToolResultStyle.FULL_VALUE)
    )
    assert outcome.text == "Name: Bob\nx\ny"
    assert arguments == {"label": "human", "content": "x\r\ny"}
    assert blocks == {"human": HUMAN}


def test_mapping_with_non_string_keys_is_refused() -> None:
    bad_keys = cast(dict[str, Any], {1: "x"})
    with pytest.raises(ToolArgumentError, match="string keys"):
        plan_tool_call(
            "core_memory_append", bad_keys, {}, options=PlanOptions(True, ToolResultStyle.FULL_VALUE)
        )


def test_argument_errors_come_before_block_lookup() -> None:
    with pytest.raises(ToolArgumentError):
        plan("core_memory_append", {"label": "ghost"}, [])
