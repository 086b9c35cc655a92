"""The etag contract of every conditional RPC, generated from MemoryService's descriptor.

Every RPC whose request carries an ``etag`` is called four ways — no etag, the object's current etag,
a stale one (the same object one version earlier), another object's etag at the same version — and
the object's state is read back: the first two apply the write, the last two fail with ABORTED
(``ETAG_MISMATCH``) and change nothing. The list of RPCs comes from the protos, so a new conditional
RPC without a case here fails ``test_every_conditional_rpc_has_a_case``; a new mutating RPC without an
etag must be named, with its reason, in ``UNCONDITIONAL``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.message import Message

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub, expect_error, new_agent

ABORTED = grpc.StatusCode.ABORTED
_SERVICE = api.DESCRIPTOR.services_by_name["MemoryService"]
_READS = ("Get", "List", "Search", "Render", "Diff")

CONDITIONAL_RPCS = sorted(m.name for m in _SERVICE.methods if "etag" in m.input_type.fields_by_name)
"""Every MemoryService RPC whose request has an ``etag`` field (from the descriptor)."""

MUTATING_RPCS = sorted(m.name for m in _SERVICE.methods if not m.name.startswith(_READS))

UNCONDITIONAL = {
    "CreateAgent": "creates a new object: there is no state to be stale against",
    "CreateBlock": "creates a new object",
    "CreateConversation": "creates a new object",
    "CreateArchive": "creates a new object",
    "CreatePassages": "creates new objects (passages are immutable)",
    "AppendMessages": "appends new immutable messages",
    "AttachBlock": "idempotent: attaching twice is attaching once",
    "AttachArchive": "idempotent",
    "DetachArchive": "idempotent on an archive that has no version",
    "AttachFile": "creates a new object",
    "UpdateFile": "files carry no version (documents replaced whole, never merged)",
    "DetachFile": "deletes an immutable document",
    "DeleteArchive": "archives carry no version (name and description only)",
    "DeletePassage": "passages are immutable",
    "Reindex": "rebuilds derived indexes from the store; changes no stored object",
    "RecompileSystemPrompt": "derives the prompt from current memory; changes no memory",
    "ImportAgentFile": "creates new objects (agents, blocks, messages) from a file",
    "ExportAgentFile": "reads only",
    "Purge": "forgets the target whatever its version: a purge is no edit, and no etag may keep content "
    "a caller asked to forget",
}
"""Mutating RPCs that take no etag, each with the reason it needs none."""

VARIANTS = ("no etag", "current etag", "stale etag", "another object's etag")


@dataclass
class Scene:
    """One object ready for a conditional call, with the etags to try and how to read its state."""

    request: Callable[[str], Message]
    observe: Callable[[], Awaitable[Any]]
    applied: Any
    """What ``observe`` returns once the call applied."""
    etags: dict[str, str]


def _ref(agent_id: str, label: str) -> pb.BlockRef:
    return pb.BlockRef(agent_id=agent_id, label=label)


async def _set_value(stub: Stub, agent_id: str, label: str, value: str) -> pb.Block:
    return await stub.UpdateBlock(
        api.UpdateBlockRequest(
            ref=_ref(agent_id, label), block=pb.Block(value=value), update_mask=FieldMask(paths=["value"])
        )
    )


async def _rename(stub: Stub, agent_id: str, name: str) -> pb.Agent:
    return await stub.UpdateAgent(
        api.UpdateAgentRequest(agent=pb.Agent(id=agent_id, name=name), update_mask=FieldMask(paths=["name"]))
    )


async def _block_scene(stub: Stub) -> tuple[pb.Agent, str, dict[str, str]]:
    """An agent whose ``notes`` and ``other`` blocks are both at version 2; ``notes`` was "v1" then "v2"."""
    agent = await new_agent(stub, pb.Block(label="notes", value="v1"), pb.Block(label="other", value="o1"))
    first = await stub.GetBlock(api.GetBlockRequest(block=_ref(agent.id, "notes")))
    current = await _set_value(stub, agent.id, "notes", "v2")
    other = await _set_value(stub, agent.id, "other", "o2")
    assert current.version == other.version  # same version number: only the object tells them apart
    etags = {
        "no etag": "",
        "current etag": current.etag,
        "stale etag": first.etag,
        "another object's etag": other.etag,
    }
    return agent, current.id, etags


async def _agent_scene(stub: Stub) -> tuple[pb.Agent, dict[str, str]]:
    """Two agents, each changed once; the target was named "a1" then "a2"."""
    target = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="a1")))
    neighbour = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="b1")))
    current = await _rename(stub, target.id, "a2")
    other = await _rename(stub, neighbour.id, "b2")  # the same number of changes as the target
    etags = {
        "no etag": "",
        "current etag": current.etag,
        "stale etag": target.etag,
        "another object's etag": other.etag,
    }
    return current, etags


async def _agent_name(stub: Stub, agent_id: str) -> str:
    try:
        return (await stub.GetAgent(api.GetAgentRequest(agent_id=agent_id))).name
    except grpc.aio.AioRpcError as error:
        if error.code() != grpc.StatusCode.NOT_FOUND:
            raise
        return "<deleted>"


async def _notes(stub: Stub, agent_id: str, block_id: str) -> tuple[str, str, tuple[str, ...]]:
    """The ``notes`` block's value (or "<deleted>"), ``other``'s value, and the agent's labels."""
    try:
        value = (await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=block_id)))).value
    except grpc.aio.AioRpcError as error:
        if error.code() != grpc.StatusCode.NOT_FOUND:
            raise
        value = "<deleted>"
    other = await stub.GetBlock(api.GetBlockRequest(block=_ref(agent_id, "other")))
    labels = (await stub.GetAgent(api.GetAgentRequest(agent_id=agent_id))).block_labels
    return value, other.value, tuple(labels)


