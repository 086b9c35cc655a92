"""Strategies that reach every branch of every memory tool planner, and a check that they do.

Random text almost never makes ``memory_replace`` see its old string twice (150 examples never did),
so the cases here are built around the branch they aim at: the old string planted 0, 1 or 2+ times,
insert lines in and out of range, budgets just big enough or just too small, read-only blocks, line
number prefixes, NUL characters, missing and existing labels. Each example states which branch it
reached (hypothesis ``event``, shown by ``--hypothesis-show-statistics``); the test fails unless
every branch listed in ``BRANCHES`` was reached, and none that is not, and each outcome is checked
against the value it was planned on.
``STRATA_FUZZ_EXAMPLES`` raises the examples (``make fuzz``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from strata_memory.domain.model import Block, ToolResultStyle
from strata_memory.domain.tools import CreateBlock, PlanOptions, SetValue, plan_tool_call
from strata_serving.errors import StrataError

EXAMPLES = max(12, int(os.environ.get("STRATA_FUZZ_EXAMPLES", "0")) // 4)
"""Examples per (planner, aimed branch): 56 pairs, so 672 by default."""
PLENTY = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OPTIONS = PlanOptions(recompile_on_edit=True, result_style=ToolResultStyle.FULL_VALUE, default_limit=60)
WORD = st.text(st.characters(codec="utf-8", exclude_characters="→\r§\n\x00"), min_size=1, max_size=8)
LINE = st.text(st.characters(codec="utf-8", exclude_characters="→\r§\n\x00"), max_size=12)
WRITES = {"LINE_NUMBER_PREFIX", "NUL_CHARACTER"}
"""Refusals of the text a call writes."""
EDIT_REASONS = {"OK", "READ_ONLY_BLOCK", "CHAR_LIMIT_EXCEEDED", "BLOCK_NOT_FOUND", *WRITES}
BRANCHES: dict[str, set[str]] = {
    "core_memory_append": EDIT_REASONS,
    "core_memory_replace": EDIT_REASONS | {"TEXT_NOT_FOUND"},
    "memory_replace": EDIT_REASONS | {"TEXT_NOT_FOUND", "TEXT_NOT_UNIQUE"},
    "memory_insert": EDIT_REASONS | {"INSERT_LINE_OUT_OF_RANGE"},
    "memory_rethink": {"OK", "OK:created", "READ_ONLY_BLOCK", "CHAR_LIMIT_EXCEEDED", *WRITES},
    "memory:create": {"OK:created", "BLOCK_EXISTS", "CHAR_LIMIT_EXCEEDED", *WRITES},
    "memory:str_replace": EDIT_REASONS | {"TEXT_NOT_FOUND", "TEXT_NOT_UNIQUE"},
    "memory:insert": EDIT_REASONS | {"INSERT_LINE_OUT_OF_RANGE"},
    "memory:delete": {"OK", "BLOCK_NOT_FOUND", "READ_ONLY_BLOCK"},
    "memory:rename": {"OK", "BLOCK_EXISTS", "BLOCK_NOT_FOUND", "READ_ONLY_BLOCK"},
}


@dataclass(frozen=True)
class Case:
    tool: str
    branch_of: str
    """The tool, or ``memory:<command>``."""
    arguments: dict[str, Any]
    block: Block
    """The block named ``b``; an ``other`` block always exists beside it (for exists/rename)."""


AIMS = [(name, aim) for name, branches in BRANCHES.items() for aim in sorted(branches)]


@st.composite
def cases(draw: st.DrawFn, branch_of: str, aim: str) -> Case:
    """A call aimed at one branch of one planner: the inputs that branch needs are set (read-only,
    a missing label, the old string planted 0, 1 or 2+ times, no room left, a copied line number,
    an insert line out of range), everything else is random. Where two checks both apply, the
    planner picks; the test only demands that every branch is reached by some case."""
    tool, _, command = branch_of.partition(":")
    old = draw(WORD)
    times = {"TEXT_NOT_FOUND": 0, "TEXT_NOT_UNIQUE": draw(st.integers(2, 3))}.get(aim, 1)
    lines = [line for line in draw(st.lists(LINE, max_size=4)) if old not in line]
    value = "\n".join(draw(st.permutations([*lines, *([old] * times)])))
    room = 0 if aim == "CHAR_LIMIT_EXCEEDED" else draw(st.sampled_from([5, 400]))
    block = Block("b", value, limit=len(value) + room, read_only=aim == "READ_ONLY_BLOCK")
    word = draw(WORD)
    text = {
        "CHAR_LIMIT_EXCEEDED": word * 70,
        "LINE_NUMBER_PREFIX": f"1→ {word}",
        "NUL_CHARACTER": f"{word}\x00",
    }.get(aim, word)
    name = "missing" if aim in ("BLOCK_NOT_FOUND", "OK:created") else "b"
    line_count = len(value.split("\n")) if value else 0
    out_of_range = draw(st.sampled_from([-3, -2, line_count + 1, line_count + 5]))
    line = out_of_range if aim == "INSERT_LINE_OUT_OF_RANGE" else draw(st.integers(-1, line_count))
    if tool == "core_memory_append":
        return Case(tool, branch_of, {"label": name, "content": text}, block)
    if tool == "core_memory_replace":
        return Case(tool, branch_of, {"label": name, "old_content": old, "new_content": text}, block)
    if tool == "memory_replace":
        return Case(tool, branch_of, {"label": name, "old_string": old, "new_string": text}, block)
    if tool == "memory_insert":
        return Case(tool, branch_of, {"label": name, "new_string": text, "insert_line": line}, block)
    if tool == "memory_rethink":
        return Case(tool, branch_of, {"label": name, "new_memory": text}, block)
    path = f"/memories/{name}"
    taken = "/memories/other" if aim == "BLOCK_EXISTS" else "/memories/new"
    commands: dict[str, dict[str, Any]] = {
        "create": {"path": "/memories/b" if aim == "BLOCK_EXISTS" else "/memories/new", "description": ""},
        "str_replace": {"path": path, "old_string": old, "new_string": text},
        "insert": {"path": path, "insert_line": line, "insert_text": text},
        "delete": {"path": path},
        "rename": {"old_path": path, "new_path": taken},
    }
    arguments = commands[command]
    if command == "create":
        arguments["file_text"] = text
    return Case("memory", branch_of, {"command": command, **arguments}, block)


def branch_reached(case: Case) -> str:
    """Plan the case; check the outcome against the block it was planned on; name the branch."""
    blocks = {"b": case.block, "other": Block("other", "x")}
    refusal: StrataError | None
    try:
        outcome = plan_tool_call(case.tool, json.dumps(case.arguments), blocks, options=OPTIONS)
    except StrataError as refused:
        refusal = refused
    else:
        refusal = None
    if refusal is not None:
        assert refusal.reason
        assert refusal.message
        return refusal.reason
    assert outcome.changes
    for change in outcome.changes:
        if isinstance(change, SetValue):
            assert not case.block.read_only
            assert len(change.value) <= case.block.limit
        if isinstance(change, CreateBlock):
            assert len(change.value) <= change.limit
            return "OK:created"
    if case.branch_of in ("memory_replace", "memory:str_replace"):
        assert case.block.value.count(case.arguments["old_string"]) == 1
    return "OK"


def test_the_strategies_reach_every_branch_of_every_planner() -> None:
    reached: dict[str, Counter[str]] = {name: Counter() for name in BRANCHES}
    for branch_of, aim in AIMS:

        @PLENTY
        @given(case=cases(branch_of, aim))
        def plan(case: Case) -> None:
            branch = branch_reached(case)
            event(f"{case.branch_of}: {branch}")
            reached[case.branch_of][branch] += 1

        plan()
    missing = {name: sorted(BRANCHES[name] - set(seen)) for name, seen in reached.items()}
    assert {name: gaps for name, gaps in missing.items() if gaps} == {}
    unexpected = {name: sorted(set(seen) - BRANCHES[name]) for name, seen in reached.items()}
    assert {name: extra for name, extra in unexpected.items() if extra} == {}
