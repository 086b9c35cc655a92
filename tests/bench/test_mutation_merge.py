"""``make mutation`` merges one target's run into bench/results/mutation.json without dropping another's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from scripts.mutation_results import (
    applied_kills,
    merge_report,
    merge_survivors,
    not_checked,
    outcomes,
    tally,
    wilson_interval,
)
from scripts.mutation_targets import TARGETS

DOMAIN = next(t for t in TARGETS if t.name == "memory-domain")
MEMFS = next(t for t in TARGETS if t.name == "memfs")


def _counts(killed: int, survived: int, target: str) -> dict[str, object]:
    return tally({f"k{i}": 1 for i in range(killed)} | {f"s{i}": 0 for i in range(survived)}) | {
        "target": target
    }


def test_a_targets_run_replaces_only_its_own_files_and_run() -> None:
    existing: dict[str, object] = {
        "by_module": {
            "strata/memfs/push.py": _counts(9, 1, "memfs"),
            "strata_memory/domain/budgets.py": _counts(1, 9, "memory-domain"),
            "strata_memory/domain/budgets.py (second run)": _counts(5, 5, "memory-domain"),  # older layout
            "strata_memory/domain/render.py": _counts(2, 0, "memory-domain"),
        },
        "runs": {
            "memfs": {"total": 10},
            "memory-domain (partial)": {"total": 20},
            "memory-domain": {"total": 2},
        },
    }
    new = {"strata_memory/domain/budgets.py": {"a": 1, "b": 1, "c": 0, "d": 33, "e": 36}}
    report = merge_report(existing, DOMAIN, new, {"total": 5})
    modules = cast("dict[str, object]", report["by_module"])
    old_modules = cast("dict[str, object]", existing["by_module"])
    assert set(modules) == {"strata/memfs/push.py", "strata_memory/domain/budgets.py"}
    assert modules["strata/memfs/push.py"] == old_modules["strata/memfs/push.py"]
    assert modules["strata_memory/domain/budgets.py"] == {
        "total": 5,
        "killed": 2,
        "survived": 1,
        "timeout": 1,
        "no_tests": 1,
        "other": 0,
        "target": "memory-domain",
    }
    assert report["runs"] == {"memfs": {"total": 10}, "memory-domain": {"total": 5}}
    # totals are the sums over by_module
    assert (report["total"], report["killed"], report["survived"], report["timeout"], report["no_tests"]) == (
        15,
        11,
        2,
        1,
        1,
    )


def test_merging_into_nothing_starts_the_file() -> None:
    report = merge_report({}, MEMFS, {"strata/memfs/pull.py": {"x": 1}}, {"total": 1})
    assert (report["total"], report["killed"], list(report["runs"])) == (1, 1, ["memfs"])  # type: ignore[call-overload]


def test_survivor_sections_are_merged_by_target() -> None:
    text = merge_survivors("", MEMFS, ["## push.py m1\n-a\n+b\n"])
    text = merge_survivors(text, DOMAIN, ["## budgets.py m2\n-c\n+d\n"])
    text = merge_survivors(text, MEMFS, ["## push.py m3\n-e\n+f\n"])
    assert text == (
        "=== target: memfs ===\n## push.py m3\n-e\n+f\n\n"
        "=== target: memory-domain ===\n## budgets.py m2\n-c\n+d\n\n"
    )


def test_legacy_survivors_without_sections_are_dropped() -> None:
    assert (
        merge_survivors("## old m\n-a\n+b\n", DOMAIN, [])
        == "=== target: memory-domain ===\n(no survivors)\n\n"
    )


def test_wilson_interval() -> None:
    low, high = wilson_interval(255, 300)  # 85 %
    assert round(low, 3) == 0.805
    assert round(high, 3) == 0.886
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(10, 10)[1] == 1.0


def test_verdicts_applied_by_hand_are_kept_by_the_next_merge() -> None:
    applied = {"verdicts": {"b": "killed", "c": "survived"}, "tests": ["t.py"], "command": "c"}
    existing: dict[str, object] = {"by_module": {}, "runs": {"memory-domain": {"applied_by_hand": applied}}}
    codes = {"a": 1, "b": 0, "c": 0}
    report = merge_report(existing, DOMAIN, {"strata_memory/domain/x.py": codes}, dict(tally(codes)))
    run = cast("dict[str, object]", cast("dict[str, object]", report["runs"])["memory-domain"])
    assert run["applied_by_hand"] == applied
    assert run["kill_rate_applied"] == round(2 / 3, 4)


def test_a_mutant_killed_by_the_run_and_by_hand_counts_once() -> None:
    # a rerun's tests now kill what was applied by hand before; a verdict for a mutant the run does
    # not hold (another sample) counts for nothing
    assert applied_kills({"a": "killed", "b": "killed", "z": "killed"}, {"a": 1, "b": 0}) == 1


def test_mutants_without_a_result_are_what_a_resumed_run_checks(tmp_path: Path) -> None:
    meta = tmp_path / "mutants" / "pkg" / "engine.py.meta"
    meta.parent.mkdir(parents=True)
    codes = {
        "pkg.engine.x_a__mutmut_2": None,
        "pkg.engine.x_a__mutmut_1": None,
        "pkg.engine.x_b__mutmut_1": 1,
    }
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    assert not_checked(tmp_path) == ["pkg.engine.x_a__mutmut_1", "pkg.engine.x_a__mutmut_2"]
    assert outcomes(tmp_path) == {"pkg/engine.py": {"pkg.engine.x_b__mutmut_1": 1}}  # counted: checked only
