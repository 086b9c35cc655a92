"""A quiet tenant's latency alone and beside each single-tenant flood, in one run (issue 26).

RetrievalService (real embedder, embedded engine) and MemoryService (SQLite) run in child processes
through their public entry points, each with a descriptor limit of 1,024 (soft and hard, the common
default). Two tenants hold one agent each with ``PASSAGES`` archival passages. The quiet tenant runs
``rounds`` rounds (and more, until 10 s have passed) of four calls, one after another, over one
long-lived channel: GetBlock, a plain SearchArchival, an UpdateBlock of its block, and a GetBlock over a
new channel (``connect``: connecting included, 5 s deadline). It does so alone, then beside each flood
of :mod:`bench.tenant_isolation.floods` (each in a process of its own, started 2 s before the quiet
rounds and stopped after them), then alone again. Each flood's figure is the quiet p50 (and p99, near
the largest with these sample counts) over the quiet p50 (p99) of both alone phases pooled (the baseline); a
quiet call that failed is counted, not timed. Each phase also records the load average and the CPU (in
cores) that each service, the flood client and this process (the quiet client) used while the quiet
tenant measured: on a shared 2-core host the load generators' own CPU competes with the services.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.field_mask_pb2 import FieldMask

from bench.perf.processes import cpu_seconds
from bench.tenant_isolation.floods import KINDS
from bench.tenant_isolation.processes import Child, free_address, wait_serving
from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb

QUIET = (("x-strata-tenant", "quiet"),)
NOISY = (("x-strata-tenant", "noisy"),)
PASSAGES = 200
NOFILE = 1024
OPERATIONS = ("get", "search", "edit", "connect")
TOPICS = ["garden", "tomatoes", "invoice", "meeting", "travel", "recipe", "music", "tennis"]
WARMUP_SECONDS = 2.0
SETTLE_SECONDS = 2.0
MIN_PHASE_SECONDS = 10.0
"""A phase measures for at least this long, so a flood's steady state is what is measured."""


@dataclass
class Tenant:
    agent_id: str


async def seed(stub: MemoryStub, metadata: tuple[tuple[str, str]], name: str) -> Tenant:
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name=name), blocks=[pb.Block(label="human", value="The user likes tennis.")]
        ),
        metadata=metadata,
        timeout=60,
    )
    passages = [
        pb.Passage(text=f"note {i} about {TOPICS[i % len(TOPICS)]} and more", tags=[TOPICS[i % len(TOPICS)]])
        for i in range(PASSAGES)
    ]
    await stub.CreatePassages(
        api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True),
        metadata=metadata,
        timeout=600,
    )
    return Tenant(agent.id)


class QuietTenant:
    """The quiet tenant's four calls, each timed; failures counted by status."""

    def __init__(self, address: str, stub: MemoryStub, tenant: Tenant) -> None:
        self.address = address
        self.stub = stub
        self.ref = pb.BlockRef(agent_id=tenant.agent_id, label="human")
        self.agent_id = tenant.agent_id

    async def get(self, i: int) -> None:
        await self.stub.GetBlock(api.GetBlockRequest(block=self.ref), metadata=QUIET, timeout=30)

    async def search(self, i: int) -> None:
        request = api.SearchArchivalRequest(
            agent_id=self.agent_id, query=f"{TOPICS[i % len(TOPICS)]} {i}", top_k=10
        )
        await self.stub.SearchArchival(request, metadata=QUIET, timeout=30)

    async def edit(self, i: int) -> None:
        block = pb.Block(value=f"The user likes tennis ({i}).")
        request = api.UpdateBlockRequest(ref=self.ref, block=block, update_mask=FieldMask(paths=["value"]))
        await self.stub.UpdateBlock(request, metadata=QUIET, timeout=30)

    async def connect(self, i: int) -> None:
        async with grpc.aio.insecure_channel(self.address) as channel:
            stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            await stub.GetBlock(api.GetBlockRequest(block=self.ref), metadata=QUIET, timeout=5)

    async def rounds(self, count: int, *, at_least: float = 0.0) -> dict[str, dict[str, Any]]:
        """``count`` rounds, and more until ``at_least`` seconds have passed."""
        took: dict[str, list[float]] = {op: [] for op in OPERATIONS}
        failed: dict[str, dict[str, int]] = {op: {} for op in OPERATIONS}
        until, i = time.perf_counter() + at_least, 0
        while i < count or time.perf_counter() < until:
            i += 1
            for op in OPERATIONS:
                started = time.perf_counter()
                try:
                    await getattr(self, op)(i)
                except grpc.aio.AioRpcError as error:
                    name = error.code().name
                    failed[op][name] = failed[op].get(name, 0) + 1
                    continue
                took[op].append((time.perf_counter() - started) * 1000)
        return {op: summary(took[op]) | {"failed": failed[op], "samples_ms": took[op]} for op in OPERATIONS}


def summary(took: list[float]) -> dict[str, Any]:
    if not took:
        return {"n": 0}
    ordered = sorted(took)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))], 2),
    }


