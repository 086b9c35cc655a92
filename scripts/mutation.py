"""``make mutation``: mutmut over the packages whose promises the suite must keep, as a measured figure.

mutmut 3 expects the code it mutates at the top of its working folder (``./pkg`` or ``src/pkg``) and
puts its mutated copy first on ``sys.path``. Strata's packages sit under ``services/*`` and
``clients/python``, so each target runs in its own staging folder (``.cache/mutation/<target>``):
the package and ``tests/`` linked in, this repository's pyproject with a ``[tool.mutmut]`` section
naming the files to mutate and the tests that cover them. Every file of the package is copied, so
the mutated copy shadows the editable install; only the target's files are mutated.

mutmut first runs the target's tests once with every function traced, then runs, for each mutant,
only the tests that called the mutated function (``-x``: the first failure kills it); a mutant in a
function no test calls is "no tests" and counts as not killed.

``--sample N --seed S`` checks a seeded random sample of a target's mutants instead of all of them
(``random.Random(S).sample(sorted(names), N)``), for a package whose full run does not fit the time
at hand; the run records the seed, the population and a 95 % Wilson interval for the kill rate.

``--resume`` checks, in the last run's staging folder, the mutants that have no result yet (the rest
of a stopped run, or those mutmut regenerated because their function changed since); with
``--recheck-survivors`` / ``--recheck-timeouts`` the survivors or timeouts are run again against
today's tests.

Results MERGE into ``bench/results/mutation.json``: ``by_module`` is keyed by mutated file,
``runs`` by target; a target's run replaces only its own files and run, never another target's,
and the totals are recomputed from ``by_module``. ``bench/results/mutation_survivors.txt`` holds
one section per target (each surviving mutant with its diff from ``mutmut show``), merged the same
way. The merge holds a lock, so two targets may finish at once.

The targets are in ``scripts/mutation_targets.py``; reading mutmut's results and the merge in
``scripts/mutation_results.py``.
"""

from __future__ import annotations

import argparse
import fcntl
import fnmatch
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from scripts.mutation_results import (
    SURVIVED,
    TIMEOUT,
    merge_report,
    merge_survivors,
    mutant_names,
    not_checked,
    outcomes,
    summarise,
)
from scripts.mutation_targets import TARGETS, Target

ROOT = Path(__file__).resolve().parents[1]
STAGING = ROOT / ".cache" / "mutation"
RESULTS = ROOT / "bench" / "results"
MUTMUT = Path(sys.executable).parent / "mutmut"
COPIED = ("bench", "docs", "proto", "scripts")  # besides tests/, copied into mutmut's folder


ORDER_PLUGIN = '''"""Run the tests mutmut selected for a mutant fastest first (by its stats run's durations),
and give every pytest session in one process the same test ids.

mutmut hands pytest the covering tests in set order and stops at the first failure (-x), so a
mutant the quick exact tests kill need not wait for a slow property test ahead of them.

mutmut runs several pytest sessions in one process (the stats run, its fork server's collection,
each mutant's run in a fork of it). pytest keeps the ids it generated for a ``parametrize(...,
ids=...)`` on the mark itself and reuses them in the next session as if given, escaping them again:
an id holding a backslash or a non-ASCII character (a label with a zero-width space) gains a
backslash per session, so the ids mutmut recorded are "not found" (pytest exit 4, which mutmut
records as 255: the mutant's tests never ran). Forgetting the kept ids before each function is
parametrized makes every session generate them afresh, as the first did.

A mutant that fails a test can also leave an object whose finalizer raises (a database connection
the failed test never closed); pytest reports such leftovers when the session ends, as a warning,
which this suite's ``filterwarnings = error`` turns into an exception out of ``pytest.main``: mutmut
records that as 255 too, although the tests failed. When the session has already failed, the
leftover is the failure's echo and the session's exit code stands; after a passing session it
still raises.
"""
import json
from pathlib import Path

import pytest

_FAILED = pytest.StashKey()


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[_FAILED] = exitstatus != 0


@pytest.hookimpl(wrapper=True)
def pytest_unconfigure(config):
    try:
        return (yield)
    except (pytest.PytestUnraisableExceptionWarning, ExceptionGroup):  # one leftover, or several
        if not config.stash.get(_FAILED, False):
            raise
        return None


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc):
    for mark in metafunc.definition.iter_markers(name="parametrize"):
        if mark._param_ids_from is not None:
            object.__setattr__(mark._param_ids_from, "_param_ids_generated", None)


def pytest_collection_modifyitems(items):
    stats = Path("mutmut-stats.json")
    if not stats.exists():
        return
    duration = json.loads(stats.read_text()).get("duration_by_test", {})
    items.sort(key=lambda item: duration.get(item.nodeid, float("inf")))
'''

GENERATE = """
import os
import mutmut.__main__ as m
m.set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
m.copy_src_dir()
m.copy_also_copy_files()
m.setup_source_paths()
m.create_mutants(1)
"""


@dataclass(frozen=True)
class Sample:
    size: int
    seed: int


