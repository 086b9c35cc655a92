"""What tracing and metrics cost: the floor (Health/Check), GetBlock and a hybrid SearchArchival,
measured against two server pairs side by side in one run, paired round by round.

``python -m bench.perf.mesh_overhead [--rounds 8] [--calls 200]``

Config A: tracing and metrics off (the defaults). Config B: metrics on (its own port) and tracing on
with every span recorded and handed to a batch processor whose exporter discards them (the cost of
making spans, not of a collector). Each config is one child process holding a RetrievalService and a
MemoryService (same code, same embedder). Rounds alternate which config goes first; each round runs
``--calls`` sequential calls per operation on one channel, timing each (p50) and reading the server
process's CPU time around them (µs per call, from /proc). The machine is shared: read the paired
ratios (median of per-round B/A), not the absolute figures; CPU per call is the steadier of the two.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb

OPERATIONS = ("floor (Health/Check)", "GetBlock", "SearchArchival (hybrid)")


class _Discard:
    """A span exporter that drops what it is given (so B measures span creation and batching)."""

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        del spans
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        del timeout_millis
        return True


async def _serve(config: str, root: Path) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from bench.servers import ServicePair
    from strata_serving.server_tracing import tracer_provider

    observed = config == "B"
    metrics = "127.0.0.1:0" if observed else None
    if observed:
        provider = tracer_provider("bench")
        provider.add_span_processor(BatchSpanProcessor(_Discard()))  # type: ignore[arg-type]
        trace.set_tracer_provider(provider)
    logs: dict[str, Any] = {"metrics_address": metrics, "log_level": "WARNING", "log_json": True}
    pair = ServicePair(
        root / config,
        retrieval_settings={"model_cache_dir": Path(".cache/bench/models"), **logs},
        memory_settings=logs,
        quick_retries=False,
    )
    await pair.start()
    print(f"READY {pair.memory_address}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await pair.stop()


def _seed(address: str) -> dict[str, str]:
    with grpc.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = stub.CreateAgent(
            api.CreateAgentRequest(
                agent=pb.Agent(name="bench"), blocks=[pb.Block(label="human", value="Name: Alex", limit=5000)]
            )
        )
        passages = [
            pb.Passage(text=f"Note {i}: the ferry to island {i % 7} leaves at {i % 12} o'clock.")
            for i in range(60)
        ]
        stub.CreatePassages(
            api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True)
        )
    return {"agent_id": agent.id}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux ``/proc``): less sensitive than wall time
    to other work on a shared machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _round(address: str, seed: dict[str, str], calls: int, pid: int) -> dict[str, float]:
    """p50 (ms) of ``calls`` sequential calls of each operation, and the server's CPU µs per call."""
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check
        memory = memory_service_pb2_grpc.MemoryServiceStub(channel)
        requests: dict[str, tuple[Any, Any]] = {
            OPERATIONS[0]: (health, health_pb2.HealthCheckRequest()),
            OPERATIONS[1]: (
                memory.GetBlock,
                api.GetBlockRequest(block=pb.BlockRef(agent_id=seed["agent_id"], label="human")),
            ),
            OPERATIONS[2]: (
                memory.SearchArchival,
                api.SearchArchivalRequest(
                    agent_id=seed["agent_id"], query="when does the ferry leave", top_k=5
                ),
            ),
        }
        result = {}
        for name, (method, request) in requests.items():
            for _ in range(10):
                method(request, timeout=30)
            times = []
            cpu_before = _cpu_seconds(pid)
            for _ in range(calls):
                began = time.perf_counter()
                method(request, timeout=30)
                times.append((time.perf_counter() - began) * 1000)
            result[name] = statistics.median(times)
            result[f"{name} cpu"] = (_cpu_seconds(pid) - cpu_before) / calls * 1e6
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.mesh_overhead")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--child", choices=["A", "B"])
    parser.add_argument("--root", type=Path)
    args = parser.parse_args()
    if args.child:
        asyncio.run(_serve(args.child, args.root))
        return
    root = Path(tempfile.mkdtemp(prefix="mesh-overhead-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")} | {"OPENBLAS_NUM_THREADS": "1"}
    children = {
        config: subprocess.Popen(
            [sys.executable, "-m", "bench.perf.mesh_overhead", "--child", config, "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for config in ("A", "B")
    }
    try:
        addresses = {}
        for config, child in children.items():
            assert child.stdout is not None
            addresses[config] = child.stdout.readline().split()[1]
        seeds = {config: _seed(address) for config, address in addresses.items()}
        rounds: list[dict[str, dict[str, float]]] = []
        for index in range(args.rounds):
            order = ("A", "B") if index % 2 == 0 else ("B", "A")
            rounds.append(
                {
                    config: _round(addresses[config], seeds[config], args.calls, children[config].pid)
                    for config in order
                }
            )
    finally:
        for child in children.values():
            assert child.stdin is not None
            child.stdin.write("\n")
            child.stdin.flush()
            child.wait(timeout=60)
    report = {}
    columns = ("A p50 ms", "B p50 ms", "B/A", "A cpu µs", "B cpu µs", "B/A")
    print(f"{'operation':<26}", *(f"{column:>9}" for column in columns))
    for name in OPERATIONS:
        row: dict[str, float] = {}
        for key, metric in ((name, "p50_ms"), (f"{name} cpu", "cpu_us_per_call")):
            a = statistics.median(r["A"][key] for r in rounds)
            b = statistics.median(r["B"][key] for r in rounds)
            ratio = statistics.median(r["B"][key] / r["A"][key] for r in rounds if r["A"][key] > 0)
            row |= {
                f"a_{metric}": round(a, 3),
                f"b_{metric}": round(b, 3),
                f"{metric}_ratio": round(ratio, 3),
            }
        report[name] = row
        print(f"{name:<26}", *(f"{value:>9.3f}" for value in row.values()))
    print(json.dumps({"rounds": args.rounds, "calls": args.calls, "results": report}))


if __name__ == "__main__":
    main()
