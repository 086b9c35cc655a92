"""Writes based on an older version (``base_etag``): merged onto what changed since, or refused as a
conflict that changes nothing (UpdateBlock and ExecuteTool alike, one merge function underneath)."""

from __future__ import annotations

import json

import pytest

from strata_memory.domain.errors import CharLimitExceeded, EtagMismatch, MergeConflict, UnknownBase
from strata_memory.domain.model import Block
from strata_memory.operations.blocks import BlockLocator
from strata_memory.operations.tools import ToolCall
from strata_memory.store.records import AgentRecord, BlockRecord, Page
from strata_serving.errors import InvalidArgument
from tests.memory.operations.conftest import TENANT, Ops, agent_record

NOTES = "name: Ada\nrole: engineer\ncity: Paris\nlikes: tea\n"


async def _agent(ops: Ops, value: str = NOTES, limit: int = 200) -> AgentRecord:
    return await ops.agents.create(agent_record(), [Block("human", value, limit=limit)])


def _human(agent: AgentRecord) -> BlockLocator:
    return BlockLocator(agent_id=agent.id, label="human")


async def _set(ops: Ops, agent: AgentRecord, value: str, base_etag: str = "") -> BlockRecord:
    return await ops.blocks.update(
        TENANT, _human(agent), {"value": value}, "", actor="api", base_etag=base_etag
    )


