"""CPU time per process from ``/proc``, to say which process a throughput figure ran out of.

A phase is measured as cores used: CPU seconds (user + system) spent by a group of processes during
the phase, divided by its wall time. The groups are named by the caller (the load generator, the
service replicas, the PostgreSQL backends serving them); ``machine_busy`` is every core's non-idle
time over the same span, so what none of the groups spent is other work on the machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (all its threads); 0.0 once it has exited."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces; fields follow ")"
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_SECOND  # utime, stime (fields 14, 15)


def busy_and_all_ticks() -> tuple[int, int]:
    """(non-idle, all) CPU ticks since boot over every core; idle and iowait count as not busy."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    total = sum(fields)
    return total - fields[3] - fields[4], total


@dataclass(frozen=True, slots=True)
class Reading:
    wall: float
    groups: dict[str, float]
    busy_ticks: tuple[int, int]


def read(groups: Mapping[str, Iterable[int]]) -> Reading:
    return Reading(
        time.perf_counter(),
        {name: sum(cpu_seconds(pid) for pid in pids) for name, pids in groups.items()},
        busy_and_all_ticks(),
    )


def cores_used(before: Reading, after: Reading) -> dict[str, float]:
    """Cores each group used between two readings, and ``machine_busy``: the whole machine's."""
    wall = after.wall - before.wall
    used = {name: round((after.groups[name] - before.groups[name]) / wall, 2) for name in after.groups}
    busy = after.busy_ticks[0] - before.busy_ticks[0]
    spent = after.busy_ticks[1] - before.busy_ticks[1]
    cores = os.cpu_count() or 1
    used["machine_busy"] = round(cores * busy / spent, 2) if spent > 0 else 0.0
    return used
