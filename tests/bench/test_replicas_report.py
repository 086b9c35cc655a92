"""The replica section of bench/REPORT.md: where the curve flattens and what bounded it, read from the
CPU each process group used; and the per-process CPU reading it rests on."""

from __future__ import annotations

import os
from typing import Any

from bench.perf import process_cpu, replicas_report


def run(replicas: int, per_s: float, busy: float, mine: float = 0.5) -> dict[str, Any]:
    cores = {"replicas": mine, "postgresql": 0.25, "load_generator": 0.1, "machine_busy": busy}
    phase = {"per_s": per_s, "per_s_rounds": [per_s], "p50_ms": 10.0, "p99_ms": 20.0, "cores": cores}
    return {"backend": "postgresql", "replicas": replicas, "tool_edit": phase, "get_block": phase}


def test_the_curve_is_flat_from_the_first_step_that_gains_under_ten_percent() -> None:
    line = replicas_report._verdict([run(1, 100, 2.0), run(2, 150, 2.0), run(3, 160, 2.0)], "tool_edit", 2)
    assert "1→2 x1.50, 2→3 x1.07" in line
    assert "flat from 2 replica(s)" in line


def test_a_busy_machine_is_called_cpu_bound_with_the_cost_of_each_call() -> None:
    line = replicas_report._verdict([run(1, 100, 1.95), run(2, 100, 1.95)], "tool_edit", 2)
    # 0.5 + 0.25 + 0.1 cores at 100 calls/s: 5 + 2.5 + 1 ms of CPU per call, 2 cores give 235/s
    assert "CPU-bound" in line
    assert "8.50 ms of CPU" in line
    assert "at most 235/s" in line


def test_an_idle_machine_is_not_called_cpu_bound() -> None:
    line = replicas_report._verdict([run(1, 100, 1.0), run(2, 100, 1.0)], "get_block", 2)
    assert "not CPU-bound" in line


def test_a_rising_curve_is_said_to_be_rising() -> None:
    line = replicas_report._verdict([run(1, 100, 1.0), run(2, 190, 1.0), run(3, 280, 1.0)], "get_block", 2)
    assert "still rising" in line


def test_upserts_per_job_above_one_miss_the_target() -> None:
    rows = replicas_report.target_rows(
        {"outbox": [{"replicas": 1, "upserts_per_job": 1.0}, {"replicas": 3, "upserts_per_job": 1.25}]}
    )
    assert rows[0].endswith("| met |")
    assert rows[1].endswith("| **not met** |")


def test_cpu_seconds_grow_with_work_and_read_zero_for_a_process_that_is_gone() -> None:
    before = process_cpu.cpu_seconds(os.getpid())
    sum(i * i for i in range(3_000_000))
    assert process_cpu.cpu_seconds(os.getpid()) > before
    assert process_cpu.cpu_seconds(2**22 + 1) == 0.0  # above the kernel's largest pid
