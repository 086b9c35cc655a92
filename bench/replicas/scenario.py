"""MemoryService replicas: tool-edit and GetBlock throughput at concurrency 32 on one SQLite process
beside 1, 2 and 3 replicas on one PostgreSQL database, and the outbox's delivery rate and upserts per
job with 1 and 3 replicas, in one run. Part of ``make bench``; alone:

    python -m bench.replicas.scenario [--postgres postgresql+psycopg://postgres@127.0.0.1:5432/test]

Throughput: every configuration's processes run at once (a fresh SQLite file; a fresh PostgreSQL
schema each, dropped after) and the rounds are interleaved (each round runs every configuration, in a
rotated order), so a noisy minute hits all of them; the figure is the median over rounds. One asyncio
client drives each configuration through one channel balanced round robin over its replicas
(``ipv4:a,b,c``): 32 agents, one per call in flight, so the edits touch 32 different blocks (edits of
one block are serialised by its row lock whatever the replica count). ``cores`` is the CPU each
process group used during the phase (``/proc``): the load generator, the replicas, the PostgreSQL
backends serving them (found by ``application_name``) and the whole machine; everything shares this
machine's cores, so the figures show which process runs out of CPU first, not what separate hosts
would give. Outbox: ``bench.replicas.outbox``. Results: ``bench/results/replicas.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError

from bench.perf import process_cpu
from bench.perf.host import cpu_ticks, steal_percent
from bench.replicas.outbox import MESSAGES, outbox_delivery
from bench.replicas.processes import Cluster, balanced_channel
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb

RESULTS = Path(__file__).resolve().parents[1] / "results"
DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
CONCURRENCY = 32
CONFIGS = (("sqlite", 1), ("postgresql", 1), ("postgresql", 2), ("postgresql", 3))
ROUNDS, EDITS, READS, WARMUP = 3, 480, 960, 96
"""Per configuration and round: tool edits and GetBlock calls (after ``WARMUP`` of each, once)."""
QUICK = {"rounds": 1, "edits": 96, "reads": 192}

Call = Callable[[int, int], Awaitable[None]]


class Driver:
    """One configuration's client: a balanced channel and one agent per call in flight."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.channel = balanced_channel(cluster.target)
        self.stub = memory_service_pb2_grpc.MemoryServiceStub(self.channel)
        self.agents: list[str] = []

    async def prepare(self) -> None:
        for i in range(CONCURRENCY):
            agent = await self.stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=f"a{i}")))
            self.agents.append(agent.id)

    async def edit(self, worker: int, n: int) -> None:
        arguments = json.dumps({"label": "human", "content": f"note {n}"})
        run = await self.stub.ExecuteTool(
            api.ExecuteToolRequest(
                agent_id=self.agents[worker], tool_name="core_memory_append", arguments=arguments
            )
        )
        assert run.ok, run.text

    async def read(self, worker: int, _n: int) -> None:
        await self.stub.GetBlock(
            api.GetBlockRequest(block=pb.BlockRef(agent_id=self.agents[worker], label="human"))
        )

    async def measured(self, call: Call, total: int) -> dict[str, Any]:
        """``total`` calls at concurrency 32, with the CPU each process group used meanwhile."""
        groups = {
            "load_generator": [os.getpid()],
            "replicas": self.cluster.pids(),
            "postgresql": self.cluster.backend_pids(),
        }
        before = process_cpu.read(groups)
        figures = await phase(call, total)
        return figures | {"cores": process_cpu.cores_used(before, process_cpu.read(groups))}


