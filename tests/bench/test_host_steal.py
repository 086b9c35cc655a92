"""The benchmark's record of CPU time the VM's host took, and how the report flags it."""

from __future__ import annotations

from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.report import disturbed


def test_steal_is_the_stolen_share_of_the_ticks_between_two_readings() -> None:
    assert steal_percent((1_000, 10), (1_200, 40)) == 15.0
    assert steal_percent((500, 3), (500, 3)) == 0.0  # no tick passed


def test_this_machines_counters_read_as_ticks_with_a_stolen_part() -> None:
    total, stolen = cpu_ticks()
    assert total > 0
    assert 0 <= stolen <= total


def test_the_report_names_each_scenario_the_host_disturbed_and_only_those() -> None:
    retrieval = {
        "sizes": {
            "100000": {
                "grpc": {"fts_c1": {"cpu_steal_percent": 12.4}, "hybrid_c1": {"cpu_steal_percent": 1.0}},
                "engine": {"hybrid": {"cpu_steal_percent": 7.0}},
            }
        }
    }
    [line] = disturbed(retrieval)
    assert "100000 fts_c1 (12 %)" in line
    assert "100000 engine hybrid (7 %)" in line
    assert "hybrid_c1" not in line


def test_the_report_says_when_nothing_was_disturbed_and_is_silent_for_runs_without_the_record() -> None:
    assert disturbed({"GetBlock": {"c1": {"cpu_steal_percent": 0.4}}}) == [
        "- No scenario had more than 5 % of its CPU time stolen."
    ]
    assert disturbed({"GetBlock": {"c1": {"latency_ms": {"p50": 1.0}}}}) == []
