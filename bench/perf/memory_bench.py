"""MemoryService next to the gRPC floor: reads and memory-tool edits, latency and throughput.

The floor is ``grpc.health.v1.Health/Check`` on the same server process (same interceptors, same
event loop): the cost of a bare call. Each operation is measured at concurrency 1 (latency) and at 8
and 32 (throughput) and given as a ratio to the floor at the same concurrency. Edits are real tool
calls committed durably (SQLite WAL, ``synchronous=FULL``). Then the same server is run as two
processes sharing one port (SO_REUSEPORT) to see whether one Python process was the bottleneck.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.perf.processes import ServerProcess
from bench.perf.scenarios import HEALTH, Call, Durations, measure
from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb

SERVICE = "strata.memory.v1.MemoryService"
CONCURRENCY = (1, 8, 32)
PERSONA = (
    "I am Sam, a patient assistant who keeps notes about the people I help. "
    "I answer briefly, ask before assuming, and write down what matters.\n" * 4
)
HUMAN = "Name: Alex\nLives in Lyon, works as a nurse on night shifts.\nCounter [n=0].\nLikes hiking.\n" * 3


def _agent(client: MemoryClient, name: str, human: str = HUMAN) -> str:
    blocks = [
        pb.Block(label="persona", value=PERSONA, limit=20_000),
        pb.Block(label="human", value=human, limit=20_000),
    ]
    return client.create_agent(agent=pb.Agent(name=name, system="You are Sam."), blocks=blocks).id


def seed(address: str) -> dict[str, Any]:
    """One agent to read, and fresh agents per edit scenario (so every edit applies)."""
    with MemoryClient(address) as client:
        reader = _agent(client, "reader")
        single = HUMAN.replace("Counter [n=0].\n", "", 2)  # "[n=0]" must appear once for memory_replace
        replace = {c: [_agent(client, f"replace-{c}-{i}", single) for i in range(c)] for c in CONCURRENCY}
        append = {c: [_agent(client, f"append-{c}-{i}") for i in range(max(20, 3 * c))] for c in CONCURRENCY}
    return {"reader": reader, "replace": replace, "append": append}


def operations(seeds: dict[str, Any], concurrency: int) -> dict[str, Call]:
    reader = seeds["reader"]
    return {
        "GetBlock": Call(f"{SERVICE}/GetBlock", {"block": {"agent_id": reader, "label": "human"}}),
        "RenderMemory": Call(f"{SERVICE}/RenderMemory", {"agent_id": reader}),
        "GetSystemPrompt": Call(f"{SERVICE}/GetSystemPrompt", {"agent_id": reader}),
        "ExecuteTool(memory_replace)": Call(
            f"{SERVICE}/ExecuteTool",
            factory="memory_replace",
            params={"agent_ids": seeds["replace"][concurrency]},
        ),
        "ExecuteTool(core_memory_append)": Call(
            f"{SERVICE}/ExecuteTool",
            factory="core_memory_append",
            params={"agent_ids": seeds["append"][concurrency], "workers": concurrency},
        ),
    }


def _scenario(address: str, call: Call, c: int, times: Durations, pids: Sequence[int]) -> dict[str, Any]:
    seconds = times.latency if c == 1 else times.throughput
    return measure(address, call, c, seconds, warmup=times.warmup, server_pids=pids)


def _ratios(op: dict[str, Any], floor: dict[str, Any]) -> dict[str, float]:
    c1, f1 = op["c1"]["latency_ms"], floor["c1"]["latency_ms"]
    ratios = {"p50_latency_c1": c1["p50"] / f1["p50"], "p99_latency_c1": c1["p99"] / f1["p99"]}
    for c in CONCURRENCY[1:]:
        ratios[f"throughput_c{c}"] = op[f"c{c}"]["rps"] / floor[f"c{c}"]["rps"]
    return {k: round(v, 3) for k, v in ratios.items()}


def run(work: Path, times: Durations) -> dict[str, Any]:
    """Measure the floor and every operation on one MemoryService process, then on two."""
    database = f"sqlite:///{work}/memory.sqlite3"
    results: dict[str, Any] = {"floor": {}, "operations": {}, "ratios": {}}
    print("MemoryService, one process", flush=True)
    with ServerProcess(["memory", "--database-url", database], work / "memory.log") as server:
        seeds = seed(server.address)
        for c in CONCURRENCY:
            results["floor"][f"c{c}"] = _scenario(server.address, Call(HEALTH), c, times, [server.pid])
        for c in CONCURRENCY:
            for name, call in operations(seeds, c).items():
                scenario = _scenario(server.address, call, c, times, [server.pid])
                results["operations"].setdefault(name, {})[f"c{c}"] = scenario
    for name, op in results["operations"].items():
        results["ratios"][name] = _ratios(op, results["floor"])
    print("Bare grpc.aio server (health service only)", flush=True)
    with ServerProcess(["bare"], work / "bare.log") as bare:
        results["bare_floor"] = {
            f"c{c}": _scenario(bare.address, Call(HEALTH), c, times, [bare.pid]) for c in (1, 32)
        }
    results["two_processes"] = run_two_processes(work, database, times)
    return results


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_two_processes(work: Path, database: str, times: Durations) -> dict[str, Any]:
    """The floor, GetBlock and core_memory_append at c=32 with two server processes on one port."""
    print("MemoryService, two processes on one port (SO_REUSEPORT)", flush=True)
    address = f"127.0.0.1:{_free_port()}"
    args = ["memory", "--database-url", database, "--address", address, "--reuse-port"]
    servers = [ServerProcess(args, work / f"memory-{i}.log") for i in range(2)]
    try:
        for server in servers:
            server.start()
        with MemoryClient(address) as client:
            appenders = [_agent(client, f"append2-{i}") for i in range(96)]
            seeds = {"reader": _agent(client, "reader-2p"), "replace": {32: []}, "append": {32: appenders}}
        pids = [s.pid for s in servers]
        ops = operations(seeds, 32)
        return {
            "floor_c32": _scenario(address, Call(HEALTH), 32, times, pids),
            "GetBlock_c32": _scenario(address, ops["GetBlock"], 32, times, pids),
            "ExecuteTool(core_memory_append)_c32": _scenario(
                address, ops["ExecuteTool(core_memory_append)"], 32, times, pids
            ),
        }
    finally:
        for server in servers:
            server.stop()
