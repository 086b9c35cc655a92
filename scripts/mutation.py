"""``make mutation``: mutmut over the packages whose promises the suite must keep, as a measured figure.

mutmut 3 expects the code it mutates at the top of its working folder (``./pkg`` or ``src/pkg``) and
puts its mutated copy first on ``sys.path``. Strata's packages sit under ``services/*`` and
``clients/python``, so each target runs in its own staging folder (``.cache/mutation/<target>``):
the package and ``tests/`` linked in, this repository's pyproject with a ``[tool.mutmut]`` section
naming the files to mutate and the tests that cover them. Every file of the package is copied, so
the mutated copy shadows the editable install; only the target's files are mutated.

Writes ``bench/results/mutation.json`` (``{"total", "killed", "survived", "timeout", "by_module"}``
plus the command and seconds per target) and ``bench/results/mutation_survivors.txt`` (one
surviving mutant per line, with its diff from ``mutmut show``). Targets run one after another;
``--only`` picks some, ``--max-children`` sets mutmut's parallelism (default 1: CPU is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGING = ROOT / ".cache" / "mutation"
RESULTS = ROOT / "bench" / "results"
MUTMUT = Path(sys.executable).parent / "mutmut"

KILLED = {1, 3, 37}  # a failing test run, pytest's internal error on a mutant, caught by type check
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152, 255}
NO_TESTS = {5, 33}


@dataclass(frozen=True)
class Target:
    name: str
    package_root: str  # the folder that holds the package
    package: str
    mutate: tuple[str, ...]  # globs relative to the staging folder
    tests: tuple[str, ...]
    isolation: str = "forkserver"  # the integration tests run gRPC servers: not fork-safe


TARGETS = (
    Target(
        "memory-domain",
        "services/memory",
        "strata_memory",
        ("strata_memory/domain/*",),
        ("tests/memory/domain",),
    ),
    Target(
        "memory-operations",
        "services/memory",
        "strata_memory",
        ("strata_memory/operations/*",),
        ("tests/memory/integration", "tests/memory/store"),
    ),
    Target(
        "memory-indexing",
        "services/memory",
        "strata_memory",
        ("strata_memory/indexing/*",),
        ("tests/memory/indexing", "tests/system"),
    ),
    Target(
        "retrieval-fusion-engine",
        "services/retrieval",
        "strata_retrieval",
        ("strata_retrieval/fusion.py", "strata_retrieval/engine.py"),
        ("tests/retrieval/test_fusion.py", "tests/retrieval/test_engine.py", "tests/retrieval/test_ties.py"),
    ),
    Target("memfs", "clients/python", "strata", ("strata/memfs/*",), ("tests/memfs",)),
)


def _toml_list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def stage(target: Target) -> Path:
    """A fresh staging folder for ``target``; returns it."""
    folder = STAGING / target.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / target.package).symlink_to(ROOT / target.package_root / target.package)
    (folder / "tests").symlink_to(ROOT / "tests")
    config = (ROOT / "pyproject.toml").read_text() + (
        "\n[tool.mutmut]\n"
        f"source_paths = {_toml_list([target.package])}\n"
        f"only_mutate = {_toml_list(target.mutate)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(target.tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]\n'
        f'process_isolation = "{target.isolation}"\n'
    )
    (folder / "pyproject.toml").write_text(config)
    return folder


def outcomes(folder: Path) -> dict[str, dict[str, int]]:
    """Exit code per mutant, grouped by mutated file, from mutmut's ``.meta`` files."""
    found: dict[str, dict[str, int]] = {}
    for meta in sorted((folder / "mutants").rglob("*.py.meta")):
        module = str(meta.relative_to(folder / "mutants"))[: -len(".meta")]
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        found[module] = {name: code for name, code in codes.items() if code is not None}
    return {module: codes for module, codes in found.items() if codes}


def tally(codes: dict[str, int]) -> dict[str, int]:
    values = list(codes.values())
    counts = {
        "total": len(values),
        "killed": sum(code in KILLED for code in values),
        "survived": sum(code in SURVIVED for code in values),
        "timeout": sum(code in TIMEOUT for code in values),
        "no_tests": sum(code in NO_TESTS for code in values),
    }
    counts["other"] = counts["total"] - sum(counts[k] for k in ("killed", "survived", "timeout", "no_tests"))
    return counts


def run(
    target: Target, max_children: int, *, fresh: bool
) -> tuple[dict[str, dict[str, int]], list[str], float]:
    """Run mutmut for ``target`` (``fresh``: in a new staging folder; else report the last run)."""
    folder = STAGING / target.name
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") or k.startswith("STRATA_TEST_")}
    if fresh:
        started = time.monotonic()
        stage(target)
        command = [str(MUTMUT), "run", "--max-children", str(max_children)]
        subprocess.run(command, cwd=folder, env=env, check=False)
        (folder / "seconds").write_text(f"{time.monotonic() - started:.0f}\n")
    seconds = float((folder / "seconds").read_text()) if (folder / "seconds").exists() else 0.0
    by_module = outcomes(folder)
    survivors = []
    for module, codes in by_module.items():
        for name, code in sorted(codes.items()):
            if code in SURVIVED:
                shown = subprocess.run(
                    [str(MUTMUT), "show", name],
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                survivors.append(f"## {module} {name}\n{shown.stdout.strip()}\n")
    return by_module, survivors, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="*", choices=[t.name for t in TARGETS], help="targets to run (default all)"
    )
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--report-only", action="store_true", help="report the last run without running")
    args = parser.parse_args(argv)
    chosen = [t for t in TARGETS if not args.only or t.name in args.only]
    if args.report_only:
        chosen = [t for t in chosen if (STAGING / t.name / "mutants").is_dir()]
    report: dict[str, object] = {"tool": "mutmut==3.8.1", "targets": {}}
    by_module: dict[str, dict[str, int]] = {}
    survivors: list[str] = []
    for target in chosen:
        modules, survived, seconds = run(target, args.max_children, fresh=not args.report_only)
        target_codes = {name: code for codes in modules.values() for name, code in codes.items()}
        report["targets"][target.name] = tally(target_codes) | {"seconds": round(seconds)}  # type: ignore[index]
        by_module |= {module: tally(codes) for module, codes in modules.items()}
        survivors += survived
    overall = tally({f"{m}:{n}": c for m, codes in _codes(chosen).items() for n, c in codes.items()})
    report |= {k: overall[k] for k in ("total", "killed", "survived", "timeout")}
    report["by_module"] = by_module
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mutation.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    (RESULTS / "mutation_survivors.txt").write_text("\n".join(survivors))
    for name, counts in report["targets"].items():  # type: ignore[attr-defined]
        rate = counts["killed"] / counts["total"] if counts["total"] else 0.0
        print(f"{name}: {counts['killed']}/{counts['total']} killed ({rate:.1%}), {counts['seconds']} s")
    return 0


def _codes(targets: list[Target]) -> dict[str, dict[str, int]]:
    return {module: codes for target in targets for module, codes in outcomes(STAGING / target.name).items()}


if __name__ == "__main__":
    raise SystemExit(main())