async def update_agent(stub: Stub) -> Scene:
    agent, etags = await _agent_scene(stub)
    return Scene(
        request=lambda etag: api.UpdateAgentRequest(
            agent=pb.Agent(id=agent.id, name="changed"), update_mask=FieldMask(paths=["name"]), etag=etag
        ),
        observe=lambda: _agent_name(stub, agent.id),
        applied="changed",
        etags=etags,
    )


async def delete_agent(stub: Stub) -> Scene:
    agent, etags = await _agent_scene(stub)
    return Scene(
        request=lambda etag: api.DeleteAgentRequest(agent_id=agent.id, etag=etag),
        observe=lambda: _agent_name(stub, agent.id),
        applied="<deleted>",
        etags=etags,
    )


async def update_block(stub: Stub) -> Scene:
    agent, block_id, etags = await _block_scene(stub)
    return Scene(
        request=lambda etag: api.UpdateBlockRequest(
            ref=pb.BlockRef(block_id=block_id),
            block=pb.Block(value="changed"),
            update_mask=FieldMask(paths=["value"]),
            etag=etag,
        ),
        observe=lambda: _notes(stub, agent.id, block_id),
        applied=("changed", "o2", ("notes", "other")),
        etags=etags,
    )


async def delete_block(stub: Stub) -> Scene:
    agent, block_id, etags = await _block_scene(stub)
    return Scene(
        request=lambda etag: api.DeleteBlockRequest(block=pb.BlockRef(block_id=block_id), etag=etag),
        observe=lambda: _notes(stub, agent.id, block_id),
        applied=("<deleted>", "o2", ("other",)),
        etags=etags,
    )


async def detach_block(stub: Stub) -> Scene:
    agent, block_id, etags = await _block_scene(stub)
    return Scene(
        request=lambda etag: api.DetachBlockRequest(agent_id=agent.id, block_id=block_id, etag=etag),
        observe=lambda: _notes(stub, agent.id, block_id),
        applied=("v2", "o2", ("other",)),
        etags=etags,
    )


async def restore_block_version(stub: Stub) -> Scene:
    agent, block_id, etags = await _block_scene(stub)
    return Scene(
        request=lambda etag: api.RestoreBlockVersionRequest(
            block=pb.BlockRef(block_id=block_id), version=1, etag=etag
        ),
        observe=lambda: _notes(stub, agent.id, block_id),
        applied=("v1", "o2", ("notes", "other")),
        etags=etags,
    )


async def execute_tool(stub: Stub) -> Scene:
    agent, block_id, etags = await _block_scene(stub)
    arguments = json.dumps({"label": "notes", "content": "more"})
    return Scene(
        request=lambda etag: api.ExecuteToolRequest(
            agent_id=agent.id, tool_name="core_memory_append", arguments=arguments, etag=etag
        ),
        observe=lambda: _notes(stub, agent.id, block_id),
        applied=("v2\nmore", "o2", ("notes", "other")),
        etags=etags,
    )


