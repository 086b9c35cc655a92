"""Concurrent edits of one block through every path take the store's locks in one order.

On PostgreSQL a tool edit locked its agent and then wrote the block, while UpdateBlock (and restore,
delete, detach) locked the block and then the agents holding it, to recompile their prompts; a tool
edit of a block shared by two agents locked its own agent, then the other one. Two such calls at
once each held what the other wanted: PostgreSQL broke the deadlock after its deadlock_timeout (1 s)
by failing one, which was re-run, so concurrent edits of one block took seconds each, and a call
whose re-runs ran out was answered INTERNAL. Agents are now locked before blocks, in id order.
Every call must succeed, keep its edit, and no transaction may have been re-run for a deadlock.
"""

from __future__ import annotations

import asyncio
import json
import logging

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub, block_value, new_agent, run_tool

EDITS = 8


def deadlocks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "40P01" in r.getMessage() or "40001" in r.getMessage()]


async def outcome(call: object) -> str:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as error:
        return f"{error.code().name}: {error.details()}"
    return "ok"


async def test_tool_edits_through_two_agents_and_api_updates_of_one_shared_block_never_deadlock(
    stub: Stub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="strata.store")
    first, second = await new_agent(stub), await new_agent(stub)
    shared = await stub.CreateBlock(
        api.CreateBlockRequest(agent_id=first.id, block=pb.Block(label="team", value="start"))
    )
    await stub.AttachBlock(api.AttachBlockRequest(agent_id=second.id, block_id=shared.id))

    def append(i: int) -> object:
        agent = (first, second)[i % 2]
        return run_tool(
            stub, agent.id, "core_memory_append", json.dumps({"label": "team", "content": f"line {i}"})
        )

    def describe(i: int) -> object:
        return stub.UpdateBlock(
            api.UpdateBlockRequest(
                ref=pb.BlockRef(block_id=shared.id),
                block=pb.Block(description=f"described {i}"),
                update_mask=FieldMask(paths=["description"]),
            )
        )

    outcomes = await asyncio.gather(*(outcome(edit(i)) for i in range(EDITS) for edit in (append, describe)))
    assert outcomes == ["ok"] * 2 * EDITS
    lines = (await block_value(stub, second.id, "team")).split("\n")
    assert sorted(lines) == sorted(["start", *(f"line {i}" for i in range(EDITS))])
    assert deadlocks(caplog) == []
