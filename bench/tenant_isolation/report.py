"""The tenant-isolation section of bench/REPORT.md, from bench/results/tenant_isolation.json."""

from __future__ import annotations

from typing import Any

from bench.tenant_isolation.scenario import OPERATIONS

TARGET = 2.0
TITLES = {
    "searches": "32 concurrent plain searches",
    "tag_flood": "32 concurrent searches with 100,000 tags",
    "reindex": "16 Reindex streams kept in flight",
    "create_agents": "CreateAgent flood, 8 loops",
    "idle_connections": "1,100 silent TCP connections",
}


def _cell(phase: dict[str, Any], ratio: dict[str, Any]) -> str:
    if ratio["p50"] is None:
        return "all failed"
    mark = "" if max(ratio["p50"], ratio["p99"]) <= TARGET else " ✗"
    failed = sum(phase["failed"].values())
    extra = f", {failed} failed" if failed else ""
    times = f"{phase['p50_ms']:.1f} / {phase['p99_ms']:.0f} ms"
    return f"{times} (x{ratio['p50']:g} / x{ratio['p99']:g}){extra}{mark}"


def _cores(phase: dict[str, Any]) -> str:
    cores = phase.get("cores", {})
    used = ", ".join(
        f"{cores[name]:.2f}"
        for name in ("memory", "retrieval", "flood client", "quiet client")
        if name in cores
    )
    return f"{used}; {phase['load'][0]:g}"


def section(found: dict[str, Any]) -> list[str]:
    """A table: one row per flood, one column per quiet call, p50 / p99 and their ratios to alone."""
    base = found["baseline"]
    head = (
        "| the noisy tenant does | "
        + " | ".join(f"quiet {op}" for op in OPERATIONS)
        + " | noisy calls | cores: memory, retrieval, flood client, quiet client; load |"
    )
    lines = [
        f"`{found['meta']['command']}` at {found['meta']['git_commit']} ({found['meta']['started_utc']} UTC, "
        f"{found['meta']['wall_s'] / 60:.1f} min, {found['meta']['cpu_steal_percent']} % CPU stolen). "
        f"Quiet p50 / p99 and, in brackets, their ratios to the quiet tenant alone; target x{TARGET:g} "
        "(✗: above it).",
        "",
        head,
        "|" + "---|" * (len(OPERATIONS) + 3),
        "| nothing (alone, both phases) | "
        + " | ".join(f"{base[op]['p50_ms']:.1f} / {base[op]['p99_ms']:.0f} ms" for op in OPERATIONS)
        + " | | |",
    ]
    for kind, ratio in found["ratios"].items():
        phase = found["phases"][kind]
        outcomes = ", ".join(f"{name} {count:,}" for name, count in phase["flood_outcomes"].items())
        cells = " | ".join(_cell(phase[op], ratio[op]) for op in OPERATIONS)
        lines.append(f"| {TITLES.get(kind, kind)} | {cells} | {outcomes} | {_cores(phase)} |")
    return [*lines, "", found["how"]]
