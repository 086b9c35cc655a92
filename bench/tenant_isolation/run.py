"""``python -m bench.tenant_isolation``: a quiet tenant beside each flood (results/tenant_isolation.json).

python -m bench.tenant_isolation                     # every flood, 40 rounds (about 5 minutes here)
python -m bench.tenant_isolation --rounds 10 --floods searches tag_flood
python -m bench.tenant_isolation --duty 1 --output /tmp/no_pacing.json   # MemoryService without pacing
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.perf.host import cpu_ticks, steal_percent
from bench.tenant_isolation import report, scenario
from bench.tenant_isolation.floods import KINDS

RESULTS = Path(__file__).resolve().parents[1] / "results"
WORK = Path(".cache/bench/work/tenant_isolation")


def measure(
    rounds: int, floods: tuple[str, ...], *, admission: bool = True, duty: float | None = None
) -> dict[str, Any]:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    started, ticks = datetime.now(UTC), cpu_ticks()
    found = asyncio.run(
        scenario.run(WORK.resolve(), rounds=rounds, floods=floods, admission=admission, duty=duty)
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    found["meta"] = {
        "started_utc": started.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_s": round((datetime.now(UTC) - started).total_seconds(), 1),
        "cpu_steal_percent": steal_percent(ticks, cpu_ticks()),
        "git_commit": commit.stdout.strip() or os.environ.get("STRATA_BENCH_COMMIT", "unknown"),
    }
    shutil.rmtree(WORK, ignore_errors=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tenant_isolation", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--floods", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--output", type=Path, default=RESULTS / "tenant_isolation.json")
    parser.add_argument(
        "--no-admission", action="store_true", help="MemoryService without per-tenant pools (the before)"
    )
    parser.add_argument(
        "--duty",
        type=float,
        help="MemoryService's STRATA_MEMORY_ADMISSION_DUTY (1: no pacing; default: the service's)",
    )
    args = parser.parse_args()
    found = measure(args.rounds, tuple(args.floods), admission=not args.no_admission, duty=args.duty)
    found["meta"]["command"] = (
        "python -m bench.tenant_isolation"
        + (" --no-admission" if args.no_admission else "")
        + (f" --duty {args.duty:g}" if args.duty is not None else "")
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    print(f"tenant_isolation: wrote {args.output}", flush=True)
    print("\n".join(report.section(found)))


if __name__ == "__main__":
    main()