def _toml_list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def stage(target: Target) -> Path:
    """A fresh staging folder for ``target``; returns it."""
    folder = STAGING / target.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / target.package).symlink_to(ROOT / target.package_root / target.package)
    # tests find their servers in bench.servers and read docs/ and proto/ beside them (the limits
    # and quotas tables, the error catalogue): the mutated copy runs from a folder holding them all
    for shared in ("tests", *COPIED):
        (folder / shared).symlink_to(ROOT / shared)
    config = (ROOT / "pyproject.toml").read_text() + (
        "\n[tool.mutmut]\n"
        f"source_paths = {_toml_list([target.package])}\n"
        f"only_mutate = {_toml_list(target.mutate)}\n"
        f"do_not_mutate = {_toml_list(target.exclude)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(target.tests)}\n"
        # pytest-timeout's wall clock (120 s) fails slow tests of an unchanged tree on a loaded machine
        # at nice 19 ("Failed to run clean test", or a false kill); mutmut's CPU-time limit decides
        # timeouts, this only ends a mutant that hangs without using CPU
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "mutation_order", "-q", "-x",'
        ' "--timeout=900"]\n'
        f'process_isolation = "{target.isolation}"\n'
        f"timeout_constant = {target.timeout_constant}\n"
        f"also_copy = {_toml_list(['mutation_order.py', *COPIED])}\n"
    )
    (folder / "pyproject.toml").write_text(config)
    (folder / "mutation_order.py").write_text(ORDER_PLUGIN)
    return folder


POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"  # .ci/run's default


