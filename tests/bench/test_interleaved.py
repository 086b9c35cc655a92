"""Interleaved latency lanes (bench/perf/interleaved.py) and the memory verdicts built on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.perf import memory_bench, memory_report
from bench.perf.interleaved import Lane, interleave, paired_ratio
from bench.perf.processes import ServerProcess
from bench.perf.scenarios import HEALTH, Call


def test_every_lane_gets_its_calls_in_every_round_against_a_real_server(tmp_path: Path) -> None:
    with ServerProcess(["bare"], tmp_path / "bare.log") as bare:
        lanes = [Lane("a", bare.address, Call(HEALTH), bare.pid), Lane("b", bare.address, Call(HEALTH))]
        found = interleave(lanes, rounds=4, calls=3, warmup=2)
    assert set(found) == {"a", "b"}
    for lane in found.values():
        assert (lane["count"], lane["ok"]) == (12, 12)
        assert len(lane["per_round_ms"]) == 4
        assert lane["latency_ms"]["p50"] > 0
        assert lane["settings"]["rounds"] == 4
    assert "server_cpu_us_per_call" in found["a"]
    assert "server_cpu_us_per_call" not in found["b"]
    assert paired_ratio(found, "a", "a") == 1.0


def test_a_failing_call_is_counted_not_raised(tmp_path: Path) -> None:
    with ServerProcess(["bare"], tmp_path / "bare.log") as bare:
        missing = Call("strata.memory.v1.MemoryService/GetBlock", {"block": {"agent_id": "a", "label": "h"}})
        found = interleave([Lane("missing", bare.address, missing)], rounds=2, calls=2, warmup=1)
    lane = found["missing"]
    assert (lane["count"], lane["ok"]) == (4, 0)
    assert lane["status_codes"] == {"UNIMPLEMENTED": 4}


def _lane(p50: float, rounds: list[float]) -> dict[str, Any]:
    return {
        "latency_ms": {"p50": p50, "p99": 2 * p50},
        "per_round_ms": rounds,
        "settings": {"rounds": 3},
        "count": 30,
        "warmup_calls": 5,
    }


def _results(edit: dict[str, Any]) -> dict[str, Any]:
    bare = _lane(1.0, [1.0, 2.0, 1.0])
    own = _lane(1.0, [1.0, 2.0, 1.0])
    ops = {name: {"c1": dict(edit)} for name in memory_bench.TARGETS}
    for op in ops.values():
        op["c1"]["ratio_bare"] = paired_ratio({"x": op["c1"], "bare": bare}, "x", "bare")
        op["c1"]["ratio_own"] = paired_ratio({"x": op["c1"], "own": own}, "x", "own")
    return {"bare_floor": {"c1": bare}, "floor": {"c1": own}, "operations": ops}


def test_an_edit_scenario_whose_edits_were_refused_gets_no_verdict() -> None:
    results = _results(_lane(2.0, [2.0, 2.0, 2.0]))
    applied = {"ExecuteTool(memory_replace)": 35, "ExecuteTool(core_memory_append)": 20}
    found = memory_bench.verdicts(results | {"edited_blocks": {"applied": applied}})
    assert found["ExecuteTool(memory_replace)"]["met"]  # every call edited its block
    append = found["ExecuteTool(core_memory_append)"]
    assert append["ratio_bare"] == 2.0
    assert not append["met"]  # 15 of 35 appends were refused (e.g. a full block): cheaper, not real
    assert append["edits_not_applied"] == 15
    rows = memory_report.target_rows(results | {"targets": found})
    assert "15 edits not applied" in rows[-1]


def test_the_verdict_is_the_median_of_paired_round_ratios_not_a_ratio_of_p50s() -> None:
    # Round by round the edit costs 3x the floor; its pooled p50 (5.0) over the floor's would say 5x.
    results = _results(_lane(5.0, [3.0, 6.0, 3.0]))
    found = memory_bench.verdicts(results)
    edit_verdict = found["ExecuteTool(core_memory_append)"]
    assert edit_verdict["ratio_bare"] == 3.0
    assert edit_verdict["met"]
    assert not found["GetBlock"]["met"]  # 3x the floor is over a read's 1.5x
    rows = memory_report.target_rows(results | {"targets": found})
    assert "median of 3 interleaved rounds' ratios" in rows[-1]
