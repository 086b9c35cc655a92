"""A write the store keeps failing for a concurrent conflict (PostgreSQL's deadlock_detected or
serialization_failure, each re-run up to 8 times) is answered ABORTED, reason STORE_CONFLICT, saying
that nothing was changed and the call may be retried, not INTERNAL; a memory tool's result says the
same to the LLM.

The conflict is injected into the block write (as psycopg raises it inside SQLAlchemy); everything
else is a real MemoryService over each store backend.
"""

from __future__ import annotations

import json

import grpc
import psycopg.errors
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy.exc import OperationalError

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.store import blocks as block_rows
from tests.memory.integration.conftest import Stub, block_value, expect_error, new_agent, run_tool


@pytest.mark.parametrize("conflict", [psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure])
async def test_a_write_that_conflicts_on_every_run_is_aborted_and_changes_nothing(
    stub: Stub, monkeypatch: pytest.MonkeyPatch, conflict: type[psycopg.errors.Error]
) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob", limit=5000))
    runs: list[int] = []

    def write_block(*args: object, **kwargs: object) -> object:
        runs.append(1)
        raise OperationalError("UPDATE blocks ...", {}, conflict("deadlock detected"))

    monkeypatch.setattr(block_rows, "write_block", write_block)
    update = api.UpdateBlockRequest(
        ref=pb.BlockRef(agent_id=agent.id, label="human"),
        block=pb.Block(value="Name: Alice"),
        update_mask=FieldMask(paths=["value"]),
    )
    error = await expect_error(stub.UpdateBlock(update), grpc.StatusCode.ABORTED, "STORE_CONFLICT")
    assert "retry" in (error.details() or "")
    assert len(runs) == 8  # re-run as before, then refused
    append = json.dumps({"label": "human", "content": "Likes tea"})
    run = await run_tool(stub, agent.id, "core_memory_append", append)
    assert (run.ok, run.reason) == (False, "STORE_CONFLICT")
    assert "retry" in run.text
    monkeypatch.undo()
    assert await block_value(stub, agent.id, "human") == "Name: Bob"
