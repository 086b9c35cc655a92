"""ExecuteTool's runner: a planned edit applied in one transaction, the policy followed, refusals as
results (DESIGN.md "Memory tools": a failing tool returns an error result with a clear message and a
structured reason and changes nothing; the envelope is {"status": "OK"|"Failed", "message", "time"};
an unknown agent or a stale etag fails the call itself)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from strata_memory.domain.errors import AgentNotFound, EtagMismatch
from strata_memory.domain.model import Block, RecompilePolicy
from strata_memory.operations.blocks import BlockLocator
from strata_memory.operations.tools import ToolCall, ToolRun
from strata_memory.store.records import AgentRecord, Page
from tests.memory.operations.conftest import OTHER_TENANT, TENANT, Ops, agent_record

PARIS_TIME = "2026-08-01 08:24:28 PM CEST+0200"  # the fixed clock, 18:24:28 UTC, in the agent's zone


async def _agent(ops: Ops, policy: RecompilePolicy = RecompilePolicy.ON_EDIT) -> AgentRecord:
    return await ops.agents.create(
        agent_record(policy=policy, timezone="Europe/Paris"),
        [Block("human", "Bob", limit=20), Block("locked", "x", limit=9, read_only=True)],
    )


async def _run(ops: Ops, agent: AgentRecord, name: str, arguments: dict[str, Any], etag: str = "") -> ToolRun:
    return await ops.tools.execute(ToolCall(TENANT, agent.id, "default", name, json.dumps(arguments), etag))


async def _value(ops: Ops, agent: AgentRecord, label: str) -> str:
    return (await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label=label))).block.value


async def _prompt(ops: Ops, agent: AgentRecord) -> str:
    return (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text


async def test_an_edit_is_applied_and_recompiled(ops: Ops) -> None:
    agent = await _agent(ops)
    run = await _run(ops, agent, "core_memory_append", {"label": "human", "content": "tea"})
    assert (run.ok, run.text, run.reason, run.prompt_recompiled) == (True, "Bob\ntea", "", True)
    assert json.loads(run.envelope) == {"status": "OK", "message": "Bob\ntea", "time": PARIS_TIME}
    assert run.block is not None
    assert (run.block.block.label, run.block.block.value, run.block.block.version) == ("human", "Bob\ntea", 2)
    assert await _value(ops, agent, "human") == "Bob\ntea"
    assert "<value>\nBob\ntea\n</value>" in await _prompt(ops, agent)
    versions = await ops.blocks.versions(TENANT, BlockLocator(agent_id=agent.id, label="human"), Page(0, 1))
    assert [(v.source, v.actor) for v in versions] == [("tool:core_memory_append", agent.id)]


async def test_an_explicit_agent_is_not_recompiled(ops: Ops) -> None:
    agent = await _agent(ops, RecompilePolicy.EXPLICIT)
    before = await _prompt(ops, agent)
    run = await _run(ops, agent, "memory_rethink", {"label": "human", "new_memory": "Al"})
    assert (run.ok, run.prompt_recompiled) == (True, False)
    assert await _value(ops, agent, "human") == "Al"
    assert await _prompt(ops, agent) == before


async def test_a_refusal_is_a_failed_result_that_changes_nothing(ops: Ops) -> None:
    agent = await _agent(ops)
    run = await _run(ops, agent, "memory_replace", {"label": "locked", "old_string": "x", "new_string": "y"})
    assert (run.ok, run.reason, run.block, run.prompt_recompiled) == (False, "READ_ONLY_BLOCK", None, False)
    assert run.text == "This block is read-only and cannot be edited."
    assert json.loads(run.envelope) == {
        "status": "Failed",
        "message": "This block is read-only and cannot be edited.",
        "time": PARIS_TIME,
    }
    assert await _value(ops, agent, "locked") == "x"


async def test_an_unknown_tool_is_a_failed_result(ops: Ops) -> None:
    agent = await _agent(ops)
    run = await _run(ops, agent, "memory_forget", {})
    assert (run.ok, run.reason) == (False, "UNKNOWN_TOOL")


async def test_search_tools_without_a_retrieval_service_are_unavailable(ops: Ops) -> None:
    agent = await _agent(ops)
    run = await _run(ops, agent, "archival_memory_search", {"query": "tea"})
    assert (run.ok, run.reason) == (False, "RETRIEVAL_UNAVAILABLE")


async def test_an_unknown_agent_fails_the_call(ops: Ops) -> None:
    agent = await _agent(ops)
    with pytest.raises(AgentNotFound):
        await ops.tools.execute(
            ToolCall(
                OTHER_TENANT, agent.id, "default", "core_memory_append", '{"label": "human", "content": "x"}'
            )
        )
    with pytest.raises(AgentNotFound):  # even when the arguments are bad too
        await ops.tools.execute(ToolCall(TENANT, "agent-404", "default", "core_memory_append", "{"))
    assert await _value(ops, agent, "human") == "Bob"


async def test_with_the_current_etag_the_edit_applies(ops: Ops) -> None:
    agent = await _agent(ops)
    human = await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label="human"))
    run = await _run(ops, agent, "memory_rethink", {"label": "human", "new_memory": "Al"}, human.etag)
    assert run.ok
    with pytest.raises(EtagMismatch) as caught:  # the same etag again is now stale
        await _run(ops, agent, "memory_rethink", {"label": "human", "new_memory": "Zed"}, human.etag)
    assert caught.value.metadata == {
        "resource": "Block 'human'",
        "expected_etag": human.etag,
        "actual_etag": run.block.etag if run.block else "",
    }
    assert await _value(ops, agent, "human") == "Al"


async def test_another_blocks_etag_is_stale(ops: Ops) -> None:
    agent = await _agent(ops)
    locked = await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label="locked"))
    with pytest.raises(EtagMismatch):
        await _run(ops, agent, "core_memory_append", {"label": "human", "content": "x"}, locked.etag)
    assert await _value(ops, agent, "human") == "Bob"


async def test_an_etag_cannot_create_a_block(ops: Ops) -> None:
    agent = await _agent(ops)
    human = await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label="human"))
    with pytest.raises(EtagMismatch) as caught:
        await _run(ops, agent, "memory_rethink", {"label": "fresh", "new_memory": "n"}, human.etag)
    assert caught.value.metadata["actual_etag"] == ""
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("human", "locked")


async def test_a_rename_checks_the_etag_of_the_old_label(ops: Ops) -> None:
    agent = await _agent(ops)
    human = await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label="human"))
    rename = {"command": "rename", "old_path": "/memories/human", "new_path": "/memories/person"}
    run = await _run(ops, agent, "memory", rename, human.etag)
    assert run.ok
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("person", "locked")


async def test_memory_command_create_rename_describe_delete(ops: Ops) -> None:
    agent = await _agent(ops)
    created = await _run(
        ops,
        agent,
        "memory",
        {"command": "create", "path": "/memories/notes", "description": "d", "file_text": "t"},
    )
    assert created.ok
    assert created.block is not None
    assert (created.block.block.label, created.block.block.value, created.block.block.description) == (
        "notes",
        "t",
        "d",
    )
    assert created.block.block.limit == 100_000  # no limit named: the default
    assert "<notes>" in await _prompt(ops, agent)

    renamed = await _run(
        ops, agent, "memory", {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/n2"}
    )
    assert renamed.block is not None
    assert (renamed.block.block.label, renamed.block.block.id) == ("n2", created.block.block.id)
    described = await _run(
        ops, agent, "memory", {"command": "rename", "path": "/memories/n2", "description": "dd"}
    )
    assert described.block is not None
    assert described.block.block.description == "dd"
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("human", "locked", "n2")

    deleted = await _run(ops, agent, "memory", {"command": "delete", "path": "/memories/n2"})
    assert (deleted.ok, deleted.block, deleted.prompt_recompiled) == (True, None, True)
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("human", "locked")
    assert "<n2>" not in await _prompt(ops, agent)
    assert [r.block.label for r in await ops.blocks.listing(TENANT, "", Page())] == ["human", "locked"]


async def test_deleting_a_shared_block_keeps_it_for_the_other_agent(ops: Ops) -> None:
    one = await _agent(ops)
    two = await ops.agents.create(agent_record(name="Two"), [Block("own", limit=5)])
    human = await ops.blocks.get(TENANT, BlockLocator(agent_id=one.id, label="human"))
    await ops.blocks.attach(TENANT, two.id, human.block.id)
    run = await _run(ops, one, "memory", {"command": "delete", "path": "/memories/human"})
    assert run.ok
    assert (await ops.agents.get(TENANT, one.id)).block_labels == ("locked",)
    assert (await ops.agents.get(TENANT, two.id)).block_labels == ("own", "human")
    assert (await ops.blocks.get(TENANT, BlockLocator(block_id=human.block.id))).block.value == "Bob"


async def test_an_edit_of_a_shared_block_recompiles_every_holder(ops: Ops) -> None:
    one = await _agent(ops)
    two = await ops.agents.create(agent_record(name="Two"), [Block("own", limit=5)])
    human = await ops.blocks.get(TENANT, BlockLocator(agent_id=one.id, label="human"))
    await ops.blocks.attach(TENANT, two.id, human.block.id)
    await _run(ops, one, "core_memory_append", {"label": "human", "content": "tea"})
    assert "<value>\nBob\ntea\n</value>" in await _prompt(ops, two)
