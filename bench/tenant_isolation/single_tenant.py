"""What admission costs a deployment with one tenant: ``python -m bench.tenant_isolation.single_tenant``.

MemoryService processes (``bench.perf.serve memory``, an SQLite file each), one per variant, run side
by side and are seeded alike (``bench.perf.memory_bench.seed``): admission off
(``STRATA_MEMORY_ADMISSION=false``), the defaults, and the single-tenant setting docs/security.md
recommends (``STRATA_MEMORY_ADMISSION_WRITES=[8, 8, 64]``). Every call comes from one tenant (auth
off: the default tenant), as in ``make bench``. For each of make bench's memory operations at
concurrency 1, 8 and 32 the same load (``bench.perf.scenarios.measure``) runs against each variant in
turn, ``rounds`` times, each round starting with the next variant, so the variants share the
machine's load; the report gives each variant's median throughput and p50 over the rounds and their
ratios to admission off. Results in ``bench/results/admission_single_tenant.json``.

    python -m bench.tenant_isolation.single_tenant [--rounds 3] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.perf.memory_bench import CONCURRENCY, operations, seed
from bench.perf.processes import ServerProcess
from bench.perf.scenarios import measure

RESULTS = Path(__file__).resolve().parents[1] / "results" / "admission_single_tenant.json"
WORK = Path(".cache/bench/work/admission_single_tenant")
VARIANTS: dict[str, dict[str, str]] = {
    "admission off": {"STRATA_MEMORY_ADMISSION": "false"},
    "default": {},
    "writes [8, 8, 64]": {"STRATA_MEMORY_ADMISSION_WRITES": "[8, 8, 64]"},
}
BASE = "admission off"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(work: Path, rounds: int, seconds: float) -> dict[str, Any]:
    found: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                ServerProcess(
                    ["memory", "--database-url", f"sqlite:///{work}/{i}.sqlite3"], work / f"{i}.log", env=env
                )
            )
            for i, (name, env) in enumerate(VARIANTS.items())
        }
        seeds = {name: seed(server.address) for name, server in servers.items()}
        for c in CONCURRENCY:
            for op in operations(seeds[BASE], c):
                for turn in range(rounds):
                    for name, server in _rotated(servers, turn):
                        call = operations(seeds[name], c)[op]
                        lane = measure(server.address, call, c, seconds, warmup=0.5, server_pids=[server.pid])
                        found.setdefault(op, {}).setdefault(f"c{c}", {}).setdefault(name, []).append(lane)
    return {op: {c: _summary(lanes) for c, lanes in by_c.items()} for op, by_c in found.items()}


def _rotated(servers: dict[str, ServerProcess], turn: int) -> list[tuple[str, ServerProcess]]:
    """The variants in turn ``turn``'s order: each goes first in as many rounds as the others."""
    named = list(servers.items())
    shift = turn % len(named)
    return named[shift:] + named[:shift]


def _summary(lanes: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, runs in lanes.items():
        out[name] = {
            "rps": round(statistics.median(r["rps"] for r in runs), 1),
            "p50_ms": round(statistics.median(r["latency_ms"]["p50"] for r in runs), 3),
            "errors": sum(r["count"] - r["ok"] for r in runs),
        }
    base = out[BASE]
    for name, figures in out.items():
        if name != BASE and base["rps"]:
            figures["rps_ratio"] = round(figures["rps"] / base["rps"], 2)
            figures["p50_ratio"] = round(figures["p50_ms"] / base["p50_ms"], 2)
    return out


def lines(found: dict[str, Any]) -> list[str]:
    names = list(VARIANTS)
    out = [
        "| operation | c | " + " | ".join(names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    for op, by_c in found["operations"].items():
        for c, figures in by_c.items():
            cells = []
            for name in names:
                f = figures[name]
                ratio = f" (x{f['rps_ratio']:g})" if "rps_ratio" in f else ""
                errors = f", {f['errors']} errors" if f["errors"] else ""
                cells.append(f"{f['rps']:,.0f} rps{ratio}, p50 {f['p50_ms']:.2f} ms{errors}")
            out.append(f"| {op} | {c.removeprefix('c')} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tenant_isolation.single_tenant", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    started, load = datetime.now(UTC), _load()
    operations_found = run(WORK.resolve(), args.rounds, args.seconds)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    found = {
        "operations": operations_found,
        "variants": VARIANTS,
        "meta": {
            "command": "python -m bench.tenant_isolation.single_tenant"
            + f" --rounds {args.rounds} --seconds {args.seconds:g}",
            "started_utc": started.strftime("%Y-%m-%d %H:%M:%S"),
            "wall_s": round((datetime.now(UTC) - started).total_seconds(), 1),
            "load_before": load,
            "load_after": _load(),
            "git_commit": commit.stdout.strip() or os.environ.get("STRATA_BENCH_COMMIT", "unknown"),
        },
        "how": (__doc__ or "").strip().replace("\n", " "),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(WORK, ignore_errors=True)
    print("\n".join(lines(found)), flush=True)


if __name__ == "__main__":
    main()
