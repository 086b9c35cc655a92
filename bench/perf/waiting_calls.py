"""What calls left waiting for indexing cost everyone else: one tenant holds ``--waiters``
AppendMessages with ``wait_searchable`` and no deadline open while RetrievalService is unreachable
(nothing is delivered), and another tenant reads a block.

    python -m bench.perf.waiting_calls --waiters 2000
    PYTHONPATH=/tmp/ab/before/services/memory python -m bench.perf.waiting_calls --waiters 2000

One MemoryService in this process on a fresh SQLite store, its RetrievalService address refusing
connections. Reported: the process's CPU share (CPU seconds per wall second; the client is idle
while the calls wait) over 5 s before and while the calls wait, and the other tenant's GetBlock p50
(200 calls) before and while they wait.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from typing import Any

import grpc

from strata.memory.v1 import memory_service_pb2 as mpb
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as r
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings

HOSTILE = [("x-strata-tenant", "waiting")]
OTHER = [("x-strata-tenant", "other")]


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


async def _cpu_share(seconds: float) -> float:
    cpu, began = _cpu(), time.monotonic()
    await asyncio.sleep(seconds)
    return round((_cpu() - cpu) / (time.monotonic() - began), 3)


async def _get_block_p50(stub: Any, block_id: str, calls: int = 200) -> float:
    took = []
    for _ in range(calls):
        began = time.perf_counter()
        await stub.GetBlock(mpb.GetBlockRequest(block=r.BlockRef(block_id=block_id)), metadata=OTHER)
        took.append((time.perf_counter() - began) * 1000)
    return round(statistics.median(took), 3)


async def measure(waiters: int) -> dict[str, Any]:
    folder = tempfile.mkdtemp(prefix="waiting_calls-")
    server = await start_memory_server(
        MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{folder}/memory.sqlite3",
            retrieval_address="127.0.0.1:1",  # refuses connections: nothing becomes searchable
            log_json=False,
        )
    )
    channel = grpc.aio.insecure_channel(server.address)
    stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
    try:
        agent = await stub.CreateAgent(
            mpb.CreateAgentRequest(agent=r.Agent(name="waiting")), metadata=HOSTILE
        )
        block = await stub.CreateBlock(
            mpb.CreateBlockRequest(block=r.Block(label="human", value="x", limit=100)), metadata=OTHER
        )
        result: dict[str, Any] = {
            "waiters": waiters,
            "get_block_p50_ms_before": await _get_block_p50(stub, block.id),
        }
        result["cpu_share_before"] = await _cpu_share(5.0)
        calls = [
            asyncio.ensure_future(
                stub.AppendMessages(
                    mpb.AppendMessagesRequest(
                        agent_id=agent.id,
                        messages=[r.Message(role=r.MESSAGE_ROLE_USER, content=f"message {i}")],
                        wait_searchable=True,
                    ),
                    metadata=HOSTILE,
                )
            )
            for i in range(waiters)
        ]
        await asyncio.sleep(5.0)  # every call written and waiting
        result["cpu_share_waiting"] = await _cpu_share(5.0)
        result["get_block_p50_ms_waiting"] = await _get_block_p50(stub, block.id)
        result["still_waiting"] = sum(not call.done() for call in calls)
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        return result
    finally:
        await channel.close(None)
        await server.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.waiting_calls", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--waiters", type=int, default=2000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.waiters))), flush=True)


if __name__ == "__main__":
    main()
