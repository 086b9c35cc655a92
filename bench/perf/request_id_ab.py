"""Paired, interleaved A/B of what a request_id costs AppendMessages on one MemoryService (SQLite), beside
the bare ``grpc.aio`` floor and the server's own health check.

    python -m bench.perf.request_id_ab --rounds 60

Lanes, each on its own agent, one call in flight, taking turns in rounds shuffled afresh
(:mod:`bench.perf.interleaved`): a two-message append without a request_id, with a new one each call
(what the Python and TypeScript clients send), and the same one every call (a retry answered from the
record: nothing written). Reports each lane's p50, its server CPU per call and the median over rounds
of its round median over the append without a request_id (``vs_none``). RetrievalService is absent:
index jobs accumulate alike for both writing lanes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from pathlib import Path
from typing import Any

from bench.perf.interleaved import Lane, interleave, paired_ratio
from bench.perf.memory_bench import BARE, CALLS_PER_ROUND
from bench.perf.processes import ServerProcess
from bench.perf.scenarios import HEALTH, Call
from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb

WORK = Path(".cache/bench/work/request_id_ab")
SERVICE = "strata.memory.v1.MemoryService"
MODES = ("none", "new", "repeat")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.request_id_ab", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--calls", type=int, default=CALLS_PER_ROUND)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    for stale in WORK.glob("memory.sqlite3*"):
        stale.unlink()
    load = [os.getloadavg()[0]]
    with contextlib.ExitStack() as running:
        bare = running.enter_context(ServerProcess(["bare"], WORK / "bare.log"))
        server = running.enter_context(
            ServerProcess(
                ["memory", "--database-url", f"sqlite:///{WORK / 'memory.sqlite3'}"], WORK / "memory.log"
            )
        )
        with MemoryClient(server.address) as client:
            agents = {mode: client.create_agent(agent=pb.Agent(name=f"append-{mode}")).id for mode in MODES}
        lanes = [
            Lane(BARE, bare.address, Call(HEALTH), bare.pid),
            Lane("floor", server.address, Call(HEALTH), server.pid),
        ]
        lanes += [
            Lane(
                f"append request_id={mode}",
                server.address,
                Call(
                    f"{SERVICE}/AppendMessages",
                    factory="append_messages",
                    params={"agent_id": agents[mode], "request_id": mode},
                ),
                server.pid,
            )
            for mode in MODES
        ]
        found = interleave(lanes, rounds=args.rounds, calls=args.calls, seed=args.seed)
    load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {}
    for lane in lanes:
        row = {
            "p50_ms": found[lane.name]["latency_ms"]["p50"],
            "ratio_bare": paired_ratio(found, lane.name, BARE),
            "vs_none": paired_ratio(found, lane.name, "append request_id=none"),
            "server_cpu_us_per_call": found[lane.name].get("server_cpu_us_per_call"),
            "not_ok": found[lane.name]["count"] - found[lane.name]["ok"],
        }
        summary[lane.name] = row
        print(f"  {lane.name:<28} " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    summary["meta"] = {
        "rounds": args.rounds,
        "calls": args.calls,
        "seed": args.seed,
        "load": load,
        "steal_percent": found[BARE]["cpu_steal_percent"],
    }
    print(json.dumps(summary["meta"]), flush=True)
    if args.output:
        args.output.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
