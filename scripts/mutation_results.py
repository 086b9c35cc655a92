"""Reading mutmut's results and merging a target's run into ``bench/results`` (scripts/mutation.py).

Pure over files: the exit code of each checked mutant from mutmut's ``.meta`` files, the counts
and the kill rate with its 95 % Wilson interval, and the merge that replaces one target's files,
run and survivors section without touching another target's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from scripts.mutation_targets import Target

TOOL = "mutmut==3.8.1"

KILLED = {1, 3, 37}  # a failing test run, pytest's internal error on a mutant, caught by type check
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152, 255}
NO_TESTS = {5, 33}
COUNTS = ("total", "killed", "survived", "timeout", "no_tests", "other")
SECTION = "=== target: "


def mutant_names(folder: Path) -> list[str]:
    """Every mutant mutmut generated in ``folder`` (from its ``.meta`` files), sorted."""
    names: list[str] = []
    for meta in (folder / "mutants").rglob("*.py.meta"):
        names += json.loads(meta.read_text()).get("exit_code_by_key", {})
    return sorted(names)


def outcomes(folder: Path) -> dict[str, dict[str, int]]:
    """Exit code per checked mutant, grouped by mutated file, from mutmut's ``.meta`` files."""
    found: dict[str, dict[str, int]] = {}
    for meta in sorted((folder / "mutants").rglob("*.py.meta")):
        module = str(meta.relative_to(folder / "mutants"))[: -len(".meta")]
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        found[module] = {name: code for name, code in codes.items() if code is not None}
    return {module: codes for module, codes in found.items() if codes}


def not_checked(folder: Path) -> list[str]:
    """Mutants in ``folder`` with no result: a stopped run's rest, or those mutmut regenerated (and
    dropped the results of) because their function changed since; sorted."""
    names: list[str] = []
    for meta in (folder / "mutants").rglob("*.py.meta"):
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        names += [name for name, code in codes.items() if code is None]
    return sorted(names)


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


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval for a proportion (sound near 0 and 1, unlike the normal one)."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarise(
    target: Target, by_module: dict[str, dict[str, int]], described: dict[str, object]
) -> dict[str, object]:
    counts = tally({name: code for codes in by_module.values() for name, code in codes.items()})
    low, high = wilson_interval(counts["killed"], counts["total"])
    summary: dict[str, object] = dict(counts)
    summary |= {
        "kill_rate": round(counts["killed"] / counts["total"], 4) if counts["total"] else 0.0,
        "kill_rate_ci95": [round(low, 4), round(high, 4)],
        "mutate": list(target.mutate),
    }
    return summary | described


def merge_report(
    existing: dict[str, object],
    target: Target,
    by_module: dict[str, dict[str, int]],
    summary: dict[str, object],
) -> dict[str, object]:
    """``existing`` with ``target``'s files and run replaced and the totals recomputed from by_module."""
    old_modules = existing.get("by_module", {})
    old_runs = existing.get("runs", {})
    assert isinstance(old_modules, dict)
    assert isinstance(old_runs, dict)
    modules = {key: value for key, value in old_modules.items() if not target.owns(key)}
    modules |= {module: tally(codes) | {"target": target.name} for module, codes in by_module.items()}
    # a run is keyed by its target's name; keys that merely start with it are an older layout's
    runs = {key: value for key, value in old_runs.items() if key.split(" ", 1)[0] != target.name}
    earlier = old_runs.get(target.name, {})
    if "applied_by_hand" in earlier and "applied_by_hand" not in summary:  # scripts/mutation_apply.py's
        applied = earlier["applied_by_hand"]
        codes = {name: code for found in by_module.values() for name, code in found.items()}
        killed = int(str(summary["killed"])) + applied_kills(applied["verdicts"], codes)
        total = int(str(summary["total"]))
        summary = summary | {
            "applied_by_hand": applied,
            "kill_rate_applied": round(killed / total, 4) if total else 0.0,
        }
    runs[target.name] = summary
    report: dict[str, object] = {"tool": TOOL}
    for key in COUNTS:
        report[key] = sum(int(counts.get(key, 0)) for counts in modules.values())
    report["by_module"] = dict(sorted(modules.items()))
    report["runs"] = dict(sorted(runs.items()))
    return report


def applied_kills(verdicts: dict[str, str], codes: dict[str, int]) -> int:
    """How many mutants of a run the tests killed when applied by hand that the run did not kill
    itself (a mutant killed both ways counts once; one the run does not hold, not at all)."""
    return sum(
        verdict == "killed" and name in codes and codes[name] not in KILLED
        for name, verdict in verdicts.items()
    )


def merge_survivors(existing: str, target: Target, found: list[str]) -> str:
    """The survivors file with ``target``'s section replaced (text without sections is an older layout's)."""
    sections: dict[str, str] = {}
    for chunk in existing.split(SECTION)[1:]:
        name, _, body = chunk.partition(" ===\n")
        sections[name.strip()] = body
    sections[target.name] = "\n".join(found) or "(no survivors)"
    return "".join(f"{SECTION}{name} ===\n{body.rstrip()}\n\n" for name, body in sorted(sections.items()))
