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
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.mutation import MUTMUT, RESULTS, ROOT, STAGING, results_lock
from scripts.mutation_results import applied_kills, outcomes
from scripts.mutation_targets import TARGETS


def verdict(target_name: str, mutant: str, tests: list[str], at: str | None = None) -> str:
    """Whether ``tests`` fail with ``mutant`` applied to the package as it is now, or as it was at
    commit ``at`` (the tree a run mutated, when the package has changed since)."""
    target = next(t for t in TARGETS if t.name == target_name)
    folder = STAGING / target.name
    shown = subprocess.run(
        [str(MUTMUT), "show", mutant], cwd=folder, capture_output=True, text=True, check=True
    ).stdout
    diff = in_file(shown.split("\n", 1)[1], mutant)  # the first line is mutmut's "# name: status"
    with tempfile.TemporaryDirectory() as scratch:
        if at is None:
            shutil.copytree(ROOT / target.package_root / target.package, Path(scratch) / target.package)
        else:
            _extract(at, target.package_root, target.package, Path(scratch))
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


def _extract(commit: str, package_root: str, package: str, scratch: Path) -> None:
    """Write ``package`` as it was at ``commit`` into ``scratch``."""
    archive = subprocess.run(
        ["git", "archive", commit, f"{package_root}/{package}"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    depth = len(Path(package_root).parts)
    subprocess.run(
        ["tar", "-x", f"--strip-components={depth}", "-C", str(scratch)], input=archive, check=True
    )


def in_file(diff: str, mutant: str) -> str:
    """``diff`` as it applies to the file. mutmut diffs a function on its own: a method
    (``xǁClassǁmethod``) is shown dedented to the left margin, so its lines are indented back into the
    class body; and a change in a function's last lines has less context after it than before, which
    ``patch`` reads as "at the end of the file", so the extra leading context is dropped."""
    head, _, body = diff.partition("@@")
    lines = ("@@" + body).splitlines(keepends=True) if body else []
    if "ǁ" in mutant:
        lines = [
            f"{line[0]}    {line[1:]}" if line[:1] in " +-" and line[1:].strip() else line for line in lines
        ]
    if not lines or sum(line.startswith("@@") for line in lines) != 1:
        return head + "".join(lines)
    hunk = lines[1:]
    changed = [i for i, line in enumerate(hunk) if line[:1] in "+-"]
    before, after = changed[0], len(hunk) - 1 - changed[-1]
    drop = max(0, before - after)
    old_start, old_count, new_start, new_count = map(int, re.findall(r"\d+", lines[0])[:4])
    header = f"@@ -{old_start + drop},{old_count - drop} +{new_start + drop},{new_count - drop} @@\n"
    return head + header + "".join(hunk[drop:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=[t.name for t in TARGETS])
    parser.add_argument("tests", help="comma-separated test paths")
    parser.add_argument("mutants", nargs="+")
    parser.add_argument("--record", action="store_true", help="write the verdicts into mutation.json")
    parser.add_argument("--at", help="apply to the package as it was at this commit (the run's tree)")
    args = parser.parse_args(argv)
    verdicts = {}
    for mutant in args.mutants:
        verdicts[mutant] = verdict(args.target, mutant, args.tests.split(","), args.at)
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
        codes = {name: code for found in outcomes(STAGING / target).values() for name, code in found.items()}
        # without the run's own results here (a staging folder generated afresh), each verdict is
        # taken to be of a mutant the run did not kill, as this is used
        kills = applied_kills(applied, codes) if codes else sum(v == "killed" for v in applied.values())
        killed = run["killed"] + kills
        run["kill_rate_applied"] = round(killed / run["total"], 4) if run["total"] else 0.0
        path.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