CASES: dict[str, Callable[[Stub], Awaitable[Scene]]] = {
    "UpdateAgent": update_agent,
    "DeleteAgent": delete_agent,
    "UpdateBlock": update_block,
    "DeleteBlock": delete_block,
    "DetachBlock": detach_block,
    "RestoreBlockVersion": restore_block_version,
    "ExecuteTool": execute_tool,
}


def test_every_conditional_rpc_has_a_case() -> None:
    assert CONDITIONAL_RPCS, "the descriptor lists no RPC with an etag"
    assert sorted(CASES) == CONDITIONAL_RPCS


def test_every_mutating_rpc_is_conditional_or_says_why_not() -> None:
    unexplained = set(MUTATING_RPCS) - set(CONDITIONAL_RPCS) - set(UNCONDITIONAL)
    assert not unexplained, f"mutating RPCs with neither an etag nor a reason: {sorted(unexplained)}"
    assert not set(UNCONDITIONAL) & set(CONDITIONAL_RPCS)
    assert set(UNCONDITIONAL) <= set(MUTATING_RPCS)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("rpc", CONDITIONAL_RPCS)
async def test_conditional_rpc_honours_its_etag(stub: Stub, rpc: str, variant: str) -> None:
    scene = await CASES[rpc](stub)
    before = await scene.observe()
    assert before != scene.applied
    request = scene.request(scene.etags[variant])
    call = getattr(stub, rpc)(request)
    if variant in ("no etag", "current etag"):
        await call
        assert await scene.observe() == scene.applied
    else:
        await expect_error(call, ABORTED, "ETAG_MISMATCH")
        assert await scene.observe() == before


async def test_an_etag_read_before_delete_and_recreate_is_refused(stub: Stub) -> None:
    """Read ``notes`` at version 1; someone deletes and re-creates it (version 1 again): the stale
    etag must not overwrite the new block, through the API or a tool."""
    agent = await new_agent(stub, pb.Block(label="notes", value="old"))
    read = await stub.GetBlock(api.GetBlockRequest(block=_ref(agent.id, "notes")))
    await stub.DeleteBlock(api.DeleteBlockRequest(block=_ref(agent.id, "notes")))
    again = await stub.CreateBlock(
        api.CreateBlockRequest(block=pb.Block(label="notes", value="new"), agent_id=agent.id)
    )
    assert again.version == read.version
    assert again.etag != read.etag
    stale_update = api.UpdateBlockRequest(
        ref=_ref(agent.id, "notes"),
        block=pb.Block(value="stale"),
        update_mask=FieldMask(paths=["value"]),
        etag=read.etag,
    )
    await expect_error(stub.UpdateBlock(stale_update), ABORTED, "ETAG_MISMATCH")
    stale_tool = api.ExecuteToolRequest(
        agent_id=agent.id,
        tool_name="memory_rethink",
        arguments=json.dumps({"label": "notes", "new_memory": "stale"}),
        etag=read.etag,
    )
    await expect_error(stub.ExecuteTool(stale_tool), ABORTED, "ETAG_MISMATCH")
    assert (await stub.GetBlock(api.GetBlockRequest(block=_ref(agent.id, "notes")))).value == "new"


async def test_an_etag_of_a_block_that_is_gone_is_refused_not_used_to_create(stub: Stub) -> None:
    """``memory_rethink`` creates a missing block, but not when the caller names a state (an etag)
    of a block that no longer exists."""
    agent = await new_agent(stub, pb.Block(label="notes", value="old"))
    read = await stub.GetBlock(api.GetBlockRequest(block=_ref(agent.id, "notes")))
    await stub.DeleteBlock(api.DeleteBlockRequest(block=_ref(agent.id, "notes")))
    stale_tool = api.ExecuteToolRequest(
        agent_id=agent.id,
        tool_name="memory_rethink",
        arguments=json.dumps({"label": "notes", "new_memory": "stale"}),
        etag=read.etag,
    )
    await expect_error(stub.ExecuteTool(stale_tool), ABORTED, "ETAG_MISMATCH")
    assert list((await stub.GetAgent(api.GetAgentRequest(agent_id=agent.id))).block_labels) == []


async def test_etags_are_opaque_and_differ_between_objects(stub: Stub) -> None:
    agent = await new_agent(stub)
    persona = await stub.GetBlock(api.GetBlockRequest(block=_ref(agent.id, "persona")))
    human = await stub.GetBlock(api.GetBlockRequest(block=_ref(agent.id, "human")))
    etags = {persona.etag, human.etag, agent.etag}
    assert len(etags) == 3
    assert all(etag and etag != str(persona.version) for etag in etags)
