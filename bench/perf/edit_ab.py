"""Paired, interleaved A/B of MemoryService's c=1 scenarios (``make bench``'s c=1 memory phase: the
two edits by default, ``--reads`` adds GetBlock, RenderMemory and GetSystemPrompt) between sources of
MemoryService, beside the bare ``grpc.aio`` floor.

    python -m bench.perf.edit_ab --tree main=/tmp/main --tree new=. --rounds 150 [--reads]

Each ``--tree NAME=PATH`` is a source tree (a checkout or ``git archive`` of a commit); the first is
the reference the others are compared with. Each server runs with
``PYTHONPATH=<tree>/services/memory`` ahead of the editable install, on its own SQLite file, seeded as
``bench.perf.memory_bench`` seeds (a 4,3xx-character block for memory_replace, blocks growing from
~270 characters for core_memory_append). Every lane (the bare floor, each server's own health check
and both edits on each server) takes turns in rounds shuffled afresh (:mod:`bench.perf.interleaved`),
so every variant shares the load, and reports its p50, its ratio to the bare floor, its server's CPU
per call and, for the variants after the first, the median over rounds of its round median over the
reference's (``vs_ref``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from pathlib import Path
from typing import Any

from bench.perf.interleaved import Lane, interleave, paired_ratio
from bench.perf.memory_bench import BARE, CALLS_PER_ROUND, block_sizes, operations, seed
from bench.perf.processes import ServerProcess
from bench.perf.scenarios import HEALTH, Call

WORK = Path(".cache/bench/work/edit_ab")
EDITS = ("ExecuteTool(memory_replace)", "ExecuteTool(core_memory_append)")
READS = ("GetBlock", "RenderMemory", "GetSystemPrompt")


def _server(name: str, tree: Path) -> ServerProcess:
    database = WORK / f"{name}.sqlite3"
    for stale in WORK.glob(f"{name}.sqlite3*"):
        stale.unlink()
    env = {"PYTHONPATH": str(tree.resolve() / "services" / "memory")}
    return ServerProcess(["memory", "--database-url", f"sqlite:///{database}"], WORK / f"{name}.log", env=env)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.edit_ab", description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH, repeatable")
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--calls", type=int, default=CALLS_PER_ROUND)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--reads", action="store_true", help="the three reads too")
    parser.add_argument("--no-edits", action="store_true", help="leave the two edits out")
    args = parser.parse_args()
    trees = {name: Path(path) for name, path in (each.split("=", 1) for each in args.tree)}
    reference = next(iter(trees))
    scenarios = (READS if args.reads else ()) + (() if args.no_edits else EDITS)
    WORK.mkdir(parents=True, exist_ok=True)
    load = [os.getloadavg()[0]]
    with contextlib.ExitStack() as running:
        bare = running.enter_context(ServerProcess(["bare"], WORK / "bare.log"))
        servers = {name: running.enter_context(_server(name, tree)) for name, tree in trees.items()}
        lanes = [Lane(BARE, bare.address, Call(HEALTH), bare.pid)]
        seeds = {}
        for name, server in servers.items():
            seeds[name] = seed(server.address)
            lanes.append(Lane(f"{name} floor", server.address, Call(HEALTH), server.pid))
            ops = operations(seeds[name], 1)
            lanes += [Lane(f"{name} {op}", server.address, ops[op], server.pid) for op in scenarios]
        found = interleave(lanes, rounds=args.rounds, calls=args.calls, seed=args.seed)
        sizes = {name: block_sizes(server.address, seeds[name]) for name, server in servers.items()}
    load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {}
    for lane in lanes:
        name = lane.name
        variant, _, scenario = name.partition(" ")
        row = {
            "p50_ms": found[name]["latency_ms"]["p50"],
            "ratio_bare": paired_ratio(found, name, BARE),
            "server_cpu_us_per_call": found[name].get("server_cpu_us_per_call"),
            "not_ok": found[name]["count"] - found[name]["ok"],
        }
        if variant in trees and variant != reference:
            row["vs_ref"] = paired_ratio(found, name, f"{reference} {scenario}")
        summary[name] = row
        print(f"  {name:<40} " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    summary["meta"] = {
        "trees": args.tree,
        "rounds": args.rounds,
        "calls": args.calls,
        "seed": args.seed,
        "load": load,
        "steal_percent": found[BARE]["cpu_steal_percent"],
        "edited_blocks": sizes,
    }
    print(json.dumps(summary["meta"]), flush=True)
    if args.output:
        args.output.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
