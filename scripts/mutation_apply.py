"""Check mutants by hand: apply each to a scratch copy of its package and run the given tests there.

mutmut switches a mutant on at call time, so a function that only runs while its module is imported
(a schema table built at import, for example) can never be switched on: such a mutant "survives"
whatever the tests assert. This applies the mutant's diff (``mutmut show``) to a copy of the
package, puts the copy first on ``PYTHONPATH`` and runs the tests, so the verdict is the tests' own.
Run after ``make mutation`` (it reads the target's staging folder)::

    python -m scripts.mutation_apply memory-domain tests/memory/domain/tools/test_schemas.py NAME...

``--record`` writes the verdicts into the target's run in ``bench/results/mutation.json``
(``applied_by_hand``: mutant -> verdict, with the command) beside mutmut's own counts, and the kill
rate counting the survivors the tests kill when applied (``kill_rate_applied``); mutmut's counts stay.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.mutation import MUTMUT, RESULTS, ROOT, STAGING, TARGETS, results_lock


def verdict(target_name: str, mutant: str, tests: list[str]) -> str:
    target = next(t for t in TARGETS if t.name == target_name)
    folder = STAGING / target.name
    shown = subprocess.run(
        [str(MUTMUT), "show", mutant], cwd=folder, capture_output=True, text=True, check=True
    ).stdout
    diff = in_file(shown.split("\n", 1)[1], mutant)  # the first line is mutmut's "# name: status"
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(ROOT / target.package_root / target.package, Path(scratch) / target.package)
        patched = subprocess.run(
            ["patch", "-p0", "--batch", "--silent", "-d", scratch],
            input=diff,
            capture_output=True,
            text=True,
            check=False,
        )
        if patched.returncode != 0:
            return f"not applied ({patched.stdout.strip() or patched.stderr.strip()})"
        env = os.environ | {"PYTHONPATH": scratch + os.pathsep + os.environ.get("PYTHONPATH", "")}
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    return "killed" if run.returncode != 0 else "survived"


def in_file(diff: str, mutant: str) -> str:
    """``diff`` as it applies to the file: mutmut shows a method (``xǁClassǁmethod``) dedented to the
    left margin, so its hunks are indented back into the class body."""
    if "ǁ" not in mutant:
        return diff
    lines, in_hunk = [], False
    for line in diff.splitlines(keepends=True):
        in_hunk = in_hunk or line.startswith("@@")
        indent = in_hunk and line[:1] in " +-" and bool(line[1:].strip())
        lines.append(f"{line[0]}    {line[1:]}" if indent else line)
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=[t.name for t in TARGETS])
    parser.add_argument("tests", help="comma-separated test paths")
    parser.add_argument("mutants", nargs="+")
    parser.add_argument("--record", action="store_true", help="write the verdicts into mutation.json")
    args = parser.parse_args(argv)
    verdicts = {}
    for mutant in args.mutants:
        verdicts[mutant] = verdict(args.target, mutant, args.tests.split(","))
        print(f"{verdicts[mutant]}: {mutant}", flush=True)
    if args.record:
        record(args.target, args.tests, verdicts)
    return 0


def record(target: str, tests: str, verdicts: dict[str, str]) -> None:
    path = RESULTS / "mutation.json"
    with results_lock():
        report = json.loads(path.read_text())
        run = report["runs"][target]
        applied = run.get("applied_by_hand", {}).get("verdicts", {}) | verdicts
        commands = sorted({*run.get("applied_by_hand", {}).get("tests", []), tests})
        run["applied_by_hand"] = {
            "verdicts": dict(sorted(applied.items())),
            "tests": commands,
            "command": "python -m scripts.mutation_apply TARGET TESTS NAME... --record",
        }
        killed = run["killed"] + sum(v == "killed" for v in applied.values())
        run["kill_rate_applied"] = round(killed / run["total"], 4) if run["total"] else 0.0
        path.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