async def test_edits_of_different_lines_both_land_as_one_new_version(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    await _set(ops, agent, NOTES.replace("engineer", "architect"))  # another writer, first
    merged = await _set(ops, agent, NOTES.replace("tea", "coffee"), base_etag=read.etag)
    assert merged.block.value == "name: Ada\nrole: architect\ncity: Paris\nlikes: coffee\n"
    assert merged.block.version == 3
    newest = (await ops.blocks.versions(TENANT, _human(agent), Page()))[0]
    assert newest.source == "api:UpdateBlock(merged v1 onto v2)"  # both parents


async def test_the_same_line_is_a_conflict_naming_its_hunk_and_nothing_changes(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    theirs = await _set(ops, agent, NOTES.replace("Paris", "Lyon"))
    with pytest.raises(MergeConflict) as refused:
        await _set(ops, agent, NOTES.replace("Paris", "Nice"), base_etag=read.etag)
    error = refused.value
    assert error.metadata["base_version"] == "1"
    assert error.metadata["current_version"] == "2"
    hunks = json.loads(error.metadata["hunks"])
    assert hunks == [
        {
            "field": "value",
            "base_start": 3,
            "base_end": 3,
            "base": "city: Paris\n",
            "current": "city: Lyon\n",
            "proposed": "city: Nice\n",
        }
    ]
    assert [field for field, _ in error.field_violations] == ["block.value"]
    assert await ops.blocks.get(TENANT, _human(agent)) == theirs


async def test_the_budget_applies_to_the_merged_value(ops: Ops) -> None:
    agent = await _agent(ops, "a\nb\nc\nd\n", limit=13)
    read = await ops.blocks.get(TENANT, _human(agent))
    theirs = await _set(ops, agent, "a\nbbbb\nc\nd\n")  # 11 characters
    with pytest.raises(CharLimitExceeded):  # alone, each edit fits; merged, 14 > 13
        await _set(ops, agent, "a\nb\nc\ndddd\n", base_etag=read.etag)
    assert await ops.blocks.get(TENANT, _human(agent)) == theirs


async def test_a_base_at_the_current_version_is_a_plain_write(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    written = await _set(ops, agent, "new", base_etag=read.etag)
    assert written.block.value == "new"
    newest = (await ops.blocks.versions(TENANT, _human(agent), Page()))[0]
    assert newest.source == "api:UpdateBlock"


async def test_fields_merge_as_wholes(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    await ops.blocks.update(TENANT, _human(agent), {"description": "theirs"}, "", actor="api")
    merged = await ops.blocks.update(
        TENANT, _human(agent), {"limit": 150}, "", actor="api", base_etag=read.etag
    )
    assert (merged.block.description, merged.block.limit) == ("theirs", 150)
    with pytest.raises(MergeConflict) as refused:
        await ops.blocks.update(
            TENANT, _human(agent), {"description": "mine"}, "", actor="api", base_etag=read.etag
        )
    assert refused.value.field_violations[0][0] == "block.description"


async def test_an_unknown_base_or_both_conditions_are_refused(ops: Ops) -> None:
    agent = await _agent(ops)
    other = await ops.blocks.create(TENANT, Block("other", "x"), agent_id="", actor="api")
    await _set(ops, agent, "moved on")
    with pytest.raises(UnknownBase):
        await _set(ops, agent, "mine", base_etag=other.etag)
    read = await ops.blocks.get(TENANT, _human(agent))
    with pytest.raises(InvalidArgument):
        await ops.blocks.update(
            TENANT, _human(agent), {"value": "x"}, read.etag, actor="api", base_etag=read.etag
        )


def _call(agent: AgentRecord, name: str, base_etag: str, **arguments: object) -> ToolCall:
    return ToolCall(
        tenant_id=TENANT,
        agent_id=agent.id,
        conversation_id="default",
        name=name,
        arguments=json.dumps({"label": "human", **arguments}),
        base_etag=base_etag,
    )


async def test_a_tool_call_written_against_an_older_version_is_merged(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    await _set(ops, agent, NOTES.replace("name: Ada", "name: Ada Lovelace"))
    # The text the call replaces is gone from the current value's line 1, but it edits line 4 of
    # the version it was written against.
    run = await ops.tools.execute(
        _call(agent, "memory_replace", read.etag, old_string="likes: tea", new_string="likes: mate")
    )
    assert run.ok, run.text
    current = await ops.blocks.get(TENANT, _human(agent))
    assert current.block.value == "name: Ada Lovelace\nrole: engineer\ncity: Paris\nlikes: mate\n"
    newest = (await ops.blocks.versions(TENANT, _human(agent), Page()))[0]
    assert newest.source == "tool:memory_replace(merged v1 onto v2)"


async def test_an_overlapping_tool_call_fails_the_rpc_and_changes_nothing(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    theirs = await _set(ops, agent, NOTES.replace("likes: tea", "likes: water"))
    with pytest.raises(MergeConflict):
        await ops.tools.execute(
            _call(agent, "memory_replace", read.etag, old_string="likes: tea", new_string="likes: mate")
        )
    assert await ops.blocks.get(TENANT, _human(agent)) == theirs


async def test_a_based_tool_call_cannot_edit_a_block_made_read_only_since(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    await ops.blocks.update(TENANT, _human(agent), {"read_only": True}, "", actor="api")
    run = await ops.tools.execute(
        _call(agent, "memory_replace", read.etag, old_string="likes: tea", new_string="likes: mate")
    )
    assert (run.ok, run.reason) == (False, "READ_ONLY_BLOCK")


async def test_deleting_a_based_block_needs_it_unmoved(ops: Ops) -> None:
    agent = await ops.agents.create(
        agent_record(), [Block("human", NOTES, limit=200), Block("scratch", "x", limit=50)]
    )
    read = await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label="scratch"))
    await ops.blocks.update(
        TENANT, BlockLocator(agent_id=agent.id, label="scratch"), {"value": "y"}, "", actor="api"
    )
    call = ToolCall(
        TENANT,
        agent.id,
        "default",
        "memory",
        json.dumps({"command": "delete", "path": "/memories/scratch"}),
        base_etag=read.etag,
    )
    with pytest.raises(EtagMismatch):
        await ops.tools.execute(call)


async def test_validate_only_answers_the_merge_and_writes_nothing(ops: Ops) -> None:
    agent = await _agent(ops)
    read = await ops.blocks.get(TENANT, _human(agent))
    theirs = await _set(ops, agent, NOTES.replace("engineer", "architect"))
    preview = await ops.blocks.update(
        TENANT,
        _human(agent),
        {"value": NOTES.replace("tea", "coffee")},
        "",
        actor="api",
        base_etag=read.etag,
        validate_only=True,
    )
    assert preview.block.value == "name: Ada\nrole: architect\ncity: Paris\nlikes: coffee\n"
    assert preview.etag == theirs.etag
    assert await ops.blocks.get(TENANT, _human(agent)) == theirs
    with pytest.raises(MergeConflict):
        await ops.blocks.update(
            TENANT,
            _human(agent),
            {"value": NOTES.replace("engineer", "manager")},
            "",
            actor="api",
            base_etag=read.etag,
            validate_only=True,
        )
