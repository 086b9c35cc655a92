"""A target naming several MemoryService replicas spreads calls over them round robin (gRPC's own
client-side balancing), from the async client, the sync client and the CLI alike.

To see where each call went, the two servers keep separate stores: an agent created on one is found
there and NOT_FOUND on the other, so a balanced client sees both answers and pick-first only one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata.cli.main import main
from strata.client import AsyncMemoryClient, MemoryClient, StrataClientError
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from tests.hermetic import memory_settings
from tests.servers import LoopThread


@pytest.fixture
def two_servers(server_loop: LoopThread, tmp_path: Path) -> Iterator[list[MemoryServer]]:
    """Two MemoryServices (each on its own store) in the servers' thread, so blocking calls can reach them."""
    servers = [
        server_loop.run(start_memory_server(memory_settings(tmp_path / f"{n}.sqlite3"))) for n in ("a", "b")
    ]
    yield servers
    for server in servers:
        server_loop.run(server.stop(0))


def both(servers: list[MemoryServer]) -> str:
    return "ipv4:" + ",".join(server.address for server in servers)


async def test_the_async_client_spreads_calls_over_every_replica(two_servers: list[MemoryServer]) -> None:
    async with AsyncMemoryClient(two_servers[0].address, timeout=10) as only_a:
        agent = await only_a.create_agent(agent=pb.Agent(name="on-a"))
    answers = set()
    async with AsyncMemoryClient(both(two_servers), timeout=10) as balanced:
        for _ in range(6):
            try:
                answers.add((await balanced.get_agent(agent_id=agent.id)).id)
            except StrataClientError as missing:
                answers.add(missing.reason)
    assert answers == {agent.id, "AGENT_NOT_FOUND"}


def test_the_sync_client_and_the_cli_accept_a_list_of_replicas(
    two_servers: list[MemoryServer], capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryClient(both(two_servers), timeout=10) as balanced:
        created = [balanced.create_agent(agent=pb.Agent(name=f"n{i}")).id for i in range(4)]
    stores = []
    for server in two_servers:
        with MemoryClient(server.address, timeout=10) as one:
            stores.append({agent.id for agent in one.list_agents().agents})
    assert all(stores), "every replica took some of the creates"
    assert stores[0] | stores[1] == set(created)

    capsys.readouterr()
    assert main(["--target", both(two_servers), "--json", "agents", "create", "--name", "cli"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "cli"
