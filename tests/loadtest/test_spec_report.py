"""Limits of a load spec, how it is shared between processes, and the report's arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata.loadtest import LoadSpec, LoadTestError, Report, Sample
from strata.loadtest.report import percentile

TARGET = "127.0.0.1:1"
HEALTH = "grpc.health.v1.Health/Check"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({}, "duration or a request count"),
        ({"duration": 0.0}, "duration"),
        ({"duration": 1e9}, "duration"),
        ({"requests": 0}, "requests"),
        ({"requests": 10**9}, "requests"),
        ({"requests": 5, "concurrency": 0}, "concurrency"),
        ({"requests": 5, "concurrency": 2, "processes": 3}, "processes"),
        ({"requests": 2, "concurrency": 4, "processes": 4}, "one request per process"),
        ({"requests": 5, "rate": -1.0}, "rate"),
        ({"requests": 5, "warmup_seconds": -1.0}, "warm-up"),
        ({"requests": 5, "timeout": 0.0}, "timeouts"),
    ],
)
def test_unbounded_or_impossible_specs_are_refused(changes: dict[str, object], reason: str) -> None:
    with pytest.raises(LoadTestError, match=reason):
        LoadSpec(target=TARGET, method=HEALTH, **changes).validate()  # type: ignore[arg-type]


def test_a_count_only_run_is_still_bounded_in_time() -> None:
    spec = LoadSpec(target=TARGET, method=HEALTH, requests=10, max_seconds=30.0).validate()
    assert spec.seconds_limit == 30.0
    assert LoadSpec(target=TARGET, method=HEALTH, duration=5.0).seconds_limit == 5.0


def test_shares_add_up_and_workers_are_numbered_uniquely() -> None:
    spec = LoadSpec(
        target=TARGET, method=HEALTH, concurrency=7, requests=101, warmup_requests=9, rate=30.0, processes=3
    ).validate()
    shares = [spec.share(i) for i in range(3)]
    assert sum(s.concurrency for s in shares) == 7
    assert sum(s.requests or 0 for s in shares) == 101
    assert sum(s.warmup_requests for s in shares) == 9
    assert sum(s.rate or 0 for s in shares) == pytest.approx(30.0)
    assert all(s.processes == 1 for s in shares)
    offsets = [spec.worker_offset(i) for i in range(3)]
    workers = [offsets[i] + w for i, s in enumerate(shares) for w in range(s.concurrency)]
    assert sorted(workers) == list(range(7))


def test_percentile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 100) == 4.0
    assert percentile(values, 90) == pytest.approx(3.7)


def test_samples_of_several_processes_merge_into_one_report(tmp_path: Path) -> None:
    t0 = 1_796_000_000_000_000_000  # wall-clock ns: 2026-11-30T00:53:20Z
    first = Sample(
        [1_000_000, 3_000_000], ["OK", "OK"], started=10.0, finished=11.0, starts_ns=[t0, t0 + 3_000_000]
    )
    second = Sample(
        [2_000_000, 4_000_000],
        ["OK", "NOT_FOUND"],
        10.5,
        12.0,
        {"NOT_FOUND: no block": 1},
        starts_ns=[t0 + 1_000_000, t0 + 2_500_000],
        messages=["", "no block"],
    )
    report = Report.from_samples(HEALTH, TARGET, [first, second], {"concurrency": 2})
    assert (report.count, report.ok, report.seconds, report.rps) == (4, 3, 2.0, 2.0)
    assert report.latency_ms["min"] == 1.0
    assert report.latency_ms["max"] == 4.0
    assert report.latency_ms["mean"] == 2.5
    assert report.latency_ms["p50"] == 2.5
    assert report.status_codes == {"NOT_FOUND": 1, "OK": 3}
    assert report.cdf_ms[0] == 1.0
    assert report.cdf_ms[-1] == 4.0
    text = report.format()
    assert "Requests/sec: 2.00" in text
    assert "[NOT_FOUND]  1 responses" in text
    assert "[1]  NOT_FOUND: no block" in text
    assert report.errors == {"NOT_FOUND: no block": 1}
    assert [report.latency_ms[q] for q in ("p10", "p25", "p75")] == pytest.approx([1.3, 1.75, 3.25])
    assert [b.count for b in report.histogram] == [1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1]
    assert report.histogram[-1].mark_ms == 4.0
    assert report.to_csv().splitlines() == [  # in the order the calls started, across processes
        "call,start_time,latency_ms,status,error",
        "0,2026-11-30T00:53:20.000000Z,1.0000,OK,",
        "1,2026-11-30T00:53:20.001000Z,2.0000,OK,",
        "2,2026-11-30T00:53:20.002500Z,4.0000,NOT_FOUND,no block",
        "3,2026-11-30T00:53:20.003000Z,3.0000,OK,",
    ]
    report.write_json(tmp_path / "r.json", with_latencies=True)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["count"] == 4
    assert data["latencies_ms"] == [1.0, 2.0, 3.0, 4.0]
    assert data["settings"] == {"concurrency": 2}
    assert [b["count"] for b in data["histogram"]] == [1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1]


def test_errors_from_several_processes_are_counted_per_distinct_message() -> None:
    first = Sample(
        [1, 2, 3], ["NOT_FOUND", "NOT_FOUND", "ABORTED"], 0.0, 1.0, {"NOT_FOUND: a": 2, "ABORTED: x": 1}
    )
    second = Sample([4, 5], ["NOT_FOUND", "NOT_FOUND"], 0.0, 1.0, {"NOT_FOUND: a": 1, "NOT_FOUND: b": 1})
    report = Report.from_samples(HEALTH, TARGET, [first, second], {})
    assert report.errors == {"NOT_FOUND: a": 3, "ABORTED: x": 1, "NOT_FOUND: b": 1}
    assert list(report.errors) == ["NOT_FOUND: a", "ABORTED: x", "NOT_FOUND: b"]


def test_an_empty_run_reports_zero_without_dividing_by_zero() -> None:
    report = Report.from_samples(HEALTH, TARGET, [Sample([], [], 5.0, 5.0)], {})
    assert (report.count, report.rps, dict(report.latency_ms)) == (0, 0.0, {})
