"""Paired A/B of MemoryService's durable tool edits *under concurrency* between source trees: what
group commit (edits that reach the store together share one transaction and one fsync) changes.

    python -m bench.perf.edit_group_ab --tree base=/tmp/base --tree new=. --concurrency 8 --rounds 6

Each ``--tree NAME=PATH`` runs one MemoryService (``PYTHONPATH=<tree>/services/memory``) on its own
SQLite file, seeded as ``bench.perf.memory_bench`` seeds; rounds alternate the trees (shuffled), each
a ``--seconds`` window of ``core_memory_append`` at ``--concurrency`` calls in flight (make bench's
throughput scenario: each worker on agents of its own). Per tree: calls/s and p50 per round; per round
the ratio to the first tree. ``--share N`` sets the writes pool's per-tenant share
(``STRATA_MEMORY_ADMISSION_WRITES=[max(4,N),N,64]``): with the default share of 1 one tenant's edits
are admitted one at a time and cannot meet in the store.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
from pathlib import Path
from typing import Any

from bench.perf.memory_bench import operations, seed
from bench.perf.processes import ServerProcess
from bench.perf.scenarios import measure

WORK = Path(".cache/bench/work/edit_group_ab")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.edit_group_ab", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH, repeatable")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--share", type=int, default=1)
    parser.add_argument("--op", default="ExecuteTool(core_memory_append)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    trees = {name: Path(path) for name, path in (each.split("=", 1) for each in args.tree)}
    reference = next(iter(trees))
    WORK.mkdir(parents=True, exist_ok=True)
    load = [os.getloadavg()[0]]
    pool = f"[{max(4, args.share)},{args.share},64]"
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with contextlib.ExitStack() as running:
        servers, calls = {}, {}
        for name, tree in trees.items():
            for stale in WORK.glob(f"{name}.sqlite3*"):
                stale.unlink()
            env = {
                "PYTHONPATH": str(tree.resolve() / "services" / "memory"),
                "STRATA_MEMORY_ADMISSION_WRITES": pool,
            }
            args_ = ["memory", "--database-url", f"sqlite:///{WORK / name}.sqlite3"]
            servers[name] = running.enter_context(ServerProcess(args_, WORK / f"{name}.log", env=env))
            calls[name] = operations(seed(servers[name].address), args.concurrency)[args.op]
        order = list(trees)
        shuffle = random.Random(18)
        for _ in range(args.rounds):
            shuffle.shuffle(order)
            for name in order:
                server = servers[name]
                measured = measure(
                    server.address,
                    calls[name],
                    args.concurrency,
                    args.seconds,
                    warmup=0.5,
                    server_pids=[server.pid],
                )
                rows[name].append(
                    {
                        "rps": measured["rps"],
                        "p50_ms": measured["latency_ms"]["p50"],
                        "cpu_us": measured.get("server_cpu_us_per_call", 0.0),
                        "not_ok": measured["count"] - measured["ok"],
                    }
                )
    load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {"meta": {**vars(args), "tree": args.tree, "output": None, "load": load}}
    for name, found in rows.items():
        row: dict[str, Any] = {
            "rps_median": round(statistics.median(r["rps"] for r in found), 1),
            "p50_ms_median": round(statistics.median(r["p50_ms"] for r in found), 3),
            "cpu_us_median": round(statistics.median(r["cpu_us"] for r in found), 1),
            "not_ok": sum(r["not_ok"] for r in found),
        }
        if name != reference:
            ref = rows[reference]
            row["rps_vs_ref"] = round(
                statistics.median(a["rps"] / b["rps"] for a, b in zip(found, ref, strict=True)), 3
            )
            row["p50_vs_ref"] = round(
                statistics.median(a["p50_ms"] / b["p50_ms"] for a, b in zip(found, ref, strict=True)), 3
            )
        summary[name] = row | {"rounds": found}
        print(f"  {name:<10} " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    print(json.dumps(summary["meta"]), flush=True)
    if args.output:
        args.output.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
