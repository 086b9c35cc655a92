"""Tool-edit and GetBlock throughput at concurrency 32: one MemoryService on SQLite beside 1, 2 and 3
replicas on one PostgreSQL database, in one run. Results: ``bench/results/replicas.json``.

    python -m bench.replicas [--postgres postgresql+psycopg://postgres@127.0.0.1:5432/test]

Each configuration gets a fresh store (a new SQLite file; a new PostgreSQL schema, dropped after)
and its own ``strata-memory`` processes; one asyncio client drives them through one channel balanced
round robin over the replicas (``ipv4:a,b,c``). 32 agents, one per worker, so the edits touch 32
different blocks (edits of one block are serialised by its row lock whatever the replica count).
Everything shares this machine's cores with the client, so the figures show where CPU runs out,
not what separate hosts would give; the machine is shared and noisy, so read them as rough.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import create_engine, make_url, text

from strata.client.channel_policy import channel_options, strata_retryable
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb

RESULTS = Path(__file__).resolve().parent / "results"
CONCURRENCY = 32
EDITS = 1600
READS = 3200
CONFIGS = (("sqlite", 1), ("postgresql", 1), ("postgresql", 2), ("postgresql", 3))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_serving(address: str) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for _ in range(600):
            try:
                reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.1)
    raise TimeoutError(address)


async def drive(target: str) -> dict[str, Any]:
    options = channel_options(strata_retryable(), balance_on_health="")
    async with grpc.aio.insecure_channel(target, options=options) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agents = [
            (await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=f"a{i}")))).id
            for i in range(CONCURRENCY)
        ]

        async def edit(worker: int, n: int) -> None:
            arguments = json.dumps({"label": "human", "content": f"note {n}"})
            run = await stub.ExecuteTool(
                api.ExecuteToolRequest(
                    agent_id=agents[worker], tool_name="core_memory_append", arguments=arguments
                )
            )
            assert run.ok, run.text

        async def read(worker: int, _n: int) -> None:
            await stub.GetBlock(
                api.GetBlockRequest(block=pb.BlockRef(agent_id=agents[worker], label="human"))
            )

        return {"tool_edit": await phase(edit, EDITS), "get_block": await phase(read, READS)}


async def phase(call: Any, total: int) -> dict[str, float]:
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
        "calls": total,
        "per_s": round(total / wall, 1),
        "p50_ms": round(cuts[49] * 1e3, 2),
        "p99_ms": round(cuts[98] * 1e3, 2),
    }


def run_config(backend: str, replicas: int, postgres: str, work: Path) -> dict[str, Any]:
    schema = f"bench_replicas_{uuid.uuid4().hex[:8]}"
    if backend == "sqlite":
        url = f"sqlite:///{work / uuid.uuid4().hex}.sqlite3"
    else:
        admin = create_engine(postgres)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        admin.dispose()
        url = (
            make_url(postgres)
            .update_query_dict({"options": f"-csearch_path={schema}"})
            .render_as_string(hide_password=False)
        )
    with socket.socket() as unreachable:  # bound, never listening: no RetrievalService needed here
        unreachable.bind(("127.0.0.1", 0))
        addresses = [f"127.0.0.1:{free_port()}" for _ in range(replicas)]
        environ = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
        processes = [
            subprocess.Popen(
                [sys.executable, "-m", "strata_memory.main"],
                env=environ
                | {
                    "STRATA_MEMORY_ADDRESS": address,
                    "STRATA_MEMORY_DATABASE_URL": url,
                    "STRATA_MEMORY_RETRIEVAL_ADDRESS": f"127.0.0.1:{unreachable.getsockname()[1]}",
                    "STRATA_MEMORY_LOG_LEVEL": "WARNING",
                },
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for address in addresses
        ]
        try:
            for address in addresses:  # one at a time: concurrent first migrations take turns anyway
                asyncio.run(wait_serving(address))
            figures = asyncio.run(drive("ipv4:" + ",".join(addresses)))
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process in processes:
                process.wait(timeout=30)
    if backend == "postgresql":
        admin = create_engine(postgres)
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
    return {"backend": backend, "replicas": replicas, **figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--out", type=Path, default=RESULTS / "replicas.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for backend, replicas in CONFIGS:
            rows.append(run_config(backend, replicas, args.postgres, Path(work)))
            print(json.dumps(rows[-1]), flush=True)
    meta = {
        "command": "python -m bench.replicas",
        "concurrency": CONCURRENCY,
        "cpus": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "note": "client, replicas and PostgreSQL share the machine's cores; the machine is shared and noisy",
    }
    args.out.write_text(json.dumps({"runs": rows, "meta": meta}, indent=1) + "\n", encoding="utf-8")
    print(f"bench: wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
