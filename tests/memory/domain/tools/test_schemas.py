"""The JSON schemas: well formed, teaching, and in agreement with what the planner accepts."""

from __future__ import annotations

from typing import Any

import pytest

from strata_memory.domain.errors import ToolArgumentError, UnknownTool
from strata_memory.domain.model import Block
from strata_memory.domain.tools import ALL_TOOLS, EDIT_TOOLS, tool_schema, tool_schemas
from strata_memory.domain.tools.memory_command import COMMAND_ARGUMENTS
from tests.memory.domain.tools.helpers import plan

BLOCKS = [Block("human", "Name: Bob\nLikes tea"), Block("notes", "a\nb")]

# One successful call per label-addressed tool, using every parameter its schema lists.
VALID_CALLS: dict[str, dict[str, Any]] = {
    "core_memory_append": {"label": "human", "content": "x"},
    "core_memory_replace": {"label": "human", "old_content": "Bob", "new_content": "Al"},
    "memory_replace": {"label": "human", "old_string": "Bob", "new_string": "Al"},
    "memory_insert": {"label": "human", "new_string": "x", "insert_line": 1},
    "memory_rethink": {"label": "human", "new_memory": "x"},
}
# One successful `memory` call per command form, with every argument that form takes.
MEMORY_FORMS: dict[str, dict[str, Any]] = {
    "create": {"command": "create", "path": "/memories/new", "description": "d", "file_text": "t"},
    "str_replace": {
        "command": "str_replace",
        "path": "/memories/notes",
        "old_string": "a",
        "new_string": "A",
    },
    "insert": {"command": "insert", "path": "/memories/notes", "insert_text": "c", "insert_line": 0},
    "delete": {"command": "delete", "path": "/memories/notes"},
    "rename": {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/n2"},
    "describe": {"command": "rename", "path": "/memories/notes", "description": "d"},
}
WRONG_TYPE = {"string": 123, "integer": "7", "array": "x"}


def _parameters(name: str) -> dict[str, Any]:
    parameters: dict[str, Any] = tool_schema(name)["function"]["parameters"]
    return parameters


def test_every_tool_has_one_schema_in_order() -> None:
    assert [schema["function"]["name"] for schema in tool_schemas()] == list(ALL_TOOLS)


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_schema_shape(name: str) -> None:
    schema = tool_schema(name)
    assert schema["type"] == "function"
    function = schema["function"]
    assert set(function) == {"name", "description", "parameters"}
    parameters = function["parameters"]
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert set(parameters["required"]) <= set(parameters["properties"])
    for prop in parameters["properties"].values():
        assert prop["type"] in {"string", "integer", "array"}
        assert prop["description"]
        if prop["type"] == "array":
            assert prop["items"]["type"] == "string"


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_descriptions_teach_with_a_good_and_a_bad_example(name: str) -> None:
    description = tool_schema(name)["function"]["description"]
    assert f"Good: {name}(" in description
    assert f"Bad: {name}(" in description


@pytest.mark.parametrize("name", EDIT_TOOLS)
def test_edit_tool_descriptions_warn_about_line_numbers(name: str) -> None:
    assert "line numbers" in tool_schema(name)["function"]["description"]


def test_schemas_are_fresh_copies() -> None:
    tool_schemas()[0]["function"]["name"] = "changed"
    tool_schema("memory")["function"]["parameters"]["required"].append("x")
    assert tool_schemas()[0]["function"]["name"] == "core_memory_append"
    assert tool_schema("memory")["function"]["parameters"]["required"] == ["command"]


def test_unknown_schema_name() -> None:
    with pytest.raises(UnknownTool):
        tool_schema("nope")


def test_retrieval_schemas_follow_design() -> None:
    insert = _parameters("archival_memory_insert")
    assert insert["required"] == ["content"]
    assert set(insert["properties"]) == {"content", "tags"}
    search = _parameters("archival_memory_search")
    assert search["required"] == ["query"]
    assert set(search["properties"]) == {
        "query",
        "tags",
        "tag_match_mode",
        "top_k",
        "start_datetime",
        "end_datetime",
    }
    assert search["properties"]["tag_match_mode"]["enum"] == ["any", "all"]
    assert "default 5" in search["properties"]["top_k"]["description"]
    recall = _parameters("conversation_search")
    assert recall["required"] == ["query"]
    assert set(recall["properties"]) == {"query", "roles", "limit", "start_date", "end_date"}
    assert "default 5" in recall["properties"]["limit"]["description"]


# --- agreement between schema and planner -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(VALID_CALLS))
def test_valid_call_uses_exactly_the_schema_parameters(name: str) -> None:
    assert set(VALID_CALLS[name]) == set(_parameters(name)["properties"])
    assert plan(name, VALID_CALLS[name], BLOCKS).changes


def _cases() -> list[tuple[str, str]]:
    return [(name, param) for name in sorted(VALID_CALLS) for param in VALID_CALLS[name]]


@pytest.mark.parametrize(("name", "param"), _cases())
def test_required_and_optional_agree(name: str, param: str) -> None:
    arguments = {k: v for k, v in VALID_CALLS[name].items() if k != param}
    if param in _parameters(name)["required"]:
        with pytest.raises(ToolArgumentError) as caught:
            plan(name, arguments, BLOCKS)
        assert caught.value.field_violations == ((param, "required"),)
        with pytest.raises(ToolArgumentError):
            plan(name, {**arguments, param: None}, BLOCKS)
    else:
        assert plan(name, arguments, BLOCKS).changes
        assert plan(name, {**arguments, param: None}, BLOCKS).changes


@pytest.mark.parametrize(("name", "param"), _cases())
def test_types_agree(name: str, param: str) -> None:
    kind = _parameters(name)["properties"][param]["type"]
    with pytest.raises(ToolArgumentError) as caught:
        plan(name, {**VALID_CALLS[name], param: WRONG_TYPE[kind]}, BLOCKS)
    assert caught.value.field_violations[0][0] == param


@pytest.mark.parametrize("name", EDIT_TOOLS)
def test_no_additional_properties_agrees(name: str) -> None:
    base = VALID_CALLS.get(name, MEMORY_FORMS["delete"])
    with pytest.raises(ToolArgumentError, match="unexpected argument"):
        plan(name, {**base, "surprise": 1}, BLOCKS)


def test_memory_commands_agree_with_the_schema_enum_and_properties() -> None:
    parameters = _parameters("memory")
    assert parameters["properties"]["command"]["enum"] == list(COMMAND_ARGUMENTS)
    named = {arg for required, optional in COMMAND_ARGUMENTS.values() for arg in (*required, *optional)}
    assert named == set(parameters["properties"]) - {"command"}
    for form in MEMORY_FORMS.values():
        assert set(form) <= set(parameters["properties"])


@pytest.mark.parametrize("form", sorted(MEMORY_FORMS))
def test_memory_forms_succeed(form: str) -> None:
    assert plan("memory", MEMORY_FORMS[form], BLOCKS).changes


def _memory_cases() -> list[tuple[str, str]]:
    return [
        (form, param) for form in sorted(MEMORY_FORMS) for param in MEMORY_FORMS[form] if param != "command"
    ]


@pytest.mark.parametrize(("form", "param"), _memory_cases())
def test_memory_required_and_optional_per_command_agree(form: str, param: str) -> None:
    arguments = {k: v for k, v in MEMORY_FORMS[form].items() if k != param}
    required, optional = COMMAND_ARGUMENTS[MEMORY_FORMS[form]["command"]]
    if param in optional and form not in {"rename", "describe"}:
        assert plan("memory", arguments, BLOCKS).changes
    else:
        assert param in required or form in {"rename", "describe"}
        with pytest.raises(ToolArgumentError) as caught:
            plan("memory", arguments, BLOCKS)
        assert param in caught.value.message


@pytest.mark.parametrize(("form", "param"), _memory_cases())
def test_memory_types_agree(form: str, param: str) -> None:
    kind = _parameters("memory")["properties"][param]["type"]
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory", {**MEMORY_FORMS[form], param: WRONG_TYPE[kind]}, BLOCKS)
    assert caught.value.field_violations[0][0] == param
