"""The omni ``memory`` tool: create, str_replace, insert, delete and rename blocks addressed by path.

A path maps to a label the same way for every command (Letta used two different mappings): strip a
leading ``/memories/``, otherwise a leading ``/``; inner slashes are kept, so ``/memories/a/b`` is the
label ``a/b``. Arguments that belong to another command are ignored, so a model that sends every
parameter (as strict function calling does, with nulls) is not refused.
"""

from __future__ import annotations

from collections.abc import Callable

from ..budgets import validate_label
from ..errors import BlockExists, ToolArgumentError
from ..model import Block
from .arguments import Arguments, refuse_line_numbers
from .block_tools import create_block, replace_in
from .context import MemoryView
from .outcome import DeleteBlock, RenameBlock, SetDescription, ToolOutcome
from .results import deleted_text, described_text, renamed_text

MEMORY_ROOT = "/memories/"

COMMAND_ARGUMENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "create": (("path", "description"), ("file_text",)),
    "str_replace": (("path", "old_string", "new_string"), ()),
    "insert": (("path", "insert_text"), ("insert_line",)),
    "delete": (("path",), ()),
    "rename": ((), ("old_path", "new_path", "path", "description")),
}
"""Per command: (required, optional) arguments. ``rename`` needs old_path + new_path, or path +
description (to change the description instead)."""


def path_to_label(path: str, *, field: str = "path") -> str:
    """The block label a path names (see the module docstring), checked like any label."""
    label = path.removeprefix(MEMORY_ROOT) if path.startswith(MEMORY_ROOT) else path.removeprefix("/")
    return validate_label(label, field=field, error=ToolArgumentError)


def memory(args: Arguments, view: MemoryView) -> ToolOutcome:
    """Dispatch on ``command``."""
    command = args.required_str("command")
    planner = _COMMANDS.get(command)
    if planner is None:
        raise ToolArgumentError(
            f"memory: unknown command '{command}'. Supported commands: {', '.join(_COMMANDS)}.",
            field_violations=[("command", f"must be one of {', '.join(_COMMANDS)}")],
        )
    return planner(args, view)


def _purpose(command: str) -> str:
    return f"the {command} command"


def _create(args: Arguments, view: MemoryView) -> ToolOutcome:
    path = args.required_str("path", purpose=_purpose("create"))
    description = args.required_str("description", purpose=_purpose("create"))
    file_text = args.optional_str("file_text", "") or ""
    return create_block(
        view,
        path_to_label(path),
        file_text,
        description=description,
        label_field="path",
        value_field="file_text",
    )


def _str_replace(args: Arguments, view: MemoryView) -> ToolOutcome:
    path = args.required_str("path", purpose=_purpose("str_replace"))
    old = args.required_str("old_string", purpose=_purpose("str_replace"))
    new = args.required_str("new_string", purpose=_purpose("str_replace"))
    return replace_in(view, "memory", path_to_label(path), old, new)


def _insert(args: Arguments, view: MemoryView) -> ToolOutcome:
    """Like memory_insert; without ``insert_line`` the text is appended (Letta crashed here)."""
    path = args.required_str("path", purpose=_purpose("insert"))
    text = args.required_str("insert_text", purpose=_purpose("insert"))
    insert_line = args.optional_int("insert_line", -1)
    block = view.editable(path_to_label(path))
    refuse_line_numbers("insert_text", text)
    return view.insert(block, text, insert_line)


def _delete(args: Arguments, view: MemoryView) -> ToolOutcome:
    """Remove the block from this agent's memory; a missing or read-only block is an error."""
    path = args.required_str("path", purpose=_purpose("delete"))
    block = view.editable(path_to_label(path))
    return ToolOutcome(
        text=deleted_text(block.label, view.options),
        changes=(DeleteBlock(block.label, expected_version=block.version),),
        edited_label=block.label,
    )


def _rename(args: Arguments, view: MemoryView) -> ToolOutcome:
    """old_path + new_path renames; path + description changes the description. Mixing is refused."""
    renaming = args.given("old_path") or args.given("new_path")
    describing = args.given("path")
    if renaming and describing:
        raise ToolArgumentError(
            "memory: the rename command takes either old_path and new_path (to rename a block) or "
            "path and description (to change its description), not both."
        )
    if describing:
        return _describe(args, view)
    purpose = "the rename command (or path and description to change a description)"
    old_path = args.required_str("old_path", purpose=purpose)
    new_path = args.required_str("new_path", purpose=purpose)
    block = view.editable(path_to_label(old_path, field="old_path"))
    new_label = path_to_label(new_path, field="new_path")
    if new_label == block.label:
        raise ToolArgumentError(
            f"memory: old_path and new_path both name memory block '{new_label}'; nothing to rename.",
            field_violations=[("new_path", "must differ from old_path")],
        )
    if new_label in view.blocks:
        raise BlockExists(new_label)
    return ToolOutcome(
        text=renamed_text(block.label, new_label, view.options),
        changes=(RenameBlock(block.label, new_label, expected_version=block.version),),
        edited_label=new_label,
    )


def _describe(args: Arguments, view: MemoryView) -> ToolOutcome:
    purpose = "the rename command when changing a description"
    path = args.required_str("path", purpose=purpose)
    description = args.required_str("description", purpose=purpose)
    block: Block = view.editable(path_to_label(path))
    refuse_line_numbers("description", description)
    return ToolOutcome(
        text=described_text(block.label, view.options),
        changes=(SetDescription(block.label, description, expected_version=block.version),),
        edited_label=block.label,
    )


_COMMANDS: dict[str, Callable[[Arguments, MemoryView], ToolOutcome]] = {
    "create": _create,
    "str_replace": _str_replace,
    "insert": _insert,
    "delete": _delete,
    "rename": _rename,
}
