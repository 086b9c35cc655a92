"""Three MemoryService processes on one PostgreSQL database: concurrent tool edits of one block spread over
them keep every acknowledged write, and ``kill -9`` of one replica mid-burst loses nothing acknowledged.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from tests.memory.integration.conftest import Stub
from tests.memory_process import MemoryProcess

pytestmark = pytest.mark.slow
HUMAN = pb.BlockRef(label="human")


@pytest.fixture(scope="module")
def replica_processes(postgres_schema: str) -> Iterator[list[MemoryProcess]]:
    replicas = [MemoryProcess(postgres_schema) for _ in range(3)]
    yield replicas
    for replica in replicas:
        replica.kill()


@pytest.fixture
async def stubs(replica_processes: list[MemoryProcess]) -> AsyncIterator[list[Stub]]:
    for replica in replica_processes:
        if replica.process.poll() is None:
            await replica.wait_serving()
    channels = [grpc.aio.insecure_channel(replica.address) for replica in replica_processes]
    yield [memory_service_pb2_grpc.MemoryServiceStub(channel) for channel in channels]
    for channel in channels:
        await channel.close(None)


async def append(stub: Stub, agent_id: str, line: str, *, with_etag: bool) -> None:
    """Append ``line`` to the agent's human block; with an etag, re-read and retry when it went stale."""
    arguments = json.dumps({"label": "human", "content": line})
    ref = pb.BlockRef(agent_id=agent_id, label="human")
    while True:
        etag = (await stub.GetBlock(api.GetBlockRequest(block=ref))).etag if with_etag else ""
        request = api.ExecuteToolRequest(
            agent_id=agent_id, tool_name="core_memory_append", arguments=arguments, etag=etag
        )
        try:
            run = await stub.ExecuteTool(request, timeout=60)
        except grpc.aio.AioRpcError as error:
            if with_etag and error.code() == grpc.StatusCode.ABORTED:
                continue
            raise
        assert run.ok, run.text
        return


async def stored_lines(stub: Stub, agent_id: str) -> tuple[list[str], int, int]:
    """The block's appended lines, its version and how many history entries it has."""
    ref = pb.BlockRef(agent_id=agent_id, label="human")
    block = await stub.GetBlock(api.GetBlockRequest(block=ref))
    history = await stub.ListBlockVersions(api.ListBlockVersionsRequest(block=ref, page_size=1000))
    lines = [line for line in block.value.split("\n") if line]
    return lines, block.version, len(history.versions)


@pytest.mark.parametrize("with_etag", [False, True], ids=["no-etag", "etag"])
async def test_32_concurrent_edits_over_three_replicas_keep_every_write(
    stubs: list[Stub], with_etag: bool
) -> None:
    agent = await stubs[0].CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="shared")))
    lines = [f"line {i}" for i in range(32)]
    await asyncio.gather(
        *(append(stubs[i % 3], agent.id, line, with_etag=with_etag) for i, line in enumerate(lines))
    )
    for stub in stubs:
        stored, version, history = await stored_lines(stub, agent.id)
        assert sorted(stored) == sorted(lines)
        assert version == history == 33


async def test_kill_9_of_one_replica_mid_burst_loses_nothing_acknowledged(
    stubs: list[Stub], replica_processes: list[MemoryProcess]
) -> None:
    agent = await stubs[0].CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="survivor")))
    acknowledged: list[str] = []
    failed_on_live: list[str] = []
    victim = replica_processes[0]

    async def one(i: int) -> None:
        line = f"burst {i}"
        try:
            await append(stubs[i % 3], agent.id, line, with_etag=False)
        except grpc.aio.AioRpcError as error:  # only the killed replica's calls may fail
            failed_on_live.extend([] if i % 3 == 0 else [f"{line}: {error.code()}"])
            return
        acknowledged.append(line)
        if len(acknowledged) == 12:
            victim.kill()

    await asyncio.gather(*(one(i) for i in range(60)))
    assert victim.process.returncode == -signal.SIGKILL
    assert failed_on_live == []
    stored, version, history = await stored_lines(stubs[1], agent.id)
    assert len(stored) == len(set(stored)), "a line was written twice"
    assert set(acknowledged) <= set(stored), sorted(set(acknowledged) - set(stored))
    assert version == history == len(stored) + 1  # every stored line is one whole, logged edit
    assert len(acknowledged) >= 40  # the two live replicas' share (40 of 60) always completes
