"""Acknowledged writes survive ``kill -9`` of a MemoryService process."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from tests.memory_process import MemoryProcess


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


@pytest.mark.slow
async def test_everything_acknowledged_before_kill_9_is_there_after_restart(database: Path) -> None:
    first = MemoryProcess(f"sqlite:///{database}")
    try:
        await first.wait_serving()
        async with grpc.aio.insecure_channel(first.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="durable")))
            for i in range(20):
                arguments = json.dumps({"label": "human", "content": f"fact {i}"})
                run = await stub.ExecuteTool(
                    api.ExecuteToolRequest(
                        agent_id=agent.id, tool_name="core_memory_append", arguments=arguments
                    )
                )
                assert run.ok
            batch = [pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"m{i}") for i in range(10)]
            await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=batch))
    finally:
        first.kill()

    second = MemoryProcess(f"sqlite:///{database}")
    try:
        await second.wait_serving()
        async with grpc.aio.insecure_channel(second.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            block = await stub.GetBlock(
                api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human"))
            )
            assert block.value.split("\n") == [f"fact {i}" for i in range(20)]
            assert block.version == 21
            messages = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id))
            assert [m.content for m in messages.messages] == [f"m{i}" for i in range(10)]
            prompt = await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent.id))
            assert "fact 19" in prompt.text
    finally:
        second.kill()


@pytest.mark.slow
async def test_sigterm_stops_the_server_cleanly(database: Path) -> None:
    server = MemoryProcess(f"sqlite:///{database}")
    try:
        await server.wait_serving()
        server.process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(server.process.wait, 30) == 0
    finally:
        if server.process.poll() is None:
            server.kill()
