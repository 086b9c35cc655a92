"""``make bench``: latency, throughput and scaling of both services, side by side with the gRPC floor.

    python -m bench.run_all              # the full run (< 20 minutes here): perf.json, REPORT.md, plots
    python -m bench.run_all --quick      # a smoke run with small sizes (perf_quick.json, no REPORT.md)
    python -m bench.run_all --large      # make bench-large: 10k, 100k and 1M documents (perf_large.json)
    python -m bench.run_all --report-only

The tenant-isolation scenario (``bench/tenant_isolation``: a quiet tenant beside each single-tenant
flood) runs after it and also writes ``bench/results/tenant_isolation.json``.
SearchMessages at LoCoMo scale (``bench/search/messages_p50.py``: p50 first asked and asked again,
against RetrievalService alone, the gRPC floor and the embedder alone) also writes
``bench/results/search_messages.json`` under ``served``. What tenant-scoped BM25 costs the text leg
(``bench/search/tenant_scoring.py``: one index per tenant against the shared one, 1 and 100 tenants,
writers and open indexes bounded; the server engine's IDF counts) writes
``bench/results/tenant_scoring.json``, and what the vector index's write journal costs a write
(``bench/search/vector_journal.py``) ``bench/results/vector_journal.json``. What a purge of an agent
costs as its messages grow, beside DeleteAgent (``bench/memory_time/purge_cost.py``), writes
``bench/results/memory_time_purge.json``. What CreateBlock on an agent costs as its blocks grow
(``bench/tenants/create_block_cost.py``) writes ``bench/results/tenants_create_block_cost.json``, and
what big edits held by many conversations cost another tenant's writes
(``bench/tenants/big_edit_stall.py``) ``bench/results/tenants_big_edit_stall.json``.

The replica scenario (``bench/replicas/scenario.py``: MemoryService on 1-3 replicas over PostgreSQL beside
SQLite, and the outbox with 1 and 3) runs last and also writes ``bench/results/replicas.json``; it
needs PostgreSQL at ``STRATA_TEST_POSTGRES_URL`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``)
and is recorded as skipped, saying why, when there is none.

Results go to ``bench/results/perf*.json``; ``bench/REPORT.md`` and ``bench/plots/*.png`` are
generated from ``perf.json`` (and ``perf_large.json`` when present). Progress is printed as it goes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.memory_time import purge_cost
from bench.perf import ingest_e2e, large, memory_bench, report, retrieval_bench
from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.scenarios import Durations
from bench.replicas import scenario as replicas
from bench.search import messages_p50, tenant_scoring, vector_journal
from bench.tenant_isolation import run as tenant_isolation
from bench.tenant_isolation.floods import KINDS
from bench.tenants import big_edit_stall, create_block_cost

RESULTS = Path(__file__).resolve().parent / "results"
WORK = Path(".cache/bench/work")
FULL_SIZES = [1_000, 10_000, 100_000]
QUICK_SIZES = [500, 2_000]
LARGE_SIZES = [10_000, 100_000, 1_000_000]


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    return (
        f"{model}, {os.cpu_count()} cores, {memory_kib / 2**20:.0f} GiB, Python {platform.python_version()}"
    )


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _commit() -> str:
    found = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return found.stdout.strip() or "unknown"


def _meta(command: str, started: datetime, load_before: str, ticks_before: tuple[int, int]) -> dict[str, Any]:
    finished = datetime.now(UTC)
    return {
        "command": command,
        "started_utc": started.strftime("%Y-%m-%d %H:%M:%S"),
        "finished_utc": finished.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_s": round((finished - started).total_seconds(), 1),
        "machine": machine(),
        "load_before": load_before,
        "load_after": _load(),
        "cpu_steal_percent": steal_percent(ticks_before, cpu_ticks()),
        "git_commit": _commit(),
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
    }


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def run_bench(quick: bool, budget_minutes: float) -> Path:
    started, load_before, ticks = datetime.now(UTC), _load(), cpu_ticks()
    deadline = time.monotonic() + budget_minutes * 60
    work = _fresh(WORK / ("quick" if quick else "full"))
    times = Durations(latency=1.0, throughput=1.0, warmup=0.3) if quick else Durations()
    print(f"bench: load average {load_before}; work directory {work}", flush=True)
    results: dict[str, Any] = {"memory": memory_bench.run(_fresh(work / "memory"), times)}
    sizes = QUICK_SIZES if quick else FULL_SIZES
    results["retrieval"] = retrieval_bench.run(_fresh(work / "retrieval"), sizes, times, deadline=deadline)
    results["ingest_e2e"] = ingest_e2e.run(
        _fresh(work / "ingest_e2e"),
        messages=1_000 if quick else 10_000,
        stream_seconds=5.0 if quick else 30.0,
    )
    if not quick:
        (RESULTS / "ingest_e2e.json").write_text(json.dumps(results["ingest_e2e"], indent=1) + "\n")
    results["search_messages"] = messages_p50.run(
        _fresh(work / "search_messages"), questions=100 if quick else 400
    )
    if not quick:
        messages_p50.write("served", results["search_messages"])
    results["tenant_scoring"] = tenant_scoring.run(quick)
    results["vector_journal"] = vector_journal.report("make bench", 40 if quick else 300, 32, 50)
    results["purge"] = purge_cost.run([100, 400] if quick else purge_cost.SIZES, 1 if quick else 3)
    if not quick:
        purge_cost.RESULTS.write_text(json.dumps(results["purge"], indent=2) + "\n", encoding="utf-8")
        for name in ("tenant_scoring", "vector_journal"):
            (RESULTS / f"{name}.json").write_text(
                json.dumps(results[name], indent=1) + "\n", encoding="utf-8"
            )
    results["create_block_cost"] = create_block_cost.run(300 if quick else 2000, 100 if quick else 200)
    if not quick:
        create_block_cost.RESULTS.write_text(
            json.dumps(results["create_block_cost"], indent=2) + "\n", encoding="utf-8"
        )
    results["big_edit_stall"] = big_edit_stall.run(conversations=50 if quick else 601)
    if not quick:
        big_edit_stall.RESULTS.write_text(
            json.dumps(results["big_edit_stall"], indent=2) + "\n", encoding="utf-8"
        )
    results["replicas"] = replicas.run_or_skip(_fresh(work / "replicas"), quick=quick)
    if not quick and "skipped" not in results["replicas"]:
        (RESULTS / "replicas.json").write_text(
            json.dumps(results["replicas"], indent=1) + "\n", encoding="utf-8"
        )
    command = "make bench" + (" (python -m bench.run_all --quick)" if quick else "")
    isolation = tenant_isolation.measure(rounds=5 if quick else 40, floods=KINDS)
    isolation["meta"] |= {"command": command}  # the report's section names the run it comes from
    results["tenant_isolation"] = isolation
    if not quick:
        text = json.dumps(isolation, indent=1) + "\n"
        (RESULTS / "tenant_isolation.json").write_text(text, encoding="utf-8")
    results["meta"] = _meta(command, started, load_before, ticks) | {"durations": times.__dict__}
    out = RESULTS / ("perf_quick.json" if quick else "perf.json")
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"bench: wrote {out} in {results['meta']['wall_s'] / 60:.1f} min", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return out


def run_large(budget_minutes: float, sizes: list[int], base: int, out: Path | None = None) -> Path:
    started, load_before, ticks = datetime.now(UTC), _load(), cpu_ticks()
    deadline = time.monotonic() + budget_minutes * 60
    work = _fresh(WORK / "large")
    print(f"bench-large: load average {load_before}; generating {sizes[-1]:,} documents", flush=True)
    texts, table = large.generate(sizes[-1], work / "precomputed", base_size=base)
    found = retrieval_bench.run(work, sizes, Durations(), deadline=deadline, texts=texts, precomputed=table)
    found["how"] = (large.__doc__ or "").strip().replace(
        "\n", " "
    ) + f" (This run: a base of {base:,} texts.)"
    command = "make bench-large" if sizes == LARGE_SIZES and base == large.BASE else " ".join(sys.argv)
    results = {"retrieval": found, "meta": _meta(command, started, load_before, ticks)}
    out = out or RESULTS / "perf_large.json"
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return out


def write_report() -> Path | None:
    perf_file, large_file = RESULTS / "perf.json", RESULTS / "perf_large.json"
    if not perf_file.exists():
        print("bench: no bench/results/perf.json yet; run `make bench`", file=sys.stderr)
        return None
    perf = json.loads(perf_file.read_text(encoding="utf-8"))
    large_results = json.loads(large_file.read_text(encoding="utf-8")) if large_file.exists() else None
    out = report.write(perf, large_results)
    print(f"bench: wrote {out}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__.split("\n")[0])
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--quick", action="store_true", help="small sizes, short runs; no REPORT.md")
    kind.add_argument("--large", action="store_true", help="bench-large: up to 1M documents")
    kind.add_argument("--report-only", action="store_true", help="regenerate REPORT.md and the plots")
    parser.add_argument(
        "--budget-minutes", type=float, help="stop growing the corpus past this (default 17/120)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=LARGE_SIZES, help="--large: corpus sizes")
    parser.add_argument(
        "--output", type=Path, help="--large: write here instead of bench/results/perf_large.json"
    )
    parser.add_argument("--base", type=int, default=large.BASE, help="--large: real texts embedded")
    args = parser.parse_args()
    if args.report_only:
        write_report()
    elif args.large:
        run_large(args.budget_minutes or 120.0, sorted(args.sizes), args.base, args.output)
        write_report()
    else:
        run_bench(args.quick, args.budget_minutes or 17.0)
        if not args.quick:
            write_report()


if __name__ == "__main__":
    main()
