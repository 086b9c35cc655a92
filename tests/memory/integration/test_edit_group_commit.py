"""Concurrent tool edits share one commit (SQLite group commit: ``Database.write_together``) and keep
every promise a lone edit makes: each caller is answered only once its edit is durable, so everything
acknowledged survives ``kill -9``; concurrent appends are serialised, none lost, each writer's in its
order; of edits sent with the same etag exactly one applies; a refused edit changes nothing and
costs the others nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from sqlalchemy import event

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_serving.status import error_info_from
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub, block_value, new_agent, run_tool
from tests.memory_process import MemoryProcess


def _append(label: str, content: str) -> str:
    return json.dumps({"label": label, "content": content})


@pytest.fixture
async def memory_server(store_url: str) -> AsyncIterator[MemoryServer]:
    """A server of a single-tenant deployment, whose share of the writes pool is raised (as
    docs/security.md says to): one tenant's edits then reach the store together. With the default
    share of 1 a tenant's edits are admitted one at a time, and only different tenants' share commits."""
    settings = MemorySettings(
        address="127.0.0.1:0",
        database_url=store_url,
        retrieval_address=unreachable_address(),
        admission_writes=(8, 8, 64),
    )
    server = await start_memory_server(settings)
    yield server
    await server.stop(0)


@pytest.fixture
def commits(memory_server: MemoryServer) -> Iterator[list[int]]:
    """One entry per transaction committed by the server's writers (its real engine, counted)."""
    counted: list[int] = []
    engine = memory_server.database._writer  # the engine the writes go through

    def on_commit(_connection: object) -> None:
        counted.append(1)

    event.listen(engine, "commit", on_commit)
    yield counted
    event.remove(engine, "commit", on_commit)


async def test_concurrent_edits_share_commits_and_all_apply(
    stub: Stub, memory_server: MemoryServer, commits: list[int]
) -> None:
    agents = [await new_agent(stub, pb.Block(label="human", value="start")) for _ in range(4)]
    commits.clear()
    calls = [
        run_tool(stub, agent.id, "core_memory_append", _append("human", f"w{w}-{i}"))
        for i in range(6)
        for w, agent in enumerate(agents)
    ]
    runs = await asyncio.gather(*calls)
    assert all(run.ok for run in runs)
    for w, agent in enumerate(agents):  # concurrent calls: all applied, in no promised order
        lines = (await block_value(stub, agent.id, "human")).split("\n")
        assert sorted(lines) == sorted(["start"] + [f"w{w}-{i}" for i in range(6)])
    if memory_server.database.is_sqlite:
        assert len(commits) < len(calls)  # some commits held several edits (PostgreSQL: one each)


async def test_edits_of_one_block_are_serialised_none_lost(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="start"))

    async def writer(w: int) -> None:
        for i in range(5):  # each writer's appends in its order
            assert (await run_tool(stub, agent.id, "core_memory_append", _append("human", f"w{w}-{i}"))).ok

    await asyncio.gather(*(writer(w) for w in range(6)))
    lines = (await block_value(stub, agent.id, "human")).split("\n")
    assert sorted(lines) == sorted(["start"] + [f"w{w}-{i}" for w in range(6) for i in range(5)])
    for w in range(6):
        assert [line for line in lines if line.startswith(f"w{w}-")] == [f"w{w}-{i}" for i in range(5)]
    block = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    assert block.version == 1 + 30


async def test_of_edits_sent_with_one_etag_exactly_one_applies(stub: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob"))
    read = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))

    async def replace(i: int) -> str:
        arguments = json.dumps({"label": "human", "old_string": "Bob", "new_string": f"Bob{i}"})
        try:
            run = await run_tool(stub, agent.id, "memory_replace", arguments, etag=read.etag)
        except grpc.aio.AioRpcError as error:
            info = error_info_from(error.trailing_metadata())
            return f"{error.code().name} {info.reason if info else ''}"
        return f"applied {i}" if run.ok else f"refused {run.reason}"

    outcomes = await asyncio.gather(*(replace(i) for i in range(8)))
    applied = [o for o in outcomes if o.startswith("applied")]
    assert len(applied) == 1
    assert sorted(set(outcomes) - set(applied)) == ["ABORTED ETAG_MISMATCH"]
    winner = applied[0].split()[1]
    block = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    assert (block.value, block.version) == (f"Name: Bob{winner}", read.version + 1)


async def test_a_refused_edit_beside_others_changes_nothing_and_they_apply(stub: Stub) -> None:
    agents = [await new_agent(stub, pb.Block(label="human", value="x", limit=50)) for _ in range(3)]
    calls = [run_tool(stub, a.id, "core_memory_append", _append("human", "short")) for a in agents]
    calls.append(run_tool(stub, agents[0].id, "core_memory_append", _append("human", "y" * 60)))
    calls += [run_tool(stub, a.id, "core_memory_append", _append("human", "more")) for a in agents]
    runs = await asyncio.gather(*calls)
    assert [run.ok for run in runs] == [True, True, True, False, True, True, True]
    assert runs[3].reason == "CHAR_LIMIT_EXCEEDED"
    for agent in agents:  # concurrent calls of one agent: both applied, in no promised order
        assert sorted((await block_value(stub, agent.id, "human")).split("\n")) == ["more", "short", "x"]


@pytest.mark.slow
async def test_concurrent_edits_acknowledged_before_kill_9_are_there_after_restart(tmp_path: Path) -> None:
    database = tmp_path / "memory.sqlite3"
    first = MemoryProcess(f"sqlite:///{database}")
    acknowledged: dict[str, list[str]] = {}
    sent: dict[str, list[str]] = {}
    try:
        await first.wait_serving()
        async with grpc.aio.insecure_channel(first.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agents = [
                (await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=f"a{n}")))).id
                for n in range(4)
            ]

            async def writer(agent_id: str, w: int) -> None:
                for i in range(10_000):
                    line = f"w{w}-{i}"
                    sent.setdefault(agent_id, []).append(line)
                    run = await run_tool(stub, agent_id, "core_memory_append", _append("human", line))
                    assert run.ok
                    acknowledged.setdefault(agent_id, []).append(line)
                    if sum(map(len, acknowledged.values())) >= 150:
                        enough.set()

            enough = asyncio.Event()
            writers = [asyncio.create_task(writer(a, w)) for w, a in enumerate(agents * 3)]
            await asyncio.wait_for(enough.wait(), 60)
            first.kill()  # mid-stream: edits in flight are neither acknowledged nor promised
            done = await asyncio.gather(*writers, return_exceptions=True)
            assert all(isinstance(outcome, grpc.aio.AioRpcError) for outcome in done)
    finally:
        first.kill()

    second = MemoryProcess(f"sqlite:///{database}")
    try:
        await second.wait_serving()
        async with grpc.aio.insecure_channel(second.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            for agent_id, lines in acknowledged.items():
                block = await stub.GetBlock(
                    api.GetBlockRequest(block=pb.BlockRef(agent_id=agent_id, label="human"))
                )
                stored = block.value.split("\n") if block.value else []
                assert set(lines) <= set(stored)  # every acknowledged edit survived
                assert set(stored) <= set(sent[agent_id])  # and nothing that was never sent
                assert block.version == 1 + len(stored)  # one version per applied edit
                for w in range(12):
                    mine = [line for line in stored if line.startswith(f"w{w}-")]
                    assert mine == [f"w{w}-{i}" for i in range(len(mine))]  # in each writer's order
    finally:
        second.kill()
