"""Property tests (hypothesis) for rendering and the edit tools."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_memory.domain.errors import CharLimitExceeded
from strata_memory.domain.model import Block, RenderMode, ToolResultStyle
from strata_memory.domain.render import render_blocks
from strata_memory.domain.tools import (
    ALL_TOOLS,
    CreateBlock,
    PlanOptions,
    SetValue,
    ToolOutcome,
    plan_tool_call,
)
from strata_serving.errors import StrataError

OPTIONS = PlanOptions(recompile_on_edit=True, result_style=ToolResultStyle.FULL_VALUE)
# Text an LLM might write: any characters except the arrow (so the line-number guard stays out of the
# way), "\r" (normalised away), NUL (refused on every write path) and "§", kept free to build a
# unique marker.
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="→\r§\x00"), max_size=60)
LABEL = st.sampled_from(["human", "persona", "notes/today"])
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plan(name: str, arguments: dict[str, Any], block: Block) -> Any:
    return plan_tool_call(name, json.dumps(arguments), {block.label: block}, options=OPTIONS)


def _attempt(
    name: str, arguments: str, blocks: dict[str, Block], options: PlanOptions = OPTIONS
) -> ToolOutcome | StrataError:
    """The plan, or the typed error it raised (any other exception propagates and fails the test)."""
    try:
        return plan_tool_call(name, arguments, blocks, options=options)
    except StrataError as error:
        return error


@FAST
@given(value=st.text(max_size=80), label=LABEL)
def test_line_numbered_render_round_trips(value: str, label: str) -> None:
    rendered = render_blocks([Block(label, value)], RenderMode.LINE_NUMBERED)
    lines = rendered.split("\n")
    start = lines.index("<value>") + 1
    count = len(value.split("\n")) if value else 0
    numbered = lines[start : start + count]
    stripped = [line.split("→ ", 1)[1] for line in numbered]
    assert [line.split("→ ", 1)[0] for line in numbered] == [str(i) for i in range(1, count + 1)]
    assert "\n".join(stripped) == value
    assert lines[start + count] == "</value>"


@FAST
@given(value=st.text(max_size=80), label=LABEL, read_only=st.booleans())
def test_standard_render_shows_value_verbatim_and_its_length(value: str, label: str, read_only: bool) -> None:
    rendered = render_blocks([Block(label, value, read_only=read_only)], RenderMode.STANDARD)
    assert f"<value>\n{value}\n</value>\n</{label}>\n\n</memory_blocks>" in rendered
    assert f"- chars_current={len(value)}\n" in rendered
    assert ("<metadata>\n- read_only=true\n" in rendered) == read_only


@FAST
@given(value=TEXT, content=TEXT)
def test_append_grows_by_content_plus_one(value: str, content: str) -> None:
    """Plus one for the newline between them; an empty block has no line to separate from."""
    outcome = _plan("core_memory_append", {"label": "b", "content": content}, Block("b", value))
    (change,) = outcome.changes
    assert isinstance(change, SetValue)
    assert len(change.value) == len(value) + len(content) + (1 if value else 0)
    assert change.value.startswith(value)


@FAST
@given(value=TEXT, text=TEXT, where=st.integers(min_value=-1, max_value=20))
def test_insert_then_replace_with_empty_restores_the_value(value: str, text: str, where: int) -> None:
    lines = value.split("\n") if value else []
    where = min(where, len(lines))
    new = text + "§"  # unique in the block after the insert
    block = Block("b", value)
    inserted = _plan("memory_insert", {"label": "b", "new_string": new, "insert_line": where}, block).changes[
        0
    ]
    assert isinstance(inserted, SetValue)
    after = len(lines) if where == -1 else where
    assert inserted.value.split("\n") == [*lines[:after], *new.split("\n"), *lines[after:]]
    if not lines:
        old = new
    elif after == len(lines):
        old = "\n" + new
    else:
        old = new + "\n"
    restored = _plan(
        "memory_replace",
        {"label": "b", "old_string": old, "new_string": ""},
        Block("b", inserted.value),
    ).changes[0]
    assert isinstance(restored, SetValue)
    assert restored.value == value


@FAST
@given(value=TEXT, old=TEXT.filter(bool), new=TEXT)
def test_memory_replace_changes_exactly_one_occurrence(value: str, old: str, new: str) -> None:
    arguments = json.dumps({"label": "b", "old_string": old, "new_string": new})
    result = _attempt("memory_replace", arguments, {"b": Block("b", value)})
    if isinstance(result, StrataError):
        assert value.count(old) != 1
        assert result.reason in {"TEXT_NOT_FOUND", "TEXT_NOT_UNIQUE"}
        return
    assert value.count(old) == 1
    change = result.changes[0]
    assert isinstance(change, SetValue)
    assert change.value == value.replace(old, new)


_CALLS = st.one_of(
    st.builds(lambda c: ("core_memory_append", {"label": "b", "content": c}), TEXT),
    st.builds(
        lambda o, n: ("core_memory_replace", {"label": "b", "old_content": o, "new_content": n}), TEXT, TEXT
    ),
    st.builds(lambda o, n: ("memory_replace", {"label": "b", "old_string": o, "new_string": n}), TEXT, TEXT),
    st.builds(
        lambda n, i: ("memory_insert", {"label": "b", "new_string": n, "insert_line": i}),
        TEXT,
        st.integers(-1, 5),
    ),
    st.builds(
        lambda n, lb: ("memory_rethink", {"label": lb, "new_memory": n}), TEXT, st.sampled_from(["b", "c"])
    ),
    st.builds(
        lambda t: ("memory", {"command": "create", "path": "/memories/c", "description": "", "file_text": t}),
        TEXT,
    ),
    st.builds(
        lambda t: ("memory", {"command": "insert", "path": "/memories/b", "insert_text": t}),
        TEXT,
    ),
)


@FAST
@given(value=TEXT, limit=st.integers(1, 40), default_limit=st.integers(1, 40), call=_CALLS)
def test_a_plan_never_exceeds_a_budget(
    value: str, limit: int, default_limit: int, call: tuple[str, dict[str, Any]]
) -> None:
    block = Block("b", value, limit=limit)
    options = PlanOptions(True, ToolResultStyle.SNIPPET, default_limit=default_limit)
    name, arguments = call
    result = _attempt(name, json.dumps(arguments), {"b": block}, options)
    if isinstance(result, CharLimitExceeded):
        assert int(result.metadata["requested"]) > int(result.metadata["limit"])
    if isinstance(result, StrataError):
        return
    for change in result.changes:
        if isinstance(change, SetValue):
            assert len(change.value) <= limit
        if isinstance(change, CreateBlock):
            assert len(change.value) <= change.limit == default_limit


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
_KEYS = st.sampled_from(
    [
        "label",
        "content",
        "old_content",
        "new_content",
        "old_string",
        "new_string",
        "insert_line",
        "new_memory",
        "command",
        "path",
        "file_text",
        "description",
        "insert_text",
        "old_path",
        "new_path",
        "query",
        "x",
    ]
)
_COMMANDS = st.sampled_from(["create", "str_replace", "insert", "delete", "rename", "view", ""])
_ARGUMENTS = st.one_of(
    st.text(max_size=60),
    _JSON.map(json.dumps),
    st.dictionaries(_KEYS, _JSON | _COMMANDS | LABEL, max_size=6).map(json.dumps),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from([*ALL_TOOLS, "send_message", ""]), arguments=_ARGUMENTS)
def test_garbage_arguments_only_ever_raise_strata_errors(name: str, arguments: str) -> None:
    blocks = {
        "human": Block("human", "Name: Bob\nLikes tea", limit=50),
        "notes/today": Block("notes/today", ""),
    }
    result = _attempt(name, arguments, blocks)
    if isinstance(result, StrataError):
        assert result.reason
        assert result.message
    else:
        assert result.changes


@FAST
@given(value=TEXT, text=TEXT, where=st.integers(min_value=-1, max_value=8))
def test_snippet_lines_match_the_line_numbered_render(value: str, text: str, where: int) -> None:
    where = min(where, len(value.split("\n")) if value else 0)
    options = PlanOptions(True, ToolResultStyle.SNIPPET)
    arguments = json.dumps({"label": "b", "new_string": text, "insert_line": where})
    outcome = plan_tool_call("memory_insert", arguments, {"b": Block("b", value)}, options=options)
    (change,) = outcome.changes
    assert isinstance(change, SetValue)
    rendered = render_blocks([Block("b", change.value)], RenderMode.LINE_NUMBERED).split("\n")
    snippet = outcome.text.split("\n")[1:]
    assert bool(snippet) == bool(change.value)  # an empty block shows no lines at all
    assert all(line in rendered for line in snippet if not line.startswith("... ("))