def ratios(alone: dict[str, Any], during: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op in OPERATIONS:
        base, now = alone[op], during[op]
        if not now.get("n") or not base.get("n"):
            out[op] = {"p50": None, "p99": None}
            continue
        out[op] = {q: round(now[f"{q}_ms"] / base[f"{q}_ms"], 2) for q in ("p50", "p99")}
    return out


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


async def run(
    work: Path,
    *,
    rounds: int = 40,
    floods: tuple[str, ...] = KINDS,
    admission: bool = True,
    duty: float | None = None,
) -> dict[str, Any]:
    """Start the services under ``work``, seed both tenants and measure every phase (``admission``
    False: MemoryService without its per-tenant pools, STRATA_MEMORY_ADMISSION=false; ``duty``:
    STRATA_MEMORY_ADMISSION_DUTY, None: the service's default)."""
    duty_env = {} if duty is None else {"STRATA_MEMORY_ADMISSION_DUTY": str(duty)}
    retrieval_address, memory_address = free_address(), free_address()
    retrieval = Child(
        "strata_retrieval.main",
        [],
        work / "retrieval.log",
        env={
            "STRATA_RETRIEVAL_ADDRESS": retrieval_address,
            "STRATA_RETRIEVAL_DATA_DIR": str(work / "retrieval"),
            "STRATA_RETRIEVAL_LOG_LEVEL": "WARNING",
        },
        nofile=NOFILE,
    )
    memory: Child | None = None
    try:
        await wait_serving(retrieval_address, retrieval)
        memory = Child(
            "strata_memory.main",
            [],
            work / "memory.log",
            env={
                "STRATA_MEMORY_ADDRESS": memory_address,
                "STRATA_MEMORY_DATABASE_URL": f"sqlite:///{work}/memory.sqlite3",
                "STRATA_MEMORY_RETRIEVAL_ADDRESS": retrieval_address,
                "STRATA_MEMORY_LOG_LEVEL": "WARNING",
                "STRATA_MEMORY_ADMISSION": "true" if admission else "false",
            }
            | duty_env,
            nofile=NOFILE,
        )
        await wait_serving(memory_address, memory)
        servers = {"memory": memory.pid, "retrieval": retrieval.pid, "quiet client": os.getpid()}
        found = await _phases(work, memory_address, rounds, floods, servers)
        return found | {"admission": admission, "duty": duty}
    finally:
        if memory is not None:
            memory.stop()
        retrieval.stop()


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def _cores(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, float]:
    """CPU each process used over ``seconds`` of wall time, in cores."""
    return {name: round((after[name] - before[name]) / seconds, 2) for name in before}


async def _timed_rounds(quiet: QuietTenant, rounds: int, pids: dict[str, int]) -> dict[str, Any]:
    """The quiet rounds, the load average after them and the cores each process used meanwhile."""
    cpu, began = _cpu(pids), time.perf_counter()
    measured = await quiet.rounds(rounds, at_least=MIN_PHASE_SECONDS)
    seconds = time.perf_counter() - began
    return measured | {
        "load": _load(),
        "cores": _cores(cpu, _cpu(pids), seconds),
        "seconds": round(seconds, 2),
    }


async def _phases(
    work: Path, address: str, rounds: int, floods: tuple[str, ...], servers: dict[str, int]
) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        quiet = QuietTenant(address, stub, await seed(stub, QUIET, "quiet"))
        noisy = await seed(stub, NOISY, "noisy")
        await quiet.rounds(5)  # warm up
        phases: dict[str, Any] = {"alone": await _timed_rounds(quiet, rounds, servers)}
        print(f"tenant_isolation: alone {_brief(phases['alone'])}", flush=True)
        for kind in floods:
            flooder = Child(
                "bench.tenant_isolation.floods",
                [kind, "--address", address, "--agent", noisy.agent_id],
                work / f"flood-{kind}.log",
            )
            began = time.perf_counter()
            await asyncio.sleep(WARMUP_SECONDS)
            measured = await _timed_rounds(quiet, rounds, servers | {"flood client": flooder.pid})
            outcomes = flooder.stop()
            seconds = time.perf_counter() - began
            phases[kind] = measured | {
                "flood_seconds": round(seconds, 1),
                "flood_outcomes": json.loads(outcomes.strip().splitlines()[-1]) if outcomes.strip() else {},
            }
            print(
                f"tenant_isolation: {kind} {_brief(phases[kind])} flood {phases[kind]['flood_outcomes']}",
                flush=True,
            )
            await asyncio.sleep(SETTLE_SECONDS)
        phases["alone_again"] = await _timed_rounds(quiet, rounds, servers)
        print(f"tenant_isolation: alone again {_brief(phases['alone_again'])}", flush=True)
    baseline = {
        op: summary(phases["alone"][op]["samples_ms"] + phases["alone_again"][op]["samples_ms"])
        for op in OPERATIONS
    }
    for phase in phases.values():
        for op in OPERATIONS:
            phase[op].pop("samples_ms")
    return {
        "rounds": rounds,
        "passages_per_tenant": PASSAGES,
        "descriptor_limit": NOFILE,
        "baseline": baseline,
        "phases": phases,
        "ratios": {kind: ratios(baseline, phases[kind]) for kind in floods},
        "how": (__doc__ or "").strip().replace("\n", " "),
    }


def _brief(phase: dict[str, Any]) -> str:
    parts = []
    for op in OPERATIONS:
        found = phase[op]
        timed = f"{found['p50_ms']}/{found['p99_ms']} ms" if found.get("n") else "-"
        failed = f" failed {found['failed']}" if found["failed"] else ""
        parts.append(f"{op} {timed}{failed}")
    return "; ".join(parts)
