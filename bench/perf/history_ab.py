"""Paired, interleaved A/B of a tool edit's cost against the length of the agent's history, between
sources of MemoryService: does an ``on_edit`` agent's edit (and its prompt read) slow down as its
messages and passages pile up?

    python -m bench.perf.history_ab --tree before=/tmp/ab/before --tree after=. --messages 2000000 --rounds 60

One SQLite store is seeded once, at the first tree's schema: two ``on_edit`` agents made through
CreateAgent (a ~4,3xx-character ``human`` block, as ``bench.perf.memory_bench`` seeds), "small" with
``--small`` messages and "large" with ``--messages`` messages and ``--passages`` passages (each with one
of ``--tags`` tags) in an attached archive, the rows written straight into the file (through the API
they would take hours). Each
``--tree NAME=PATH`` (a checkout or ``git archive`` of a commit) then serves its own copy of that file
(``PYTHONPATH=<tree>/services/memory``; a newer tree migrates its copy at start). Lanes: each tree's
memory_replace on the small and on the large agent, and GetSystemPrompt of the large one, in rounds
shuffled afresh (:mod:`bench.perf.interleaved`). Reported: each lane's p50, each tree's large/small
edit ratio (paired), and for the trees after the first, ``vs_ref`` against the first's same lane.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from bench.perf.interleaved import Lane, interleave, paired_ratio
from bench.perf.memory_bench import CALLS_PER_ROUND, EDITED_BLOCK_CHARS, HUMAN, PERSONA, SERVICE, padded
from bench.perf.processes import ServerProcess
from bench.perf.scenarios import Call
from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb

WORK = Path(".cache/bench/work/history_ab")
BATCH_ROWS = 50_000


def _server(name: str, tree: Path, database: Path) -> ServerProcess:
    env = {"PYTHONPATH": str(tree.resolve() / "services" / "memory")}
    return ServerProcess(["memory", "--database-url", f"sqlite:///{database}"], WORK / f"{name}.log", env=env)


def _agents(address: str) -> dict[str, str]:
    edited = padded(HUMAN.replace("Counter [n=0].\n", "", 2), EDITED_BLOCK_CHARS)  # "[n=0]" once
    blocks = [
        pb.Block(label="persona", value=PERSONA, limit=20_000),
        pb.Block(label="human", value=edited, limit=20_000),
    ]
    with MemoryClient(address) as client:
        return {
            size: client.create_agent(agent=pb.Agent(name=size, system="You are Sam."), blocks=blocks).id
            for size in ("small", "large")
        }


def _history(database: Path, agent_id: str, messages: int, passages: int, tags: int) -> None:
    """``messages`` user messages of the agent's default conversation and ``passages`` passages in an
    archive attached to it, each with one of ``tags`` tags (none when 0), written as the store writes
    them (sequence numbers reserved)."""
    with contextlib.closing(sqlite3.connect(database)) as conn, conn:
        tenant, first = conn.execute(
            "SELECT tenant_id, next_sequence FROM agents WHERE id = ?", (agent_id,)
        ).fetchone()
        for start in range(0, messages, BATCH_ROWS):
            conn.executemany(
                "INSERT INTO messages (id, tenant_id, agent_id, conversation_id, role, content, name,"
                " tool_calls, tool_call_id, sequence, created_us)"
                " VALUES (?, ?, ?, 'default', 'user', ?, '', '[]', '', ?, ?)",
                (
                    (
                        f"m-{agent_id}-{i}",
                        tenant,
                        agent_id,
                        f"message {i} about the night-shift rota",
                        first + i,
                        i,
                    )
                    for i in range(start, min(start + BATCH_ROWS, messages))
                ),
            )
        conn.execute("UPDATE agents SET next_sequence = ? WHERE id = ?", (first + messages, agent_id))
        if passages:
            archive = f"archive-{agent_id}"
            conn.execute("INSERT INTO archives VALUES (?, ?, 'notes', '', 0)", (archive, tenant))
            conn.execute("INSERT INTO archive_agents VALUES (?, ?, 1, 0)", (archive, agent_id))
            conn.executemany(
                "INSERT INTO passages (id, tenant_id, archive_id, text, tags, metadata, created_us)"
                " VALUES (?, ?, ?, ?, '[]', '{}', ?)",
                ((f"p-{agent_id}-{i}", tenant, archive, f"fact {i}", i) for i in range(passages)),
            )
            if tags:
                conn.executemany(
                    "INSERT INTO passage_tags (passage_id, tag, archive_id) VALUES (?, ?, ?)",
                    ((f"p-{agent_id}-{i}", f"tag{i % tags}", archive) for i in range(passages)),
                )
                conn.executemany(
                    "UPDATE passages SET tags = json_array(?) WHERE id = ?",
                    ((f"tag{i % tags}", f"p-{agent_id}-{i}") for i in range(passages)),
                )
    with contextlib.closing(sqlite3.connect(database)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _seed(
    reference: Path, messages: int, small: int, passages: int, tags: int
) -> tuple[Path, dict[str, str]]:
    template = WORK / "template.sqlite3"
    for stale in WORK.glob("*.sqlite3*"):
        stale.unlink()
    with _server("seed", reference, template) as server:
        agents = _agents(server.address)
    _history(template, agents["small"], small, 0, 0)
    _history(template, agents["large"], messages, passages, tags)
    return template, agents


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.history_ab", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH, repeatable")
    parser.add_argument("--messages", type=int, default=2_000_000, help="the large agent's messages")
    parser.add_argument("--passages", type=int, default=100_000, help="the large agent's passages")
    parser.add_argument("--tags", type=int, default=20, help="distinct tags over the large agent's passages")
    parser.add_argument("--small", type=int, default=10, help="the small agent's messages")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--calls", type=int, default=CALLS_PER_ROUND)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    trees = {name: Path(path) for name, path in (each.split("=", 1) for each in args.tree)}
    reference = next(iter(trees))
    WORK.mkdir(parents=True, exist_ok=True)
    template, agents = _seed(trees[reference], args.messages, args.small, args.passages, args.tags)
    load = [os.getloadavg()[0]]
    with contextlib.ExitStack() as running:
        lanes = []
        for name, tree in trees.items():
            copy = WORK / f"{name}.sqlite3"
            shutil.copyfile(template, copy)
            server = running.enter_context(_server(name, tree, copy))
            for size, agent_id in agents.items():
                edit = Call(
                    f"{SERVICE}/ExecuteTool", factory="memory_replace", params={"agent_ids": [agent_id]}
                )
                lanes.append(Lane(f"{name} memory_replace({size})", server.address, edit, server.pid))
            prompt = Call(f"{SERVICE}/GetSystemPrompt", {"agent_id": agents["large"]})
            lanes.append(Lane(f"{name} GetSystemPrompt(large)", server.address, prompt, server.pid))
        found = interleave(lanes, rounds=args.rounds, calls=args.calls, seed=args.seed)
    load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {}
    for lane in lanes:
        variant, _, scenario = lane.name.partition(" ")
        row: dict[str, Any] = {
            "p50_ms": found[lane.name]["latency_ms"]["p50"],
            "not_ok": found[lane.name]["count"] - found[lane.name]["ok"],
        }
        if scenario == "memory_replace(large)":
            row["large_vs_small"] = paired_ratio(found, lane.name, f"{variant} memory_replace(small)")
        if variant != reference:
            row["vs_ref"] = paired_ratio(found, lane.name, f"{reference} {scenario}")
        summary[lane.name] = row
        print(f"  {lane.name:<40} " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    summary["meta"] = {
        "trees": args.tree,
        "messages": args.messages,
        "passages": args.passages,
        "tags": args.tags,
        "small": args.small,
        "rounds": args.rounds,
        "calls": args.calls,
        "seed": args.seed,
        "load": load,
    }
    print(json.dumps(summary["meta"]), flush=True)
    if args.output:
        args.output.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