def _environment(target: Target | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") or k.startswith("STRATA_TEST_")}
    if target is not None and target.postgres:
        # a mutant of PostgreSQL-only code is judged by the PostgreSQL variants: under CI=true an
        # unreachable server fails the clean run (tests/store_backends.py) instead of skipping them
        env.setdefault("STRATA_TEST_POSTGRES_URL", POSTGRES_URL)
        env["CI"] = "true"
    # each mutant is a pytest session of its own: build the embedder's graph once, not per mutant
    env.setdefault("STRATA_TEST_MODEL_CACHE", str(STAGING / "models"))
    return env


def run(target: Target, max_children: int, sample: Sample | None) -> dict[str, object]:
    """Run mutmut for ``target`` in a new staging folder; returns what the run was (not its results)."""
    folder = stage(target)
    env = _environment(target)
    started = time.monotonic()
    command = [str(MUTMUT), "run", "--max-children", str(max_children)]
    described: dict[str, object] = {"tests": list(target.tests), "isolation": target.isolation}
    if target.exclude:
        described["excluded"] = list(target.exclude)
    if target.postgres:
        described["postgres"] = True
    if sample is not None:
        subprocess.run([sys.executable, "-c", GENERATE], cwd=folder, env=env, check=True)
        population = mutant_names(folder)
        chosen = sorted(random.Random(sample.seed).sample(population, min(sample.size, len(population))))
        (folder / "sample.txt").write_text("\n".join(chosen) + "\n")
        described["sample"] = {
            "seed": sample.seed,
            "size": len(chosen),
            "population": len(population),
            "method": "random.Random(seed).sample(sorted(mutant names), size)",
        }
        command += chosen
    subprocess.run(command, cwd=folder, env=env, check=False)
    described["seconds"] = round(time.monotonic() - started)
    (folder / "run.json").write_text(json.dumps(described) + "\n")
    return described


def again(
    target: Target,
    max_children: int,
    *,
    resume: bool = False,
    survivors: bool = False,
    timeouts: bool = False,
    only: list[str] | None = None,
    retrace: bool = False,
) -> None:
    """Run mutants of the last run again in its staging folder, in one mutmut run (mutmut copies the
    tests afresh and collects stats for new ones): ``resume``, those with no result yet (the rest of
    a stopped run, or those mutmut regenerates for functions changed since; of a sampled run, only
    its sample's); ``survivors`` / ``timeouts``, those that survived / timed out, or of them those
    matching ``only`` (globs). The run's record notes each kind: how many, when and the command.

    ``retrace`` drops mutmut's map of which tests call which function, so every test is traced again:
    mutmut traces only tests added since its map was made, so a function added since (a fix that
    split one) would be checked against the new tests alone."""
    folder = STAGING / target.name
    env = _environment(target)
    if retrace:
        (folder / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    subprocess.run([sys.executable, "-c", GENERATE], cwd=folder, env=env, check=True)  # as mutmut run would
    chosen: dict[str, list[str]] = {}
    if resume:
        pending = not_checked(folder)
        sampled = folder / "sample.txt"
        if sampled.exists():
            pending = sorted(set(pending) & set(sampled.read_text().split()))
        chosen["resumed"] = pending
    for wanted, key, flag in (
        (survivors, "rechecked_survivors", SURVIVED),
        (timeouts, "rechecked_timeouts", TIMEOUT),
    ):
        if wanted:
            chosen[key] = [
                name
                for codes in outcomes(folder).values()
                for name, code in codes.items()
                if code in flag and (not only or any(fnmatch.fnmatch(name, pattern) for pattern in only))
            ]
    names = sorted({name for group in chosen.values() for name in group})
    if not names:
        return
    started = time.monotonic()
    subprocess.run(
        [str(MUTMUT), "run", "--max-children", str(max_children), *names], cwd=folder, env=env, check=False
    )
    flags = {
        "resumed": "--resume",
        "rechecked_survivors": "--recheck-survivors",
        "rechecked_timeouts": "--recheck-timeouts",
    }
    arguments = f"--only {target.name} " + " ".join(flags[key] for key in chosen)
    arguments += f" --recheck-only {' '.join(only)}" if only else ""
    arguments += " --retrace" if retrace else ""
    for key, group in chosen.items():
        _note(folder, key, started, arguments, len(group))


def _note(folder: Path, key: str, started: float, arguments: str, count: int) -> None:
    """Record in the run's ``run.json`` that ``count`` mutants were run again (``key``), when and how."""
    described = json.loads((folder / "run.json").read_text())
    earlier = described.get(key, {}).get("count", 0)
    described[key] = {
        "count": earlier + count,
        "seconds": round(time.monotonic() - started),
        "finished": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": f"nice -n 19 make mutation MUTATION_ARGS='{arguments}'",
    }
    (folder / "run.json").write_text(json.dumps(described) + "\n")


def survivors_of(target: Target, by_module: dict[str, dict[str, int]]) -> list[str]:
    folder = STAGING / target.name
    found = []
    for module, codes in by_module.items():
        for name, code in sorted(codes.items()):
            if code in SURVIVED:
                shown = subprocess.run(
                    [str(MUTMUT), "show", name],
                    cwd=folder,
                    env=_environment(),
                    capture_output=True,
                    text=True,
                    check=False,
                )
                found.append(f"## {module} {name}\n{shown.stdout.strip()}\n")
    return found


@contextmanager
def results_lock() -> Iterator[None]:
    STAGING.mkdir(parents=True, exist_ok=True)
    with (STAGING / ".results.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def record(target: Target) -> dict[str, object]:
    """Merge ``target``'s last run into the results files; returns its summary."""
    folder = STAGING / target.name
    by_module = outcomes(folder)
    described = json.loads((folder / "run.json").read_text()) if (folder / "run.json").exists() else {}
    summary = summarise(target, by_module, described)
    found = survivors_of(target, by_module)
    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path, survivors_path = RESULTS / "mutation.json", RESULTS / "mutation_survivors.txt"
    with results_lock():
        existing = json.loads(json_path.read_text()) if json_path.exists() else {}
        json_path.write_text(json.dumps(merge_report(existing, target, by_module, summary), indent=2) + "\n")
        text = survivors_path.read_text() if survivors_path.exists() else ""
        survivors_path.write_text(merge_survivors(text, target, found))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="*", choices=[t.name for t in TARGETS], help="targets to run (default all)"
    )
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument(
        "--sample", type=int, default=0, help="check a seeded random sample of this many mutants"
    )
    parser.add_argument("--seed", type=int, default=19, help="the sample's seed")
    parser.add_argument(
        "--report-only", action="store_true", help="merge the last run's results without running"
    )
    parser.add_argument(
        "--recheck-survivors",
        action="store_true",
        help="run the last run's survivors again against today's tests (the same staging folder)",
    )
    parser.add_argument(
        "--recheck-timeouts",
        action="store_true",
        help="run the last run's timed-out mutants again (a timeout under load may be no hang)",
    )
    parser.add_argument(
        "--recheck-only",
        nargs="*",
        help="with --recheck-survivors/--recheck-timeouts: only the mutants matching these globs",
    )
    parser.add_argument(
        "--retrace",
        action="store_true",
        help="with --resume/--recheck-*: trace every test again (mutmut traces only new tests)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="check the last run's mutants that have no result (a stopped run; functions changed since)",
    )
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    chosen = [t for t in TARGETS if not args.only or t.name in args.only]
    rerun = args.recheck_survivors or args.recheck_timeouts or args.resume
    if args.report_only or rerun:
        chosen = [t for t in chosen if (STAGING / t.name / "mutants").is_dir()]
    sample = Sample(args.sample, args.seed) if args.sample else None
    for target in chosen:
        if rerun:
            again(
                target,
                args.max_children,
                resume=args.resume,
                survivors=args.recheck_survivors,
                timeouts=args.recheck_timeouts,
                only=args.recheck_only,
                retrace=args.retrace,
            )
        if not (args.report_only or rerun):
            described = run(target, args.max_children, sample)
            arguments = f"--only {target.name} --max-children {args.max_children}"
            if sample is not None:
                arguments += f" --sample {sample.size} --seed {sample.seed}"
            described["command"] = f"nice -n 19 make mutation MUTATION_ARGS='{arguments}'"
            described["finished"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            (STAGING / target.name / "run.json").write_text(json.dumps(described) + "\n")
        summary = record(target)
        low, high = cast("list[float]", summary["kill_rate_ci95"])
        print(
            f"{target.name}: {summary['killed']}/{summary['total']} killed ({summary['kill_rate']:.1%}, "
            f"95% CI {low:.1%}-{high:.1%}), {summary['timeout']} timeouts, {summary['no_tests']} no tests, "
            f"{summary.get('seconds', '?')} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
