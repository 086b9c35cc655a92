"""One noisy tenant's flood, run in a process of its own until SIGTERM, then its outcomes as JSON.

    python -m bench.tenant_isolation.floods KIND --address HOST:PORT --agent AGENT_ID

Kinds (issue 26's table):

- ``searches``: 32 plain SearchArchival calls kept in flight;
- ``tag_flood``: 32 SearchArchival calls with 100,000 tags each kept in flight (every one is refused;
  the request, about 1.7 MB, is serialised once here so the sender is not the bottleneck);
- ``reindex``: 16 Reindex streams of the noisy agent kept in flight (all but the tenant's allowance are
  refused);
- ``create_agents``: 8 CreateAgent loops;
- ``idle_connections``: 1,100 TCP connections that never send a byte, each reopened when the server
  closes it (checked twice a second).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
from collections import Counter
from collections.abc import Awaitable, Callable

import grpc

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb

NOISY = (("x-strata-tenant", "noisy"),)
SEARCH = "/strata.memory.v1.MemoryService/SearchArchival"
KINDS = ("searches", "tag_flood", "reindex", "create_agents", "idle_connections")
IDLE_CONNECTIONS = 1_100
TAGS = 100_000


def _outcome(error: grpc.aio.AioRpcError | None) -> str:
    return "OK" if error is None else error.code().name


async def _loop(call: Callable[[], Awaitable[None]], outcomes: Counter[str], stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            await call()
            outcomes["OK"] += 1
        except grpc.aio.AioRpcError as error:
            outcomes[_outcome(error)] += 1


def _calls(kind: str, channel: grpc.aio.Channel, agent: str) -> tuple[int, Callable[[], Awaitable[None]]]:
    """How many loops to run and what each calls."""
    stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
    if kind == "searches":
        plain = api.SearchArchivalRequest(agent_id=agent, query="garden tomatoes", top_k=10)

        async def search() -> None:
            await stub.SearchArchival(plain, metadata=NOISY, timeout=60)

        return 32, search
    if kind == "tag_flood":
        wire = api.SearchArchivalRequest(
            agent_id=agent, query="garden", tags=[f"tag{i}" for i in range(TAGS)], top_k=10
        ).SerializeToString()
        raw = channel.unary_unary(SEARCH, request_serializer=None, response_deserializer=None)

        async def tagged() -> None:
            await raw(wire, metadata=NOISY, timeout=60)

        return 32, tagged
    if kind == "reindex":
        request = api.ReindexRequest(agent_id=agent)

        async def reindex() -> None:
            async for _ in stub.Reindex(request, metadata=NOISY, timeout=120):
                pass

        return 16, reindex
    if kind == "create_agents":

        async def create() -> None:
            await stub.CreateAgent(
                api.CreateAgentRequest(agent=pb.Agent(name="flood")), metadata=NOISY, timeout=60
            )

        return 8, create
    raise ValueError(f"unknown flood {kind!r}")


def _closed(sock: socket.socket) -> bool:
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def _connect(host: str, port: int) -> socket.socket | None:
    try:
        sock = socket.create_connection((host, port), timeout=1)
    except OSError:
        return None
    sock.setblocking(False)
    return sock


async def hold_idle_connections(address: str, outcomes: Counter[str], stop: asyncio.Event) -> None:
    """Keep :data:`IDLE_CONNECTIONS` silent connections open, reopening those the server closed."""
    host, port = address.rsplit(":", 1)
    held: list[socket.socket] = []
    while not stop.is_set():
        kept = []
        for sock in held:
            if _closed(sock):
                sock.close()
                outcomes["closed by the server"] += 1
            else:
                kept.append(sock)
        while len(kept) < IDLE_CONNECTIONS:
            opened = _connect(host, int(port))
            if opened is None:
                outcomes["connect failed"] += 1
                break
            kept.append(opened)
            outcomes["opened"] += 1
        held = kept
        outcomes["held (last)"] = len(held)
        await asyncio.sleep(0.5)
    for sock in held:
        sock.close()


async def flood(kind: str, address: str, agent: str) -> Counter[str]:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    outcomes: Counter[str] = Counter()
    if kind == "idle_connections":
        await hold_idle_connections(address, outcomes, stop)
        return outcomes
    options = [("grpc.max_send_message_length", 16 * 2**20)]
    async with grpc.aio.insecure_channel(address, options=options) as channel:
        loops, call = _calls(kind, channel, agent)
        await asyncio.gather(*(_loop(call, outcomes, stop) for _ in range(loops)))
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tenant_isolation.floods")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--address", required=True)
    parser.add_argument("--agent", required=True)
    args = parser.parse_args()
    outcomes = asyncio.run(flood(args.kind, args.address, args.agent))
    print(json.dumps(dict(outcomes)), flush=True)


if __name__ == "__main__":
    main()
