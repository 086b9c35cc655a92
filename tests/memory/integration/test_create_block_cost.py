"""CreateBlock on an agent costs the same whatever the agent's other blocks (issue 26 item 4), through a
real MemoryService on SQLite and PostgreSQL.

What a CreateBlock sends to the store is recorded at the server's engines: it never reads the agent's
other blocks or their labels, renders nothing and records no receipt, and it sends the same statements
beside 3 blocks as beside 300. The ``on_edit`` prompt it defers is compiled at the next read: the
prompt read then names every block, is not stale, and its receipt lists them.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub
from tests.memory.store.sent import recorded

# Statements whose work grows with the agent's blocks: the agent read with its labels or blocks (a join
# of agent_blocks), a snapshot rewritten, a receipt recorded.
_GROWS = re.compile(
    r"JOIN agent_blocks|INSERT INTO prompt_receipts|UPDATE prompt_snapshots SET system", re.IGNORECASE
)


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[MemoryServer]:
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=store_url,
        retrieval_address=unreachable_address(),
        outbox_idle_poll_seconds=60,  # background work would interleave with the recorded statements
        store_probe_seconds=60,
    )
    running = await start_memory_server(settings)
    yield running
    await running.stop(0)


@pytest.fixture
async def stub(server: MemoryServer) -> AsyncIterator[Stub]:
    async with grpc.aio.insecure_channel(server.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)


async def _agent_with(stub: Stub, blocks: int) -> str:
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name=f"holds {blocks}"),
            blocks=[pb.Block(label=f"fact-{i}", value=f"fact number {i}") for i in range(blocks)],
        )
    )
    return str(agent.id)


_BACKGROUND = re.compile(r"^BEGIN|index_jobs|write_requests|^SELECT 1$|pg_notify", re.IGNORECASE)


def _shape(statement: str) -> str | None:
    """The statement on one line (its values are bound parameters), or None for a transaction's BEGIN
    and what the outbox, the request pruner and the store probe send meanwhile."""
    line = " ".join(statement.split())
    return None if _BACKGROUND.search(line) else line


async def _created(server: MemoryServer, stub: Stub, agent_id: str, label: str) -> list[str]:
    engines = (server.database._reader, server.database._writer)
    with recorded(engines, _shape) as sent:
        await stub.CreateBlock(
            api.CreateBlockRequest(block=pb.Block(label=label, value="new"), agent_id=agent_id)
        )
    return sent


async def test_create_block_sends_the_same_statements_beside_3_or_300_blocks(
    server: MemoryServer, stub: Stub
) -> None:
    few, many = await _agent_with(stub, 3), await _agent_with(stub, 300)
    beside_few = await _created(server, stub, few, "new-a")
    beside_many = await _created(server, stub, many, "new-a")
    assert [s for s in beside_many if _GROWS.search(s)] == []
    assert beside_many == beside_few


async def test_the_deferred_recompile_is_done_by_the_next_prompt_read(
    server: MemoryServer, stub: Stub
) -> None:
    agent_id = await _agent_with(stub, 3)
    for i in range(5):
        await stub.CreateBlock(
            api.CreateBlockRequest(
                block=pb.Block(label=f"late-{i}", value=f"late fact {i}"), agent_id=agent_id
            )
        )
    prompt = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent_id))
    assert not prompt.stale
    assert all(f"late fact {i}" in prompt.text for i in range(5))
    assert [use.label for use in prompt.receipt.blocks][-5:] == [f"late-{i}" for i in range(5)]
    again = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent_id))
    assert (again.text, again.receipt.id) == (prompt.text, prompt.receipt.id)  # compiled once, not per read
