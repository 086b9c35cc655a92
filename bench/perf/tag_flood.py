"""A quiet tenant's search latency while a noisy tenant floods tag filters (issue 14 item 5).

One RetrievalService and one MemoryService in process, real embedder. Both tenants hold the same
archive (``--passages`` tagged passages). The quiet tenant sends ``--searches`` archival searches one
after another, first alone (baseline), then while the noisy tenant keeps 8 searches in flight (its
per-tenant limit) with the largest tag filter allowed (64 tags of 100 characters) and, beside them,
searches with 100,000 tags (refused at once since the tag-filter limit). Prints and writes the
quiet tenant's p50/p95 in each phase, their ratios, and what the noisy tenant's calls got. A third
phase floods with the same number of searches without tags, to tell the cost of the tags from the
cost of eight searches in flight (each embeds its query on the same CPUs).

    python -m bench.perf.tag_flood            # bench/results/tag_flood.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc

from bench.locomo.services import start_services
from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.limits import MAX_FILTER_TAGS, MAX_TAG_CHARS
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

RESULTS = Path(__file__).resolve().parents[1] / "results"
QUIET = (("x-strata-tenant", "quiet"),)
NOISY = (("x-strata-tenant", "noisy"),)
TOPICS = ["garden", "tomatoes", "invoice", "meeting", "travel", "recipe", "music", "tennis"]


async def seed(stub: MemoryStub, metadata: tuple[tuple[str, str]], passages: int) -> str:
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="bench")), metadata=metadata)
    batch = [
        pb.Passage(text=f"note {i} about {TOPICS[i % len(TOPICS)]} and more", tags=[TOPICS[i % len(TOPICS)]])
        for i in range(passages)
    ]
    await stub.CreatePassages(
        api.CreatePassagesRequest(agent_id=agent.id, passages=batch, wait_searchable=True),
        metadata=metadata,
        timeout=600,
    )
    return str(agent.id)


async def quiet_latencies(stub: MemoryStub, agent_id: str, searches: int) -> list[float]:
    took = []
    for i in range(searches):
        request = api.SearchArchivalRequest(
            agent_id=agent_id, query=f"{TOPICS[i % len(TOPICS)]} {i}", top_k=10
        )
        started = time.perf_counter()
        await stub.SearchArchival(request, metadata=QUIET, timeout=120)
        took.append((time.perf_counter() - started) * 1000)
    return took


async def flood(
    stub: MemoryStub, agent_id: str, stop: asyncio.Event, outcomes: Counter[str], *, tagged: bool
) -> None:
    widest = [("t" * (MAX_TAG_CHARS - 3)) + f"{i:03d}" for i in range(MAX_FILTER_TAGS)]
    huge = [f"tag{i}" for i in range(100_000)]
    turn = 0
    while not stop.is_set():
        tags = [] if not tagged else huge if turn % 2 else widest
        turn += 1
        request = api.SearchArchivalRequest(agent_id=agent_id, query="garden", tags=tags, top_k=10)
        try:
            await stub.SearchArchival(request, metadata=NOISY, timeout=120)
            outcomes[f"OK ({len(tags)} tags)"] += 1
        except grpc.aio.AioRpcError as error:
            outcomes[f"{error.code().name} ({len(tags)} tags)"] += 1


def summary(took: list[float]) -> dict[str, float]:
    ordered = sorted(took)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


async def run(passages: int, searches: int) -> dict[str, Any]:
    models = Path(os.environ.get("STRATA_MODEL_CACHE", Path.home() / ".cache" / "strata" / "models"))
    embedder = OnnxSentenceEmbedder.load(models, threads=2, batch_size=32)
    with tempfile.TemporaryDirectory() as tmp:
        services = await start_services(Path(tmp), embedder, {})
        try:
            stub = services.stub
            quiet_agent = await seed(stub, QUIET, passages)
            noisy_agent = await seed(stub, NOISY, passages)
            await quiet_latencies(stub, quiet_agent, 5)  # warm up
            baseline = await quiet_latencies(stub, quiet_agent, searches)
            outcomes: Counter[str] = Counter()
            phases: dict[bool, list[float]] = {}
            for with_tags in (False, True):
                stop = asyncio.Event()
                flooders = [
                    asyncio.create_task(flood(stub, noisy_agent, stop, outcomes, tagged=with_tags))
                    for _ in range(8)
                ]
                await asyncio.sleep(1.0)
                phases[with_tags] = await quiet_latencies(stub, quiet_agent, searches)
                stop.set()
                await asyncio.gather(*flooders)
        finally:
            await services.close()
    alone, plain, tagged = summary(baseline), summary(phases[False]), summary(phases[True])
    return {
        "passages_per_tenant": passages,
        "quiet_searches_per_phase": searches,
        "quiet_alone": alone,
        "quiet_during_untagged_flood": plain,
        "quiet_during_tag_flood": tagged,
        "p50_ratio_tag_flood_to_alone": round(tagged["p50_ms"] / alone["p50_ms"], 2),
        "p50_ratio_tag_flood_to_untagged_flood": round(tagged["p50_ms"] / plain["p50_ms"], 2),
        "noisy_outcomes": dict(outcomes),
        "host_cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--searches", type=int, default=60)
    parser.add_argument("--output", type=Path, default=RESULTS / "tag_flood.json")
    args = parser.parse_args()
    result = asyncio.run(run(args.passages, args.searches))
    print(json.dumps(result, indent=2))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
