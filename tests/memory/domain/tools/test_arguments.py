"""Tool arguments as an LLM emits them: decoded, typed, and refused with a message naming the argument.

DESIGN.md: tools are executed by name with JSON arguments; a failing tool returns a clear message and
a structured reason and changes nothing; line endings are normalised to \\n, tabs kept; a line-number
prefix (``^[ \\t]*\\d+→[ \\t]*``, multiline) or the line-number warning text is refused with "… contains
a line number prefix, which is not allowed. Do not include line numbers when calling memory tools (line
numbers are for display purposes only)."
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from strata_memory.domain.errors import LineNumberPrefix, ToolArgumentError
from strata_memory.domain.tools.arguments import Arguments, decode_arguments, refuse_line_numbers
from tests.memory.domain.tools.helpers import GUARD_TAIL, WARNING

NAMES = ("text", "count", "tags", "flag")


def _refused(call: Callable[[], object]) -> ToolArgumentError:
    with pytest.raises(ToolArgumentError) as caught:
        call()
    return caught.value


# --- decode_arguments --------------------------------------------------------------------------


def test_json_text_is_decoded_with_raw_control_characters() -> None:
    assert decode_arguments("t", '{"text": "a\tb\nc", "count": 2}') == {"text": "a\tb\nc", "count": 2}


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_blank_text_is_no_arguments(text: str) -> None:
    assert decode_arguments("t", text) == {}


def test_a_mapping_is_taken_as_is() -> None:
    assert decode_arguments("t", {"text": "x"}) == {"text": "x"}


def test_invalid_json_names_the_tool_and_the_place() -> None:
    error = _refused(lambda: decode_arguments("memory_insert", '{"text": }'))
    assert error.message == (
        "Arguments for memory_insert are not valid JSON: Expecting value (line 1, column 10)."
    )
    assert error.reason == "INVALID_TOOL_ARGUMENTS"


def test_json_too_deep_to_decode_is_refused() -> None:
    error = _refused(lambda: decode_arguments("t", "[" * 100_000 + "]" * 100_000))
    assert error.message.startswith("Arguments for t are not valid JSON: ")


@pytest.mark.parametrize(
    ("text", "named"),
    [("[1]", "an array"), ('"x"', "a string"), ("3", "a number"), ("true", "a boolean"), ("null", "null")],
)
def test_arguments_must_be_an_object(text: str, named: str) -> None:
    assert _refused(lambda: decode_arguments("t", text)).message == (
        f"Arguments for t must be a JSON object, got {named}."
    )


def test_keys_must_be_strings() -> None:
    assert (
        _refused(lambda: decode_arguments("t", cast("dict[str, Any]", {1: "x"}))).message
        == "Arguments for t must have string keys."
    )


@pytest.mark.parametrize(
    "arguments",
    [
        '{"text": "a\\ud800b"}',
        '{"text": ["ok", {"k": "\\udc00"}]}',
        '{"text": {"\\ud800": "v"}}',
        '{"te\\udfffxt": "v"}',
        {"text": ("ok", "\ud800")},
    ],
)
def test_lone_surrogates_are_refused_at_any_depth(arguments: Any) -> None:
    error = _refused(lambda: decode_arguments("t", arguments))
    assert (
        "holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not a character;"
        in error.message
    )
    assert error.message.endswith("send the character itself or a valid pair.")
    assert error.field_violations[0][1] == "holds a lone surrogate"


def test_a_lone_surrogate_in_a_name_is_shown_replaced() -> None:
    error = _refused(lambda: decode_arguments("t", '{"a\\ud800": 1}'))
    assert error.message.startswith("Arguments for t: 'a\ufffd' holds a lone surrogate")
    assert error.field_violations == (("a\ufffd", "holds a lone surrogate"),)


def test_a_surrogate_pair_is_a_character() -> None:
    assert decode_arguments("t", '{"text": "\\ud83d\\ude00"}') == {"text": "😀"}


@pytest.mark.parametrize(
    "arguments",
    ['{"text": "a\\u0000"}', '{"text": ["x", {"k": "\\u0000"}]}', '{"text": {"\\u0000": 1}}'],
)
def test_nul_is_refused_anywhere(arguments: str) -> None:
    error = _refused(lambda: decode_arguments("memory_rethink", arguments))
    assert error.reason == "NUL_CHARACTER"
    assert error.message == "memory_rethink: 'text' must not contain a NUL character (U+0000)."
    assert error.field_violations == (("text", "must not contain a NUL character (U+0000)"),)


def test_nul_in_a_name_is_refused() -> None:
    assert _refused(lambda: decode_arguments("t", '{"a\\u0000": 1}')).reason == "NUL_CHARACTER"


def test_deep_nesting_without_problems_is_fine() -> None:
    deep: Any = "ok"
    for _ in range(5000):
        deep = [{"k": deep}]
    assert decode_arguments("t", {"text": deep})["text"] is deep


# --- Arguments ---------------------------------------------------------------------------------


def test_unknown_arguments_are_listed_with_the_allowed_ones() -> None:
    error = _refused(lambda: Arguments("memory_insert", {"zeta": 1, "alpha": 2, "text": "x"}, NAMES))
    assert error.message == (
        "memory_insert got unexpected argument(s) 'alpha', 'zeta'; "
        "its arguments are: text, count, tags, flag."
    )
    assert error.field_violations == (("alpha", "unexpected argument"), ("zeta", "unexpected argument"))


def test_required_str() -> None:
    args = Arguments("t", {"text": "a\r\nb\rc\td"}, NAMES)
    assert args.required_str("text") == "a\nb\nc\td"
    assert args.tool == "t"


@pytest.mark.parametrize("values", [{}, {"text": None}])
def test_required_str_missing(values: dict[str, Any]) -> None:
    args = Arguments("t", values, NAMES)
    error = _refused(lambda: args.required_str("text"))
    assert error.message == "t: 'text' is required."
    assert error.field_violations == (("text", "required"),)
    assert (
        _refused(lambda: args.required_str("text", purpose="create")).message
        == "t: 'text' is required for create."
    )


@pytest.mark.parametrize(
    ("value", "named"), [(3, "a number"), (["x"], "an array"), ({"a": 1}, "an object"), (False, "a boolean")]
)
def test_strings_must_be_strings(value: Any, named: str) -> None:
    args = Arguments("t", {"text": value}, NAMES)
    for read in (lambda: args.required_str("text"), lambda: args.optional_str("text")):
        error = _refused(read)
        assert error.message == f"t: 'text' must be a string, got {named}."
        assert error.field_violations == (("text", "must be a string"),)


def test_optional_str() -> None:
    assert Arguments("t", {}, NAMES).optional_str("text") is None
    assert Arguments("t", {"text": None}, NAMES).optional_str("text", "d") == "d"
    assert Arguments("t", {"text": "a\r\n"}, NAMES).optional_str("text", "d") == "a\n"
    assert Arguments("t", {"text": ""}, NAMES).optional_str("text", "d") == ""


@pytest.mark.parametrize(("value", "expected"), [(None, 9), (0, 0), (-1, -1), (5, 5), (5.0, 5), (-2.0, -2)])
def test_optional_int(value: Any, expected: int) -> None:
    assert Arguments("t", {"count": value}, NAMES).optional_int("count", 9) == expected


@pytest.mark.parametrize(
    ("value", "named"), [(True, "a boolean"), ("5", "a string"), (5.5, "a number"), ([5], "an array")]
)
def test_optional_int_refuses_non_integers(value: Any, named: str) -> None:
    error = _refused(lambda: Arguments("t", {"count": value}, NAMES).optional_int("count", 0))
    assert error.message == f"t: 'count' must be an integer, got {named}."
    assert error.field_violations == (("count", "must be an integer"),)


def test_optional_str_list() -> None:
    assert Arguments("t", {}, NAMES).optional_str_list("tags") == []
    assert Arguments("t", {"tags": None}, NAMES).optional_str_list("tags") == []
    assert Arguments("t", {"tags": "one"}, NAMES).optional_str_list("tags") == ["one"]
    assert Arguments("t", {"tags": ["a", "b"]}, NAMES).optional_str_list("tags") == ["a", "b"]
    assert Arguments("t", {"tags": []}, NAMES).optional_str_list("tags") == []


@pytest.mark.parametrize(
    ("value", "named"), [(["a", 1], "an array"), (3, "a number"), ({"a": "b"}, "an object")]
)
def test_optional_str_list_refuses_others(value: Any, named: str) -> None:
    error = _refused(lambda: Arguments("t", {"tags": value}, NAMES).optional_str_list("tags"))
    assert error.message == f"t: 'tags' must be an array of strings, got {named}."
    assert error.field_violations == (("tags", "must be an array of strings"),)


def test_given() -> None:
    args = Arguments("t", {"text": "", "flag": None, "count": 0}, NAMES)
    assert args.given("text")
    assert args.given("count")
    assert not args.given("flag")
    assert not args.given("tags")


def test_an_unnamed_json_type_is_named_by_its_class() -> None:
    error = _refused(lambda: Arguments("t", {"text": b"x"}, NAMES).required_str("text"))
    assert error.message == "t: 'text' must be a string, got bytes."


# --- refuse_line_numbers -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["1→ Bob", "ok\n  12→\tBob", "\t3→x", "7→"])
def test_line_number_prefix_is_refused(text: str) -> None:
    with pytest.raises(LineNumberPrefix) as caught:
        refuse_line_numbers("new_string", text)
    assert caught.value.message == f"new_string contains a line number prefix, {GUARD_TAIL}"
    assert caught.value.metadata == {"argument": "new_string", "found": "prefix"}
    assert caught.value.reason == "LINE_NUMBER_PREFIX"


@pytest.mark.parametrize("text", [WARNING, "see: " + WARNING.split(". ")[0] + " and more"])
def test_the_warning_text_is_refused(text: str) -> None:
    with pytest.raises(LineNumberPrefix) as caught:
        refuse_line_numbers("content", text)
    assert caught.value.message == f"content contains a line number prefix, {GUARD_TAIL}"
    assert caught.value.metadata == {"argument": "content", "found": "warning"}


@pytest.mark.parametrize("text", ["", "Bob → Alice", "a 1→ b", "step 1-> 2", "x1→ y", "# NOTE: shown below"])
def test_ordinary_text_passes(text: str) -> None:
    refuse_line_numbers("content", text)
