"""Paired, interleaved A/B of the stream scenario of ``bench.perf.ingest_e2e`` between two sources of
MemoryService (RetrievalService and the client are this tree's in both).

    python -m bench.perf.stream_ab --a /tmp/old --b . --rounds 4 --seconds 12 --writers 32

``--a`` / ``--b`` are source trees (a checkout or ``git archive`` of a commit): MemoryService's child
process runs with ``PYTHONPATH=<tree>/services/memory`` ahead of the editable install; with
``--retrieval-too`` RetrievalService's runs with ``<tree>/services/retrieval`` as well (the shared
``strata_serving`` and the generated stubs stay this tree's). ``--a-env`` /
``--b-env`` add ``STRATA_MEMORY_*`` settings (``KEY=VALUE``, repeatable), so a setting can be A/B'd on
one tree. Rounds alternate the order (AB, BA, ...); each round is a fresh pair of servers. Reported
per round and as medians: messages searchable per second, write -> searchable p50 / p99, and the CPU
each process spent per message (MemoryService, RetrievalService, and this client), which on a busy
machine holds up better than the rates; the per-round ratio B / A of each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.ingest_e2e import Servers, conversations, run_stream

WORK = Path(".cache/bench/work/stream_ab")


def settings(pairs: list[str]) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in pairs)


def one_round(
    tree: Path, env: dict[str, str], seconds: float, writers: int, *, retrieval_too: bool = False
) -> dict[str, Any]:
    convs = conversations(writers * 700)[:writers]
    memory_env = {"PYTHONPATH": str(tree.resolve() / "services" / "memory"), **env}
    retrieval_env = {"PYTHONPATH": str(tree.resolve() / "services" / "retrieval")} if retrieval_too else None
    servers = Servers(WORK, memory_env, retrieval_env)
    try:
        client_cpu = time.process_time()
        stream = asyncio.run(run_stream(servers, convs, seconds))
        client_cpu = time.process_time() - client_cpu
    finally:
        servers.stop()
    stream.pop("written")
    stream["cpu_ms_per_message"]["client"] = round(1000 * client_cpu / max(stream["messages"], 1), 3)
    return stream


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.stream_ab", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--a", type=Path, required=True)
    parser.add_argument("--b", type=Path, required=True)
    parser.add_argument("--a-env", action="append", default=[])
    parser.add_argument("--b-env", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument(
        "--retrieval-too", action="store_true", help="run each tree's RetrievalService too, not this tree's"
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    variants = {"A": (args.a, settings(args.a_env)), "B": (args.b, settings(args.b_env))}
    rounds: list[dict[str, Any]] = []
    ticks = cpu_ticks()
    for index in range(args.rounds):
        order = "AB" if index % 2 == 0 else "BA"
        row: dict[str, Any] = {"load": os.getloadavg()[0]}
        for name in order:
            tree, env = variants[name]
            row[name] = one_round(tree, env, args.seconds, args.writers, retrieval_too=args.retrieval_too)
            result = row[name]
            print(
                f"round {index + 1} {name}: {result['rate_per_s']} msgs/s, p50 {result['latency_ms']['p50']}"
                f" p99 {result['latency_ms']['p99']} ms, CPU ms/msg {result['cpu_ms_per_message']}"
                f" (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        rounds.append(row)

    def med(name: str, pick: Callable[[dict[str, Any]], float]) -> float:
        return round(statistics.median(pick(r[name]) for r in rounds), 3)

    def ratio(pick: Callable[[dict[str, Any]], float]) -> float:
        return round(statistics.median(pick(r["B"]) / pick(r["A"]) for r in rounds), 3)

    def cpu(process: str) -> Callable[[dict[str, Any]], float]:
        return lambda r: float(r["cpu_ms_per_message"][process])

    picks: dict[str, Callable[[dict[str, Any]], float]] = {
        "rate_per_s": lambda r: float(r["rate_per_s"]),
        "p50_ms": lambda r: float(r["latency_ms"]["p50"]),
        "p99_ms": lambda r: float(r["latency_ms"]["p99"]),
        **{f"cpu_ms_{p}": cpu(p) for p in ("memory", "retrieval", "client")},
    }
    summary: dict[str, Any] = {
        key: {"A": med("A", pick), "B": med("B", pick), "B/A": ratio(pick)} for key, pick in picks.items()
    }
    summary["meta"] = {
        "a": str(args.a),
        "b": str(args.b),
        "a_env": args.a_env,
        "b_env": args.b_env,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "writers": args.writers,
        "retrieval_too": args.retrieval_too,
        "steal_percent": steal_percent(ticks, cpu_ticks()),
        "loads": [round(r["load"], 1) for r in rounds],
    }
    print(json.dumps(summary, indent=1), flush=True)
    if args.output:
        args.output.write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=1) + "\n")


if __name__ == "__main__":
    main()
