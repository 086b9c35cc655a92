"""The report's section on MemoryService replicas (``bench/replicas/scenario.py``): throughput per replica
count, where the curve flattens, and why, read from the CPU each process group used."""

from __future__ import annotations

import itertools
from typing import Any

FLAT_GAIN = 1.10
"""A step up in replicas that gains less than this factor counts as flat."""
BUSY_SHARE = 0.9
"""The machine counts as CPU-bound when its cores were busy at least this share of the time."""
GROUPS = ("replicas", "postgresql", "load_generator")


def target_rows(found: dict[str, Any]) -> list[str]:
    """Rows for the report's target table: upserts per job with 1 and 3 replicas (target 1.0)."""
    rows = []
    for run in found.get("outbox", []):
        per_job = run["upserts_per_job"]
        verdict = "met" if per_job == 1.0 else "**not met**"
        rows.append(
            f"| upserts per index job = 1.0 with {run['replicas']} replica(s) on PostgreSQL | {per_job:.3f} "
            f"| {verdict} |"
        )
    return rows


def section(found: dict[str, Any]) -> list[str]:
    if "skipped" in found:
        return [f"Not measured in this run: {found['skipped']}"]
    meta = found["meta"]
    lines = [
        f"`{meta['command']}` (also part of `make bench`{_took(meta)}): {meta['concurrency']} calls in "
        "flight, one agent "
        f"each, the median of {meta['rounds']} interleaved rounds; one client balances round robin over the "
        f"replicas (`ipv4:a,b,c`). Load average before {meta['load_before']}, after {meta['load_after']}; "
        f"{meta['cpu_steal_percent']} % of the CPU time stolen by the host. Cores: CPU each process group "
        f"used during the phase, from `/proc` (machine: all {meta['cpus']} cores).",
        "",
        "| store | replicas | tool edits/s | (rounds) | p50 ms | GetBlock/s | (rounds) | p50 ms "
        "| cores during edits: replicas / PostgreSQL / client / machine |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in found["runs"]:
        edit, read = run["tool_edit"], run["get_block"]
        cores = edit["cores"]
        lines.append(
            f"| {run['backend']} | {run['replicas']} | {edit['per_s']:.0f} | {_rounds(edit)} "
            f"| {edit['p50_ms']:.0f} "
            f"| {read['per_s']:.0f} | {_rounds(read)} | {read['p50_ms']:.0f} | {cores['replicas']:.2f} / "
            f"{cores['postgresql']:.2f} / {cores['load_generator']:.2f} / {cores['machine_busy']:.2f} |"
        )
    postgres = [run for run in found["runs"] if run["backend"] == "postgresql"]
    lines += ["", *(_verdict(postgres, phase, meta["cpus"]) for phase in ("tool_edit", "get_block"))]
    lines += _outbox(found.get("outbox", []), meta["cpus"])
    return lines


def _took(meta: dict[str, Any]) -> str:
    return f"; {meta['wall_s'] / 60:.1f} min" if "wall_s" in meta else ""


def _rounds(phase: dict[str, Any]) -> str:
    return ", ".join(f"{rate:.0f}" for rate in phase["per_s_rounds"])


def _verdict(runs: list[dict[str, Any]], phase: str, cpus: int) -> str:
    """Where the PostgreSQL curve flattens and what bounded it, from the measured CPU per call."""
    name = {"tool_edit": "Tool edits", "get_block": "GetBlock"}[phase]
    if len(runs) < 2:
        return f"- {name}: fewer than two replica counts measured."
    steps = [
        f"{a['replicas']}→{b['replicas']} x{b[phase]['per_s'] / a[phase]['per_s']:.2f}"
        for a, b in itertools.pairwise(runs)
    ]
    flat = next(
        (
            a["replicas"]
            for a, b in itertools.pairwise(runs)
            if b[phase]["per_s"] < FLAT_GAIN * a[phase]["per_s"]
        ),
        None,
    )
    if flat is None:
        last = runs[-1][phase]["cores"]
        ours = sum(last[group] for group in GROUPS)
        return (
            f"- {name} on PostgreSQL ({', '.join(steps)}): still rising at {runs[-1]['replicas']} replicas "
            f"(ours used {ours:.2f} of {cpus} cores, the machine {last['machine_busy']:.2f})."
        )
    at = next(run for run in runs if run["replicas"] == flat)
    rate, cores = at[phase]["per_s"], at[phase]["cores"]
    per_call = {group: 1000 * cores[group] / rate for group in GROUPS}
    ours = sum(cores[group] for group in GROUPS)
    busy = cores["machine_busy"]
    cost = " + ".join(f"{per_call[group]:.2f} ms {group.replace('_', ' ')}" for group in GROUPS)
    total = sum(per_call.values())
    if busy >= BUSY_SHARE * cpus:
        why = (
            f"CPU-bound: the machine's {cpus} cores were busy ({busy:.2f} of {cpus}), {ours:.2f} of them "
            f"ours and {max(0.0, busy - ours):.2f} other work on the machine. Each call cost {cost} = "
            f"{total:.2f} ms of CPU, so even all {cpus} cores give at most {1000 * cpus / total:.0f}/s "
            "here; another replica adds a process, not a core, so the calls only spread over more "
            "processes sharing the same cores"
        )
    else:
        why = (
            f"not CPU-bound ({busy:.2f} of {cpus} cores busy; each call cost {cost} of CPU): the calls "
            "waited, for PostgreSQL's commits and row locks rather than for a processor"
        )
    where = f"flat from {flat} replica(s)"
    return f"- {name} on PostgreSQL ({', '.join(steps)}): {where}. Why: {why}."


def _outbox(runs: list[dict[str, Any]], cpus: int) -> list[str]:
    if not runs:
        return []
    lines = [
        "",
        "Outbox (one RetrievalService with the real embedder; messages appended in batches of 50 and timed "
        "until RetrievalService counts them all):",
        "",
        "| replicas | messages made searchable /s | (rounds) | upserts per job | cores: RetrievalService / "
        "replicas / PostgreSQL / machine |",
        "|---|---|---|---|---|",
    ]
    for run in runs:
        c = run["cores"]
        lines.append(
            f"| {run['replicas']} | {run['messages_per_s']:.0f} | "
            f"{', '.join(f'{r:.0f}' for r in run['messages_per_s_rounds'])} | {run['upserts_per_job']:.3f} | "
            f"{c['retrieval']:.2f} / {c['replicas']:.2f} / {c['postgresql']:.2f} / {c['machine_busy']:.2f} |"
        )
    one, most = runs[0], runs[-1]
    ratio = most["messages_per_s"] / one["messages_per_s"]
    c = most["cores"]
    per_message = 1000 * c["retrieval"] / most["messages_per_s"]
    bound = (
        f"the machine's cores were busy ({c['machine_busy']:.2f} of {cpus})"
        if c["machine_busy"] >= BUSY_SHARE * cpus
        else f"the machine had idle CPU ({c['machine_busy']:.2f} of {cpus} busy)"
    )
    lines += [
        "",
        f"- {most['replicas']} replicas deliver x{ratio:.2f} the rate of {one['replicas']}: "
        "every replica sends "
        f"to the same RetrievalService, which spends {per_message:.1f} ms of CPU per message (embedding it, "
        f"then both indexes) against {1000 * c['replicas'] / most['messages_per_s']:.2f} ms in the replicas, "
        f"so the embedder bounds delivery (at most {1000 * cpus / per_message:.0f} messages/s with all "
        f"{cpus} cores for it) and more MemoryService replicas cannot raise it; {bound}. Scale "
        "RetrievalService (server engine) for ingest, MemoryService for tool calls and reads.",
    ]
    return lines
