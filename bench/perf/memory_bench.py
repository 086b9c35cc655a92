"""MemoryService next to the gRPC floor: reads and memory-tool edits, latency and throughput.

Two floors, both ``grpc.health.v1.Health/Check`` measured in the same run: a *bare* ``grpc.aio``
server with only the health service (the floor of record for the latency targets: what any Python
gRPC call costs here), and MemoryService's own health check (same interceptors, same event loop, so a
ratio to it isolates the operation's own cost). The bare floor is measured at c=1 just before and
just after the operations at c=1 (its p50 is the mean of the two), with both servers up. Each
operation is measured at concurrency 1 (latency) and at 8 and 32 (throughput) and given as a ratio to
the floors at the same concurrency. Edits are real tool
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


# The latency targets of issue 18 (p50 at c=1, as a multiple of the floor).
TARGETS = {
    "GetBlock": 2.0,
    "RenderMemory": 2.0,
    "GetSystemPrompt": 2.5,
    "ExecuteTool(memory_replace)": 4.0,
    "ExecuteTool(core_memory_append)": 4.0,
}


def _ratios(op: dict[str, Any], floor: dict[str, Any]) -> dict[str, float]:
    c1, f1 = op["c1"]["latency_ms"], floor["c1"]["latency_ms"]
    ratios = {"p50_latency_c1": c1["p50"] / f1["p50"], "p99_latency_c1": c1["p99"] / f1["p99"]}
    for c in CONCURRENCY[1:]:
        ratios[f"throughput_c{c}"] = op[f"c{c}"]["rps"] / floor[f"c{c}"]["rps"]
    return {k: round(v, 3) for k, v in ratios.items()}


def bare_floor_p50(bare: dict[str, Any]) -> float:
    """The bare floor's p50 at c=1: the mean of the runs before and after the operations."""
    runs = [float(bare[key]["latency_ms"]["p50"]) for key in ("c1", "c1_after") if key in bare]
    return sum(runs) / len(runs)


def verdicts(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target's p50 ratio to both floors; the verdict of record uses the bare floor."""
    bare = bare_floor_p50(results["bare_floor"])
    own = results["floor"]["c1"]["latency_ms"]["p50"]
    found = {}
    for name, limit in TARGETS.items():
        p50 = results["operations"][name]["c1"]["latency_ms"]["p50"]
        found[name] = {
            "limit": limit,
            "p50_ms": p50,
            "ratio_bare": round(p50 / bare, 3),
            "ratio_own": round(p50 / own, 3),
            "met": p50 / bare <= limit,
            "met_own": p50 / own <= limit,
        }
    return found


def run(work: Path, times: Durations) -> dict[str, Any]:
    """Measure the floor and every operation on one MemoryService process, then on two."""
    database = f"sqlite:///{work}/memory.sqlite3"
    results: dict[str, Any] = {"floor": {}, "operations": {}, "ratios": {}, "bare_floor": {}}
    print("MemoryService, one process, beside a bare grpc.aio server (health service only)", flush=True)
    with (
        ServerProcess(["bare"], work / "bare.log") as bare,
        ServerProcess(["memory", "--database-url", database], work / "memory.log") as server,
    ):
        seeds = seed(server.address)
        bare_floor = results["bare_floor"]
        bare_floor["c1"] = _scenario(bare.address, Call(HEALTH), 1, times, [bare.pid])
        for c in CONCURRENCY:
            results["floor"][f"c{c}"] = _scenario(server.address, Call(HEALTH), c, times, [server.pid])
        for c in CONCURRENCY:
            for name, call in operations(seeds, c).items():
                scenario = _scenario(server.address, call, c, times, [server.pid])
                results["operations"].setdefault(name, {})[f"c{c}"] = scenario
            if c == 1:
                bare_floor["c1_after"] = _scenario(bare.address, Call(HEALTH), 1, times, [bare.pid])
        bare_floor["c32"] = _scenario(bare.address, Call(HEALTH), 32, times, [bare.pid])
    for name, op in results["operations"].items():
        results["ratios"][name] = _ratios(op, results["floor"])
    results["targets"] = verdicts(results)
    _print_verdicts(results)
    results["two_processes"] = run_two_processes(work, database, times)
    return results


def _print_verdicts(results: dict[str, Any]) -> None:
    bare = bare_floor_p50(results["bare_floor"])
    own = results["floor"]["c1"]["latency_ms"]["p50"]
    print(f"  floors at c=1: bare grpc.aio p50 {bare:.3f} ms, MemoryService health p50 {own:.3f} ms")
    for name, found in results["targets"].items():
        print(
            f"  {name:<34} p50 {found['p50_ms']:.3f} ms = {found['ratio_bare']:.2f}x bare "
            f"({'met' if found['met'] else 'NOT met'}, target {found['limit']}x), "
            f"{found['ratio_own']:.2f}x own health",
            flush=True,
        )


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
