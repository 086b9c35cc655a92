"""The outbox with 1 and 3 MemoryService replicas on PostgreSQL: messages made searchable per second,
and upserts sent per index job (target 1.0: each job delivered by one replica).

One RetrievalService (the embedded engine and the real embedder) serves both configurations; rounds
alternate 1, 3, 1, 3 replicas. Each round appends ``MESSAGES`` messages to a new agent through the
balanced channel (``BATCH`` per call, 4 calls in flight) and times from the first write until
RetrievalService's ``Stats`` counts all of them for that agent. Upserts per job: the replicas'
``strata_index_delivered_documents`` counters (Prometheus, one endpoint per replica), summed, over
the jobs written (one per message), read once the shared outbox is empty.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.perf import process_cpu
from bench.replicas.processes import Cluster, balanced_channel, child_environment, free_port
from strata.client.async_stubs import RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_serving.probe import wait_until_serving

MESSAGES, BATCH, IN_FLIGHT, ROUNDS = 1200, 50, 4, 2
REPLICAS = (1, 3)
MODEL_CACHE = Path(".cache/bench/models")
DELIVERY_TIMEOUT_SECONDS = 300.0


def scraped(address: str, metric: str) -> float:
    """The value of an unlabelled ``metric`` on the Prometheus endpoint at ``address``."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(metric + " "):
                return float(line.split()[1])
    raise KeyError(metric)


def delivered_documents(cluster: Cluster) -> float:
    return sum(scraped(address, "strata_index_delivered_documents_total") for address in cluster.metrics)


async def one_round(
    cluster: Cluster, retrieval: RetrievalStub, pids: list[int], messages: int
) -> dict[str, Any]:
    async with balanced_channel(cluster.target) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = (await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="outbox")))).id
        sent_before = delivered_documents(cluster)
        groups = {"retrieval": pids, "replicas": cluster.pids(), "postgresql": cluster.backend_pids()}
        before = process_cpu.read(groups)
        queue = list(range(0, messages, BATCH))

        async def writer() -> None:
            while queue:
                first = queue.pop()
                batch = [
                    pb.Message(
                        role=pb.MESSAGE_ROLE_USER,
                        content=f"On day {i} I walked {i % 17} miles by the river with Sam",
                    )
                    for i in range(first, min(first + BATCH, messages))
                ]
                await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent, messages=batch))

        counted = rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id="default", agent_ids=[agent]))
        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(IN_FLIGHT)))
        written = time.perf_counter() - started
        while (await retrieval.Stats(counted)).message_count < messages:
            if time.perf_counter() - started > DELIVERY_TIMEOUT_SECONDS:
                raise TimeoutError(f"{cluster.replicas} replicas: not all {messages} messages indexed")
            await asyncio.sleep(0.05)
        searchable = time.perf_counter() - started
        cores = process_cpu.cores_used(before, process_cpu.read(groups))
        for _ in range(int(DELIVERY_TIMEOUT_SECONDS / 0.05)):  # until the last acknowledgements counted
            if scraped(cluster.metrics[0], "strata_outbox_jobs") == 0:
                break
            await asyncio.sleep(0.05)
        return {
            "messages_per_s": round(messages / searchable, 1),
            "write_s": round(written, 2),
            "upserts_per_job": round((delivered_documents(cluster) - sent_before) / messages, 3),
            "cores": cores,
        }


async def measure(
    clusters: list[Cluster], retrieval_address: str, pids: list[int], messages: int, rounds: int
) -> list[dict[str, Any]]:
    found: list[list[dict[str, Any]]] = [[] for _ in clusters]
    async with balanced_channel(f"ipv4:{retrieval_address}") as channel:
        retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        for round_ in range(rounds):
            for i, cluster in enumerate(clusters):
                found[i].append(await one_round(cluster, retrieval, pids, messages))
            print(f"bench: outbox round {round_ + 1}/{rounds} done", flush=True)
    return [
        {
            "replicas": cluster.replicas,
            "messages": messages,
            "messages_per_s": round(statistics.median(r["messages_per_s"] for r in found[i]), 1),
            "messages_per_s_rounds": [r["messages_per_s"] for r in found[i]],
            "upserts_per_job": max(r["upserts_per_job"] for r in found[i]),
            "write_s": round(statistics.median(r["write_s"] for r in found[i]), 2),
            "cores": {
                name: round(statistics.median(r["cores"][name] for r in found[i]), 2)
                for name in found[i][0]["cores"]
            },
        }
        for i, cluster in enumerate(clusters)
    ]


def outbox_delivery(
    work: Path, postgres: str, *, messages: int = MESSAGES, rounds: int = ROUNDS
) -> list[dict[str, Any]]:
    address = f"127.0.0.1:{free_port()}"
    retrieval = subprocess.Popen(
        [sys.executable, "-m", "strata_retrieval.main"],
        env=child_environment(
            STRATA_RETRIEVAL_ADDRESS=address,
            STRATA_RETRIEVAL_DATA_DIR=str(work / "retrieval"),
            STRATA_RETRIEVAL_MODEL_CACHE_DIR=str(MODEL_CACHE.resolve()),
            STRATA_RETRIEVAL_LOG_LEVEL="WARNING",
            STRATA_RETRIEVAL_DRAIN_SECONDS="0",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    clusters = [
        Cluster("postgresql", n, postgres, work, retrieval_address=address, with_metrics=True)
        for n in REPLICAS
    ]
    try:
        wait_until_serving(address, retrieval, within=600)
        for cluster in clusters:
            cluster.start()
        for cluster in clusters:
            cluster.wait_serving()
        found = asyncio.run(measure(clusters, address, [retrieval.pid], messages, rounds))
    finally:
        for cluster in clusters:
            cluster.stop()
        retrieval.terminate()
        retrieval.wait(timeout=60)
    for row in found:
        print(f"bench: outbox {row}", flush=True)
    return found
