"""Acknowledged writes survive ``kill -9`` of a MemoryService process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from tests.hermetic import unreachable_address


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    def __init__(self, database: Path, *, retrieval_address: str | None = None) -> None:
        """``retrieval_address``: the RetrievalService to index into (by default one nobody listens on)."""
        self.address = f"127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "STRATA_MEMORY_ADDRESS": self.address,
            "STRATA_MEMORY_DATABASE_URL": f"sqlite:///{database}",
            "STRATA_MEMORY_RETRIEVAL_ADDRESS": retrieval_address or unreachable_address(),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "strata_memory.main"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    async def wait_serving(self, within: float = 30.0) -> None:
        async with grpc.aio.insecure_channel(self.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = asyncio.get_running_loop().time() + within
            while True:
                try:
                    reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.aio.AioRpcError:
                    pass
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"MemoryService at {self.address} did not become SERVING")
                await asyncio.sleep(0.1)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


@pytest.mark.slow
async def test_everything_acknowledged_before_kill_9_is_there_after_restart(database: Path) -> None:
    first = ServerProcess(database)
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

    second = ServerProcess(database)
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
    server = ServerProcess(database)
    try:
        await server.wait_serving()
        server.process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(server.process.wait, 30) == 0
    finally:
        if server.process.poll() is None:
            server.kill()
