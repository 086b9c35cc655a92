"""The summary of a load test, in the spirit of ghz's: counts, rate, latency quantiles and histogram,
status codes, errors counted per distinct message; as text, JSON or CSV (one row per call)."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of sorted values, interpolating linearly (numpy's default method)."""
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


QUANTILES = {"p10": 10.0, "p25": 25.0, "p50": 50.0, "p75": 75.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
CDF_POINTS = 201  # latency at 0 %, 0.5 %, ..., 100 %: enough to draw a CDF without every sample
HISTOGRAM_BUCKETS = 10
BAR_WIDTH = 40


@dataclass(frozen=True)
class Bucket:
    """Calls whose latency is above the previous bucket's mark and at most ``mark_ms``."""

    mark_ms: float
    count: int
    frequency: float


def histogram(ordered: Sequence[float], buckets: int = HISTOGRAM_BUCKETS) -> list[Bucket]:
    """Equal-width buckets from the fastest to the slowest call (ghz's layout); the first bucket
    holds exactly the fastest calls, the last one ends at the slowest."""
    if not ordered:
        return []
    low, high = ordered[0], ordered[-1]
    width = (high - low) / buckets
    marks = [low + width * i for i in range(buckets + 1)] if width > 0 else [low]
    counts = [0] * len(marks)
    for value in ordered:
        index = len(marks) - 1 if width == 0 else min(int(-(-(value - low) // width)), len(marks) - 1)
        counts[index] += 1
    return [Bucket(mark, n, n / len(ordered)) for mark, n in zip(marks, counts, strict=True)]


@dataclass(frozen=True)
class Sample:
    """What one process measured: per-call latencies (ns), status names, and its measured window."""

    latencies_ns: Sequence[int]
    statuses: Sequence[str]
    started: float  # time.monotonic() when measurement began (system-wide clock on Linux)
    finished: float
    errors: Mapping[str, int] = field(default_factory=dict)  # "STATUS: message" -> calls
    warmup_calls: int = 0
    starts_ns: Sequence[int] = ()  # wall clock (ns since the epoch) at each call's start
    messages: Sequence[str] = ()  # each call's error message, "" when OK


class Call(NamedTuple):
    """One measured call: when it started (wall clock, ns), how long it took, how it ended."""

    start_ns: int
    latency_ms: float
    status: str
    error: str


def _calls(sample: Sample) -> Iterable[Call]:
    count = len(sample.latencies_ns)
    starts = sample.starts_ns or [0] * count
    messages = sample.messages or [""] * count
    for start, latency, status, message in zip(
        starts, sample.latencies_ns, sample.statuses, messages, strict=True
    ):
        yield Call(start, latency / 1e6, status, message)


def _iso(start_ns: int) -> str:
    seconds, nanoseconds = divmod(start_ns, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanoseconds // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Report:
    """Latencies are in milliseconds over every measured call, whatever its status."""

    method: str
    target: str
    count: int
    ok: int
    seconds: float
    rps: float
    latency_ms: Mapping[str, float]
    status_codes: Mapping[str, int]
    errors: Mapping[str, int]  # "STATUS: message" -> calls, most frequent first
    cdf_ms: Sequence[float]
    settings: Mapping[str, Any]
    warmup_calls: int = 0
    latencies_ms: Sequence[float] = field(default=(), repr=False)
    histogram: Sequence[Bucket] = ()
    calls: Sequence[Call] = field(default=(), repr=False)  # every measured call, in start order

    @classmethod
    def from_samples(
        cls, method: str, target: str, samples: Iterable[Sample], settings: Mapping[str, Any]
    ) -> Report:
        parts = list(samples)
        latencies = sorted(x / 1e6 for part in parts for x in part.latencies_ns)
        statuses: Counter[str] = Counter(s for part in parts for s in part.statuses)
        errors: Counter[str] = Counter()
        for part in parts:
            errors.update(part.errors)
        calls = sorted(call for part in parts for call in _calls(part))
        seconds = max((p.finished for p in parts), default=0.0) - min((p.started for p in parts), default=0.0)
        count = len(latencies)
        summary: dict[str, float] = {}
        cdf: list[float] = []
        if count:
            summary = {"min": latencies[0], "mean": sum(latencies) / count}
            summary |= {name: percentile(latencies, q) for name, q in QUANTILES.items()}
            summary["max"] = latencies[-1]
            cdf = [percentile(latencies, 100.0 * i / (CDF_POINTS - 1)) for i in range(CDF_POINTS)]
        return cls(
            method=method,
            target=target,
            count=count,
            ok=statuses.get("OK", 0),
            seconds=seconds,
            rps=count / seconds if seconds > 0 else 0.0,
            latency_ms=summary,
            status_codes=dict(sorted(statuses.items())),
            errors=dict(sorted(errors.items(), key=lambda item: (-item[1], item[0]))),
            cdf_ms=cdf,
            settings=dict(settings),
            warmup_calls=sum(part.warmup_calls for part in parts),
            latencies_ms=latencies,
            histogram=histogram(latencies),
            calls=calls,
        )

    def to_dict(self, *, with_latencies: bool = False) -> dict[str, Any]:
        data = {
            "method": self.method,
            "target": self.target,
            "count": self.count,
            "ok": self.ok,
            "seconds": round(self.seconds, 6),
            "rps": round(self.rps, 3),
            "latency_ms": {k: round(v, 4) for k, v in self.latency_ms.items()},
            "status_codes": dict(self.status_codes),
            "errors": dict(self.errors),
            "settings": dict(self.settings),
            "warmup_calls": self.warmup_calls,
            "cdf_ms": [round(x, 4) for x in self.cdf_ms],
            "histogram": [
                {"mark_ms": round(b.mark_ms, 4), "count": b.count, "frequency": round(b.frequency, 6)}
                for b in self.histogram
            ],
        }
        if with_latencies:
            data["latencies_ms"] = [round(x, 4) for x in self.latencies_ms]
        return data

    def write_json(self, path: Path, *, with_latencies: bool = False) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(with_latencies=with_latencies), indent=2) + "\n")

    def to_csv(self) -> str:
        """One row per measured call in the order the calls started (every process's): its start
        time (UTC, ISO 8601, microseconds), latency in ms, status and error message."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["call", "start_time", "latency_ms", "status", "error"])
        writer.writerows(
            (i, _iso(call.start_ns), f"{call.latency_ms:.4f}", call.status, call.error)
            for i, call in enumerate(self.calls)
        )
        return out.getvalue()

    def write(self, path: Path) -> None:
        """The report as CSV when ``path`` ends in .csv, else as JSON (with every latency)."""
        if path.suffix.lower() == ".csv":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.to_csv())
        else:
            self.write_json(path, with_latencies=True)

    def format(self) -> str:
        """A plain-text summary like ghz's."""
        lines = [
            "Summary:",
            f"  Method:   {self.method}",
            f"  Target:   {self.target}",
            f"  Count:    {self.count}",
            f"  Total:    {self.seconds:.2f} s",
            f"  Requests/sec: {self.rps:.2f}",
        ]
        if self.latency_ms:
            lines.append("Latency (ms):")
            lines += [f"  {name:<5} {value:10.3f}" for name, value in self.latency_ms.items()]
        if self.histogram:
            lines.append("Response time histogram (ms):")
            peak = max(b.count for b in self.histogram)
            for b in self.histogram:
                bar = "∎" * (round(BAR_WIDTH * b.count / peak) if peak else 0)
                lines.append(f"  {b.mark_ms:10.3f} [{b.count}]\t|{bar}")
        lines.append("Status code distribution:")
        lines += [f"  [{code}]  {n} responses" for code, n in self.status_codes.items()]
        if self.errors:
            lines.append("Error distribution:")
            lines += [f"  [{n}]  {message}" for message, n in self.errors.items()]
        return "\n".join(lines)
