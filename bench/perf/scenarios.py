"""One measured scenario: a method at a concurrency, through ``strata.loadtest``, with server CPU.

Latency is measured from one client process with one call in flight; throughput from two client
processes (the concurrency split between them), as in the floor measurements of the dependency
notes. Server CPU per call comes from ``/proc/<pid>/stat`` of every server process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.perf.host import NOTICEABLE_STEAL_PERCENT, cpu_ticks, steal_percent
from bench.perf.processes import cpu_seconds
from strata.loadtest import LoadSpec, Report, run_load

HEALTH = "grpc.health.v1.Health/Check"
CLIENT_PROCESSES = 2


@dataclass(frozen=True)
class Durations:
    """Seconds of warm-up and measurement per scenario (``--quick`` shrinks them)."""

    latency: float = 5.0
    throughput: float = 4.0
    warmup: float = 1.0


@dataclass(frozen=True)
class Call:
    """What to call: a method with a JSON request or a ``bench.perf.requests`` factory."""

    method: str
    data: Mapping[str, Any] | None = None
    factory: str | None = None
    params: Mapping[str, Any] | None = None


def measure(
    target: str,
    call: Call,
    concurrency: int,
    seconds: float,
    *,
    warmup: float,
    server_pids: Sequence[int] = (),
    requests: int | None = None,
    processes: int | None = None,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Run one scenario; its report as a dict plus the servers' CPU time per call (µs) and the share
    of the machine's CPU time the VM's host took meanwhile."""
    spec = LoadSpec(
        target=target,
        method=call.method,
        data=json.dumps(call.data or {}),
        factory=f"bench.perf.requests:{call.factory}" if call.factory else None,
        params=dict(call.params or {}),
        concurrency=concurrency,
        duration=seconds,
        requests=requests,
        warmup_seconds=warmup,
        processes=processes or (1 if concurrency == 1 else CLIENT_PROCESSES),
        timeout=timeout,
    )
    before, ticks = sum(cpu_seconds(pid) for pid in server_pids), cpu_ticks()
    report = run_load(spec)
    used = sum(cpu_seconds(pid) for pid in server_pids) - before
    result = report.to_dict() | {"cpu_steal_percent": steal_percent(ticks, cpu_ticks())}
    if server_pids and report.count:
        calls = report.count + report.warmup_calls  # the CPU window includes the warm-up
        result["server_cpu_us_per_call"] = round(used / calls * 1e6, 1)
    _print_line(call, concurrency, report, result["cpu_steal_percent"])
    return result


def _print_line(call: Call, concurrency: int, report: Report, steal: float) -> None:
    name = call.method.rsplit("/", 1)[-1] + (f"({call.factory})" if call.factory else "")
    if call.params and "mode" in call.params:
        name += " " + str(call.params["mode"]).removeprefix("SEARCH_MODE_").lower()
    lat = report.latency_ms
    bad = report.count - report.ok
    print(
        f"    {name:<38} c={concurrency:<3} n={report.count:<6} {report.rps:9.1f} rps  "
        f"p50 {lat.get('p50', 0):7.3f} ms  p99 {lat.get('p99', 0):7.3f} ms"
        + (f"  ERRORS {bad}" if bad else "")
        + (f"  (host took {steal:.0f} % of the CPU)" if steal >= NOTICEABLE_STEAL_PERCENT else ""),
        flush=True,
    )
