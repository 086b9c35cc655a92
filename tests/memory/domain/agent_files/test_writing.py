"""Writing a file back: what an import planned, written as Strata would hold it, gives the file again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strata_memory.domain import agent_files as af
from tests.memory.domain.agent_files.shared_files import SHARED, encoded, raw_document, with_files

LIMIT = 7 * 1024 * 1024
CREATED_US = 1_700_000_000_000_000


def as_stored(plan: af.ImportPlan) -> list[af.ExportedAgent]:
    """The plan as if stored: every file id becomes a Strata id ("s:" + it), residues kept."""
    ids = {b.file_id: f"s:{b.file_id}" for b in plan.blocks}
    ids |= {a.file_id: f"s:{a.file_id}" for a in plan.agents}
    ids |= {m.file_id: f"s:{m.file_id}" for a in plan.agents for m in a.messages}
    blocks = {b.file_id: b for b in plan.blocks}

    def block(file_id: str) -> af.ExportedBlock:
        planned = blocks[file_id]
        stored = type(planned.block)(**{**_fields(planned.block), "id": ids[file_id]})
        return af.ExportedBlock(stored, planned.residue)

    return [
        af.ExportedAgent(
            strata_id=ids[a.file_id],
            name=a.name,
            system=a.system,
            timezone=a.timezone,
            blocks=tuple(block(i) for i in a.block_file_ids),
            messages=tuple(
                af.ExportedMessage(
                    ids[m.file_id],
                    m.role,
                    m.content,
                    m.name,
                    m.tool_calls,
                    m.tool_call_id,
                    m.created_us,
                    m.residue,
                )
                for m in a.messages
            ),
            residue=a.residue,
            file_ids=ids,
        )
        for a in plan.agents
    ]


def _fields(block: Any) -> dict[str, Any]:
    return {name: getattr(block, name) for name in block.__slots__}


def round_trip(document: dict[str, Any]) -> dict[str, Any]:
    plan = af.plan_import(af.read_document(encoded(document), max_bytes=LIMIT))
    return af.write_document(as_stored(plan), plan.document, created_us=CREATED_US)


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
def test_a_written_file_holds_the_same_agents_blocks_and_messages(path: Path) -> None:
    original, written = raw_document(path), round_trip(raw_document(path))
    assert list(written) == list(original)
    for key in ("tools", "files", "sources", "mcp_servers", "metadata"):
        assert written[key] == original[key]
    by_id = {b["id"]: b for b in written["blocks"]}
    old_by_id = {b["id"]: b for b in original["blocks"]}
    for new, old in zip(written["agents"], original["agents"], strict=True):
        assert [by_id[i]["value"] for i in new["block_ids"]] == [
            old_by_id[i]["value"] for i in old["block_ids"]
        ]
        assert [by_id[i]["limit"] for i in new["block_ids"]] == [
            old_by_id[i]["limit"] for i in old["block_ids"]
        ]
        assert [by_id[i]["read_only"] for i in new["block_ids"]] == [
            old_by_id[i]["read_only"] for i in old["block_ids"]
        ]
        assert [m["content"] for m in new["messages"]] == [m["content"] for m in old["messages"]]
        assert [m["tool_calls"] for m in new["messages"]] == [m["tool_calls"] for m in old["messages"]]
        assert [m["created_at"] for m in new["messages"]] == [m["created_at"] for m in old["messages"]]
        unmapped = set(old) - {"id", "block_ids", "messages", "in_context_message_ids"}
        assert {k: new[k] for k in unmapped} == {k: old[k] for k in unmapped}
    assert len(written["blocks"]) == len(original["blocks"])


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
def test_writing_what_a_written_file_plans_gives_the_same_file(path: Path) -> None:
    once = round_trip(raw_document(path))
    assert round_trip(once) == once


def test_attached_files_are_written_back_as_they_were() -> None:
    original = with_files(raw_document(next(p for p in SHARED if p.name == "loop.af")))
    written = round_trip(original)
    for key in ("files", "sources"):
        assert written[key] == original[key]
    assert written["agents"][0]["files_agents"] == original["agents"][0]["files_agents"]  # agent-0 both
    assert round_trip(written) == written


def test_ids_are_renamed_consistently_and_a_group_follows() -> None:
    written = round_trip(raw_document(next(p for p in SHARED if p.name == "evie.af")))
    assert [a["id"] for a in written["agents"]] == ["agent-0", "agent-1"]
    assert [b["id"] for b in written["blocks"]] == [f"block-{i}" for i in range(len(written["blocks"]))]
    group = written["groups"][0]
    assert group["agent_ids"] == ["agent-1"]
    assert group["manager_config"]["manager_agent_id"] == "agent-0"
    messages = [m["id"] for a in written["agents"] for m in a["messages"]]
    assert messages == [f"message-{i}" for i in range(len(messages))]
    assert written["agents"][1]["in_context_message_ids"] == [
        m["id"] for m in written["agents"][1]["messages"]
    ]
