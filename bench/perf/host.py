"""How much CPU this VM's host gave to other guests while we measured (steal time, ``/proc/stat``).

On a shared VM the host can take a fifth of the CPU for minutes at a time, and every latency
measured meanwhile is inflated. ``make bench`` records the share for the whole run and for each
scenario, so a slow figure can be told apart from a busy host.
"""

from __future__ import annotations

from pathlib import Path

NOTICEABLE_STEAL_PERCENT = 5.0  # above this a scenario's figures are flagged in the output and report


def cpu_ticks() -> tuple[int, int]:
    """(all, stolen) CPU ticks since boot, summed over this machine's cores."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields[:8]), fields[7]


def steal_percent(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the CPU time between two :func:`cpu_ticks` readings that the host took."""
    spent = after[0] - before[0]
    return round(100 * (after[1] - before[1]) / spent, 1) if spent > 0 else 0.0
