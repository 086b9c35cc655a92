"""The omni `memory` tool: every command, path mapping, errors and recompile-truthful texts."""

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
from strata_memory.domain.tools import (
    CreateBlock,
    DeleteBlock,
    RenameBlock,
    SetDescription,
    SetValue,
    path_to_label,
)
from tests.memory.domain.tools.helpers import GUARD_TAIL, plan

NOTES = Block("notes", "a\nb", description="Notes", version=3)
NESTED = Block("project/x", "one\ntwo\none", version=5)
RULES = Block("rules", "No spoilers.", read_only=True)
ALL = [NOTES, NESTED, RULES]


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("/memories/notes", "notes"),
        ("/memories/project/x", "project/x"),
        ("/notes", "notes"),
        ("/project/x", "project/x"),
        ("notes", "notes"),
        ("project/x", "project/x"),
        ("/memories/memories/y", "memories/y"),
        ("memories/notes", "memories/notes"),
    ],
)
def test_path_to_label(path: str, label: str) -> None:
    assert path_to_label(path) == label


@pytest.mark.parametrize(
    "path", ["/memories/", "/", "", "//notes", "/memories//x", "/memories/a b", "/notes/"]
)
def test_bad_paths_are_argument_errors(path: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        path_to_label(path)
    assert caught.value.reason == "INVALID_LABEL"
    assert caught.value.field_violations[0][0] == "path"


NESTED_PATH_CALLS = [
    ("str_replace", {"old_string": "two", "new_string": "2"}),
    ("insert", {"insert_text": "three"}),
    ("delete", {}),
    ("rename", {"description": "X"}),
]


@pytest.mark.parametrize(("command", "arguments"), NESTED_PATH_CALLS)
@pytest.mark.parametrize("path", ["/memories/project/x", "/project/x", "project/x"])
def test_every_command_maps_nested_paths_the_same_way(
    command: str, arguments: dict[str, object], path: str
) -> None:
    outcome = plan("memory", {"command": command, "path": path, **arguments}, ALL)
    assert outcome.edited_label == "project/x"


def test_rename_maps_nested_paths_too() -> None:
    outcome = plan(
        "memory",
        {"command": "rename", "old_path": "/memories/project/x", "new_path": "/memories/archive/x"},
        ALL,
    )
    assert outcome.changes == (RenameBlock("project/x", "archive/x", expected_version=5),)


# --- create -------------------------------------------------------------------------------------


def test_create_with_text() -> None:
    outcome = plan(
        "memory",
        {
            "command": "create",
            "path": "/memories/coding/prefs",
            "description": "How the user codes",
            "file_text": "Type hints\teverywhere\r\n",
        },
        ALL,
        default_limit=300,
    )
    assert outcome.changes == (
        CreateBlock("coding/prefs", "Type hints\teverywhere\n", "How the user codes", 300),
    )
    assert outcome.edited_label == "coding/prefs"
    assert outcome.text == (
        "Successfully created memory block 'coding/prefs'. "
        "Your system prompt has been recompiled with the new memory block."
    )


def test_create_without_text_or_with_null_text_is_empty() -> None:
    for extra in ({}, {"file_text": None}):
        outcome = plan("memory", {"command": "create", "path": "/memories/n", "description": "", **extra}, [])
        assert outcome.changes == (CreateBlock("n", "", "", 100_000),)


def test_create_under_explicit_recompile_says_when_it_takes_effect() -> None:
    outcome = plan(
        "memory", {"command": "create", "path": "/memories/n", "description": "d"}, [], recompile=False
    )
    assert outcome.text == (
        "Successfully created memory block 'n'. It will appear at the next recompile of your system prompt; "
        "your current prompt is unchanged."
    )


def test_create_existing_is_block_exists() -> None:
    with pytest.raises(BlockExists) as caught:
        plan("memory", {"command": "create", "path": "/memories/notes", "description": "d"}, ALL)
    assert caught.value.message == "Memory block 'notes' already exists."
    assert caught.value.reason == "BLOCK_EXISTS"


@pytest.mark.parametrize("command", ["delete", "insert", "str_replace"])
def test_a_missing_path_names_its_command(command: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory", {"command": command}, ALL)
    assert caught.value.message == f"memory: 'path' is required for the {command} command."


@pytest.mark.parametrize("missing", ["path", "description"])
def test_create_requires_path_and_description(missing: str) -> None:
    arguments = {"command": "create", "path": "/memories/n", "description": "d"}
    del arguments[missing]
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory", arguments, [])
    assert caught.value.message == f"memory: '{missing}' is required for the create command."
    assert caught.value.field_violations == ((missing, "required"),)


def test_create_over_the_default_limit_is_refused() -> None:
    with pytest.raises(CharLimitExceeded) as caught:
        plan(
            "memory",
            {"command": "create", "path": "n", "description": "", "file_text": "abcd"},
            [],
            default_limit=3,
        )
    assert caught.value.metadata == {"label": "n", "limit": "3", "current": "0", "requested": "4"}


@pytest.mark.parametrize(("field", "value"), [("file_text", "1→ x"), ("description", "ok\n2→ x")])
def test_create_guards_its_texts(field: str, value: str) -> None:
    arguments = {"command": "create", "path": "n", "description": "", field: value}
    with pytest.raises(LineNumberPrefix) as caught:
        plan("memory", arguments, [])
    assert caught.value.message == f"{field} contains a line number prefix, {GUARD_TAIL}"


# --- str_replace / insert -------------------------------------------------------------------------


def test_str_replace() -> None:
    outcome = plan(
        "memory",
        {"command": "str_replace", "path": "/memories/notes", "old_string": "b", "new_string": "B"},
        ALL,
    )
    assert outcome.changes == (SetValue("notes", "a\nB", expected_version=3),)
    assert outcome.text == "a\nB"


def test_str_replace_errors_match_memory_replace() -> None:
    with pytest.raises(TextNotFound):
        plan("memory", {"command": "str_replace", "path": "notes", "old_string": "z", "new_string": ""}, ALL)
    with pytest.raises(TextNotUnique) as caught:
        plan(
            "memory",
            {"command": "str_replace", "path": "project/x", "old_string": "one", "new_string": ""},
            ALL,
        )
    assert "in lines [1, 3]" in caught.value.message
    with pytest.raises(ReadOnlyBlock):
        plan("memory", {"command": "str_replace", "path": "rules", "old_string": "No", "new_string": ""}, ALL)
    with pytest.raises(ToolArgumentError, match="'old_string' must not be empty"):
        plan("memory", {"command": "str_replace", "path": "notes", "old_string": "", "new_string": "x"}, ALL)


@pytest.mark.parametrize("missing", ["path", "old_string", "new_string"])
def test_str_replace_requires_its_arguments(missing: str) -> None:
    arguments = {"command": "str_replace", "path": "notes", "old_string": "a", "new_string": "b"}
    del arguments[missing]
    with pytest.raises(ToolArgumentError, match=f"'{missing}' is required for the str_replace command"):
        plan("memory", arguments, ALL)


def test_insert_without_insert_line_appends_instead_of_crashing() -> None:
    outcome = plan("memory", {"command": "insert", "path": "/memories/notes", "insert_text": "c"}, ALL)
    assert outcome.text == "a\nb\nc"


def test_insert_with_null_insert_line_appends() -> None:
    outcome = plan(
        "memory", {"command": "insert", "path": "notes", "insert_text": "c", "insert_line": None}, ALL
    )
    assert outcome.text == "a\nb\nc"


def test_insert_at_line() -> None:
    outcome = plan(
        "memory", {"command": "insert", "path": "notes", "insert_text": "0", "insert_line": 0}, ALL
    )
    assert outcome.text == "0\na\nb"


def test_insert_errors() -> None:
    with pytest.raises(InsertLineOutOfRange, match=r"\[0, 2\]"):
        plan("memory", {"command": "insert", "path": "notes", "insert_text": "c", "insert_line": 3}, ALL)
    with pytest.raises(LineNumberPrefix, match=r"^insert_text contains a line number prefix"):
        plan("memory", {"command": "insert", "path": "notes", "insert_text": "3→ c"}, ALL)
    with pytest.raises(ToolArgumentError, match="'insert_text' is required for the insert command"):
        plan("memory", {"command": "insert", "path": "notes"}, ALL)
    with pytest.raises(ToolArgumentError, match="'insert_line' must be an integer, got a string"):
        plan("memory", {"command": "insert", "path": "notes", "insert_text": "c", "insert_line": "2"}, ALL)
    with pytest.raises(BlockNotFound):
        plan("memory", {"command": "insert", "path": "ghost", "insert_text": "c"}, ALL)


# --- delete ---------------------------------------------------------------------------------------


def test_delete() -> None:
    outcome = plan("memory", {"command": "delete", "path": "/memories/notes"}, ALL)
    assert outcome.changes == (DeleteBlock("notes", expected_version=3),)
    assert outcome.text == (
        "Successfully deleted memory block 'notes'. "
        "Your system prompt has been recompiled without this memory block."
    )


def test_delete_under_explicit_recompile() -> None:
    outcome = plan("memory", {"command": "delete", "path": "notes"}, ALL, recompile=False)
    assert outcome.text == (
        "Successfully deleted memory block 'notes'. It will disappear at the next recompile of your "
        "system prompt; your current prompt is unchanged."
    )


def test_delete_missing_is_an_error_not_a_success() -> None:
    with pytest.raises(BlockNotFound, match="Memory block 'ghost' does not exist"):
        plan("memory", {"command": "delete", "path": "/memories/ghost"}, ALL)


def test_delete_read_only_is_refused() -> None:
    with pytest.raises(ReadOnlyBlock):
        plan("memory", {"command": "delete", "path": "rules"}, ALL)


# --- rename / description -------------------------------------------------------------------------


def test_rename() -> None:
    outcome = plan(
        "memory", {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/journal"}, ALL
    )
    assert outcome.changes == (RenameBlock("notes", "journal", expected_version=3),)
    assert outcome.edited_label == "journal"
    assert outcome.text == (
        "Successfully renamed memory block 'notes' to 'journal'. "
        "Your system prompt has been recompiled with the renamed memory block."
    )


def test_rename_under_explicit_recompile() -> None:
    outcome = plan(
        "memory", {"command": "rename", "old_path": "notes", "new_path": "journal"}, ALL, recompile=False
    )
    assert outcome.text.endswith(
        "The new name will show at the next recompile of your system prompt; "
        "your current prompt is unchanged."
    )


def test_rename_onto_an_existing_label_is_block_exists() -> None:
    with pytest.raises(BlockExists, match="'project/x' already exists"):
        plan("memory", {"command": "rename", "old_path": "notes", "new_path": "/memories/project/x"}, ALL)


def test_rename_to_itself_is_refused() -> None:
    with pytest.raises(ToolArgumentError, match="nothing to rename"):
        plan("memory", {"command": "rename", "old_path": "/memories/notes", "new_path": "/notes"}, ALL)


def test_rename_errors() -> None:
    with pytest.raises(BlockNotFound):
        plan("memory", {"command": "rename", "old_path": "ghost", "new_path": "x"}, ALL)
    with pytest.raises(ReadOnlyBlock):
        plan("memory", {"command": "rename", "old_path": "rules", "new_path": "x"}, ALL)
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory", {"command": "rename", "old_path": "notes", "new_path": "bad label"}, ALL)
    assert caught.value.field_violations[0][0] == "new_path"
    with pytest.raises(ToolArgumentError, match="'new_path' is required for the rename command"):
        plan("memory", {"command": "rename", "old_path": "notes"}, ALL)
    with pytest.raises(ToolArgumentError, match="'old_path' is required for the rename command"):
        plan("memory", {"command": "rename"}, ALL)


def test_rename_with_both_forms_is_refused() -> None:
    with pytest.raises(ToolArgumentError, match="not both"):
        plan(
            "memory",
            {"command": "rename", "old_path": "notes", "new_path": "j", "path": "notes", "description": "d"},
            ALL,
        )


def test_change_description() -> None:
    outcome = plan("memory", {"command": "rename", "path": "/memories/notes", "description": "My notes"}, ALL)
    assert outcome.changes == (SetDescription("notes", "My notes", expected_version=3),)
    assert outcome.text == (
        "Successfully updated description of memory block 'notes'. "
        "Your system prompt has been recompiled with the updated description."
    )


def test_change_description_errors() -> None:
    with pytest.raises(ToolArgumentError, match="'description' is required"):
        plan("memory", {"command": "rename", "path": "notes"}, ALL)
    with pytest.raises(ReadOnlyBlock):
        plan("memory", {"command": "rename", "path": "rules", "description": "x"}, ALL)
    with pytest.raises(LineNumberPrefix, match=r"^description contains"):
        plan("memory", {"command": "rename", "path": "notes", "description": "1→ x"}, ALL)


def test_change_description_under_explicit_recompile() -> None:
    outcome = plan("memory", {"command": "rename", "path": "notes", "description": "d"}, ALL, recompile=False)
    assert outcome.text.endswith(
        "The new description will show at the next recompile of your system prompt; "
        "your current prompt is unchanged."
    )


# --- command dispatch -----------------------------------------------------------------------------


def test_unknown_command_lists_the_supported_ones() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        plan("memory", {"command": "view", "path": "notes"}, ALL)
    assert caught.value.message == (
        "memory: unknown command 'view'. Supported commands: create, str_replace, insert, delete, rename."
    )


def test_command_is_required() -> None:
    with pytest.raises(ToolArgumentError, match="'command' is required"):
        plan("memory", {"path": "notes"}, ALL)


def test_strict_mode_calls_with_every_parameter_null_are_accepted() -> None:
    everything = dict.fromkeys(
        [
            "path",
            "file_text",
            "description",
            "old_string",
            "new_string",
            "insert_line",
            "insert_text",
            "old_path",
            "new_path",
        ]
    )
    arguments = {
        **everything,
        "command": "str_replace",
        "path": "notes",
        "old_string": "a",
        "new_string": "A",
    }
    assert plan("memory", arguments, ALL).text == "A\nb"
