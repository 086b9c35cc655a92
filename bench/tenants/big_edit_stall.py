"""What one tenant's big edits cost another tenant's writes (issue 26 item 4).

    python -m bench.tenants.big_edit_stall --output bench/results/tenants_big_edit_stall.json

One MemoryService (SQLite file in a temp folder, default settings). The noisy tenant's agent holds a
block of ``--chars`` characters (400,000) and ``--conversations`` conversations (601), the agent's
prompt compiled (``on_edit``). The quiet tenant edits a small block of its own in a loop
(``UpdateBlock``), first alone, then while the noisy tenant sends ``--edits`` (3) edits of the big
block one after the other. Reported: the quiet tenant's write p50, p99 and max alone and during the
edits, each big edit's own time, and the ratio of the quiet max during to its max alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings

RESULTS = Path("bench/results/tenants_big_edit_stall.json")


def _as(tenant: str) -> tuple[tuple[str, str], ...]:
    return (("x-strata-tenant", tenant),)


def _edit(block_id: str, value: str) -> api.UpdateBlockRequest:
    return api.UpdateBlockRequest(
        ref=pb.BlockRef(block_id=block_id),
        block=pb.Block(value=value),
        update_mask=FieldMask(paths=["value"]),
    )


def _summary(times: list[float]) -> dict[str, float]:
    ms = sorted(t * 1000 for t in times)
    return {
        "count": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2),
        "max_ms": round(ms[-1], 2),
    }


async def measure(chars: int, conversations: int, edits: int, alone_seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        settings = MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{Path(folder) / 'memory.sqlite3'}",
            retrieval_address="127.0.0.1:9",
        )
        server = await start_memory_server(settings)
        try:
            return await _scenario(server.address, chars, conversations, edits, alone_seconds)
        finally:
            await server.stop(0)


async def _scenario(address: str, chars: int, conversations: int, edits: int, alone: float) -> dict[str, Any]:
    import grpc  # the bench's own channel

    async with grpc.aio.insecure_channel(
        address, options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    ) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        big = "x" * (chars - 1) + "\n"
        noisy = await stub.CreateAgent(
            api.CreateAgentRequest(
                agent=pb.Agent(name="noisy"), blocks=[pb.Block(label="big", value=big, limit=chars * 2)]
            ),
            metadata=_as("noisy"),
        )
        for i in range(conversations - 1):
            await stub.CreateConversation(
                api.CreateConversationRequest(agent_id=noisy.id, conversation_id=f"c{i}"),
                metadata=_as("noisy"),
            )
        big_id = (
            await stub.GetBlock(
                api.GetBlockRequest(block=pb.BlockRef(agent_id=noisy.id, label="big")), metadata=_as("noisy")
            )
        ).id
        quiet = await stub.CreateAgent(
            api.CreateAgentRequest(agent=pb.Agent(name="quiet"), blocks=[pb.Block(label="note", value="n")]),
            metadata=_as("quiet"),
        )
        note_id = (
            await stub.GetBlock(
                api.GetBlockRequest(block=pb.BlockRef(agent_id=quiet.id, label="note")), metadata=_as("quiet")
            )
        ).id
        stop = asyncio.Event()

        async def quiet_writes(into: list[float]) -> None:
            n = 0
            while not stop.is_set():
                n += 1
                start = time.perf_counter()
                await stub.UpdateBlock(_edit(note_id, f"note {n}"), metadata=_as("quiet"))
                into.append(time.perf_counter() - start)

        alone_times: list[float] = []
        task = asyncio.create_task(quiet_writes(alone_times))
        await asyncio.sleep(alone)
        stop.set()
        await task
        stop.clear()
        during: list[float] = []
        task = asyncio.create_task(quiet_writes(during))
        edit_times = []
        for i in range(edits):
            start = time.perf_counter()
            await stub.UpdateBlock(_edit(big_id, big[:-2] + f"{i}\n"), metadata=_as("noisy"))
            edit_times.append(round((time.perf_counter() - start) * 1000, 1))
        stop.set()
        await task
    return {
        "quiet_write_alone": _summary(alone_times),
        "quiet_write_during_big_edits": _summary(during),
        "big_edit_ms": edit_times,
        "max_during_over_max_alone": round(max(during) / max(alone_times), 2),
    }


def run(
    chars: int = 400_000, conversations: int = 601, edits: int = 3, alone_seconds: float = 5.0
) -> dict[str, Any]:
    """Measure, and return the report (what ``main`` writes)."""
    found = asyncio.run(measure(chars, conversations, edits, alone_seconds))
    return {
        "benchmark": "bench.tenants.big_edit_stall",
        "chars": chars,
        "conversations": conversations,
        **found,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=400_000)
    parser.add_argument("--conversations", type=int, default=601)
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--alone-seconds", type=float, default=5.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = run(args.chars, args.conversations, args.edits, args.alone_seconds)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