async def phase(call: Call, total: int) -> dict[str, float]:
    latencies: list[float] = []

    async def worker(index: int) -> None:
        for n in range(index, total, CONCURRENCY):
            started = time.perf_counter()
            await call(index, n)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(CONCURRENCY)))
    wall = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "per_s": round(total / wall, 1),
        "p50_ms": round(cuts[49] * 1e3, 2),
        "p99_ms": round(cuts[98] * 1e3, 2),
    }


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds of one configuration's phase, and every round's rate."""
    return {
        "per_s": round(statistics.median(r["per_s"] for r in rounds), 1),
        "per_s_rounds": [r["per_s"] for r in rounds],
        "p50_ms": round(statistics.median(r["p50_ms"] for r in rounds), 2),
        "p99_ms": round(statistics.median(r["p99_ms"] for r in rounds), 2),
        "cores": {
            name: round(statistics.median(r["cores"][name] for r in rounds), 2) for name in rounds[0]["cores"]
        },
    }


async def throughput(clusters: list[Cluster], rounds: int, edits: int, reads: int) -> list[dict[str, Any]]:
    drivers = [Driver(cluster) for cluster in clusters]
    try:
        for driver in drivers:
            await driver.prepare()
            await phase(driver.edit, WARMUP)  # opens every replica's connections to its store
            await phase(driver.read, WARMUP)
        edited: list[list[dict[str, Any]]] = [[] for _ in drivers]
        read: list[list[dict[str, Any]]] = [[] for _ in drivers]
        for round_ in range(rounds):
            for k in range(len(drivers)):
                index = (k + round_) % len(drivers)  # rotated: no configuration always runs first
                edited[index].append(await drivers[index].measured(drivers[index].edit, edits))
                read[index].append(await drivers[index].measured(drivers[index].read, reads))
            print(f"bench: replicas round {round_ + 1}/{rounds} done", flush=True)
        return [
            {
                "backend": driver.cluster.backend,
                "replicas": driver.cluster.replicas,
                "tool_edit": summarise(edited[i]) | {"calls_per_round": edits},
                "get_block": summarise(read[i]) | {"calls_per_round": reads},
            }
            for i, driver in enumerate(drivers)
        ]
    finally:
        for driver in drivers:
            await driver.channel.close(None)


def postgres_url() -> str:
    return os.environ.get("STRATA_TEST_POSTGRES_URL", DEFAULT_POSTGRES)


def unreachable_reason(postgres: str) -> str | None:
    engine = create_engine(postgres)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as failure:
        where = make_url(postgres).render_as_string(hide_password=True)
        return f"PostgreSQL at {where} is unreachable ({failure.orig})"
    finally:
        engine.dispose()
    return None


def run_or_skip(work: Path, *, quick: bool = False) -> dict[str, Any]:
    """:func:`run` on ``STRATA_TEST_POSTGRES_URL`` (or the default), or why it could not run."""
    postgres = postgres_url()
    reason = unreachable_reason(postgres)
    if reason is not None:
        print(f"bench: replicas skipped: {reason}", flush=True)
        return {"skipped": reason}
    return run(work, postgres, quick=quick)


def run(work: Path, postgres: str = DEFAULT_POSTGRES, *, quick: bool = False) -> dict[str, Any]:
    """The whole scenario (a few minutes); the dict ``replicas.json`` holds and the report reads."""
    sizes = QUICK if quick else {"rounds": ROUNDS, "edits": EDITS, "reads": READS}
    load_before, ticks, started = os.getloadavg(), cpu_ticks(), time.monotonic()
    clusters = [Cluster(backend, replicas, postgres, work) for backend, replicas in CONFIGS]
    try:
        for cluster in clusters:
            cluster.start()
        for cluster in clusters:
            cluster.wait_serving()
        runs = asyncio.run(throughput(clusters, **sizes))
    finally:
        for cluster in clusters:
            cluster.stop()
    for row in runs:
        print(f"bench: replicas {json.dumps(row)}", flush=True)
    outbox = outbox_delivery(work, postgres, messages=240 if quick else MESSAGES, rounds=1 if quick else 2)
    return {
        "runs": runs,
        "outbox": outbox,
        "meta": {
            "command": "python -m bench.replicas.scenario",
            "concurrency": CONCURRENCY,
            "rounds": sizes["rounds"],
            "cpus": os.cpu_count(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "cpu_steal_percent": steal_percent(ticks, cpu_ticks()),
            "wall_s": round(time.monotonic() - started, 1),
            "note": "load generator, replicas, RetrievalService and PostgreSQL share this machine's cores",
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--postgres", default=postgres_url())
    parser.add_argument("--quick", action="store_true", help="one short round (a smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS / "replicas.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        found = run(Path(work), args.postgres, quick=args.quick)
    args.out.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    print(f"bench: wrote {args.out}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
