"""The report's verdict on hybrid search at 100k says what the p50 is made of."""

from __future__ import annotations

from typing import Any

from bench.perf.report import hybrid_parts


def step(steal: float | None) -> dict[str, Any]:
    hybrid: dict[str, Any] = {"latency_ms": {"p50": 9.4, "p99": 14.0}}
    if steal is not None:
        hybrid["cpu_steal_percent"] = steal
    return {
        "engine": {"hybrid": {"engine_p50_ms": 7.25, "stage_p50_ms": {"embedding": 3.5}}},
        "grpc": {"hybrid_c1": hybrid, "floor_c1": {"latency_ms": {"p50": 0.81}}},
    }


def test_the_hybrid_verdict_names_the_engine_its_embedding_the_floor_and_the_steal() -> None:
    assert hybrid_parts(step(12.4)) == (
        " (engine 7.250 ms, embedding 3.500; floor 0.810; host took 12 % of the CPU)"
    )


def test_a_run_without_a_steal_record_leaves_it_out() -> None:
    assert hybrid_parts(step(None)) == " (engine 7.250 ms, embedding 3.500; floor 0.810)"
