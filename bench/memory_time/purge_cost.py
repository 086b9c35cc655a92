"""What a purge of an agent costs as its messages grow, next to a plain DeleteAgent of the same agent.

    python -m bench.memory_time.purge_cost --messages 100 1000 4000 --rounds 3 \\
        --output bench/results/memory_time_purge.json

Both services run in process (:class:`bench.servers.ServicePair`: RetrievalService with the real
embedder, Edge shard and Tantivy; MemoryService on a SQLite file, shipped outbox defaults). For each
size and round, two agents are built alike: ``N`` messages appended in calls of 100 and every one
indexed in both legs (the outbox has delivered them all), a block edited 10 times, its prompt compiled.
Then, in an order shuffled per round (seeded), one is purged (``Purge``: store transaction, deletes
by id and filter, read-back by id in both legs, receipt) and the other deleted (``DeleteAgent``: the
store transaction; the index deletion follows through the outbox, not timed). Reported per size: the
median wall time of each call in ms, their ratio, and whether every purge receipt was verified.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from bench.perf.serve import MODEL_CACHE
from bench.servers import ServicePair
from strata.client import AsyncMemoryClient
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc

RESULTS = Path(__file__).resolve().parents[1] / "results" / "memory_time_purge.json"
BATCH = 100
SIZES = [100, 1000, 4000]
"""Messages per agent in ``make bench``."""


async def _agent(client: AsyncMemoryClient, messages: int) -> tuple[str, list[str]]:
    agent = await client.create_agent(agent=pb.Agent(name="purge bench"))
    for edit in range(10):
        await client.update_block(
            block=pb.Block(value=f"Name: Ada, note {edit}"),
            update_mask=["value"],
            agent_id=agent.id,
            label="human",
        )
    ids: list[str] = []
    for start in range(0, messages, BATCH):
        batch = [
            pb.Message(
                role=pb.MESSAGE_ROLE_USER, content=f"Message {i}: I walked {i % 17} miles by the river."
            )
            for i in range(start, min(start + BATCH, messages))
        ]
        appended = await client.append_messages(agent_id=agent.id, messages=batch)
        ids += [m.id for m in appended.messages]
    await client.get_system_prompt(agent_id=agent.id)
    return agent.id, ids


async def _indexed(retrieval: Any, ids: list[str]) -> None:
    """Wait until both legs hold every id (the outbox has caught up)."""
    for _ in range(3000):
        held = 0
        for start in range(0, len(ids), 1000):
            found = await retrieval.FindDocuments(
                rpb.FindDocumentsRequest(
                    ids=rpb.DocumentIds(tenant_id="default", ids=ids[start : start + 1000])
                )
            )
            held += min(len(found.vector_ids), len(found.text_ids))
        if held == len(ids):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError("the outbox did not index every message")


async def measure(root: Path, sizes: list[int], rounds: int, seed: int) -> dict[str, Any]:
    random.seed(seed)
    pair = ServicePair(root, retrieval_settings={"model_cache_dir": MODEL_CACHE}, quick_retries=False)
    await pair.start()
    results: dict[str, Any] = {}
    try:
        async with (
            AsyncMemoryClient(pair.memory_address, timeout=300) as client,
            grpc.aio.insecure_channel(pair.retrieval_address) as channel,
        ):
            retrieval = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            for size in sizes:
                results[str(size)] = await _size(client, retrieval, size, rounds)
                print(f"purge_cost: {size} messages: {results[str(size)]}", flush=True)
    finally:
        await pair.stop()
    return results


async def _size(client: AsyncMemoryClient, retrieval: Any, size: int, rounds: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"purge": [], "delete": []}
    verified: list[bool] = []
    for _ in range(rounds):
        built = {lane: await _agent(client, size) for lane in times}
        await _indexed(retrieval, built["purge"][1] + built["delete"][1])
        order = list(times)
        random.shuffle(order)
        for lane in order:
            agent_id = built[lane][0]
            start = time.perf_counter()
            if lane == "purge":
                receipt = await client.purge(kind="agent", target_id=agent_id)
                verified.append(receipt.verified)
            else:
                await client.delete_agent(agent_id=agent_id)
            times[lane].append(time.perf_counter() - start)
    purge, delete = statistics.median(times["purge"]), statistics.median(times["delete"])
    return {
        "purge_p50_ms": round(purge * 1000, 1),
        "delete_agent_p50_ms": round(delete * 1000, 1),
        "purge_over_delete": round(purge / delete, 2),
        "every_receipt_verified": all(verified),
    }


def run(sizes: list[int], rounds: int, seed: int = 30) -> dict[str, Any]:
    load_before = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    sized = " ".join(map(str, sizes))
    with tempfile.TemporaryDirectory() as folder:
        results = asyncio.run(measure(Path(folder), sizes, rounds, seed))
    return {
        "benchmark": "bench.memory_time.purge_cost",
        "command": f"python -m bench.memory_time.purge_cost --messages {sized} --rounds {rounds}",
        "rounds": rounds,
        "seed": seed,
        "load_average_before": load_before,
        "load_average_after": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "cores": os.cpu_count(),
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, nargs="+", default=SIZES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = run(args.messages, args.rounds, args.seed)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
