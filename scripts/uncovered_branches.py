"""List the branches ``make test`` left unexercised in the packages whose promises matter most.

Reads the JSON report ``make test`` writes (``.cache/coverage.json``) and prints, per file of
``strata_memory/domain``, ``operations``, ``indexing``, ``strata_retrieval`` fusion and engine and
``strata/memfs``, its branch coverage and each missed branch as ``line->line`` (a negative target
is an exit from the function). Nothing is judged here: the list is for reading.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

PACKAGES = (
    "services/memory/strata_memory/domain/",
    "services/memory/strata_memory/operations/",
    "services/memory/strata_memory/indexing/",
    "services/retrieval/strata_retrieval/fusion.py",
    "services/retrieval/strata_retrieval/engine.py",
    "clients/python/strata/memfs/",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", default=".cache/coverage.json", type=Path)
    args = parser.parse_args(argv)
    files = json.loads(args.report.read_text())["files"]
    for package in PACKAGES:
        chosen = sorted(path for path in files if path.startswith(package))
        covered = sum(files[p]["summary"]["covered_branches"] for p in chosen)
        total = sum(files[p]["summary"]["num_branches"] for p in chosen)
        share = f"{covered / total:.1%}" if total else "no branches measured"
        print(f"{package}: {covered}/{total} branches ({share})")
        for path in chosen:
            missing = files[path].get("missing_branches", [])
            if missing:
                arcs = ", ".join(f"{start}->{end}" for start, end in missing)
                print(f"  {path.removeprefix(package) or path}: {arcs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
