"""What a glance (``strata_memory.store.glance``) costs the event loop when its pages are not in memory.

    python -m bench.perf.glance_cold --agents 20000 --samples 300

Builds (once, kept under ``.cache/bench/work/glance_cold``) a SQLite store through the store's own
functions: ``--agents`` agents, each with a ~4 KB ``persona`` and ``human`` block. Then, for random
agents, one after another, it times GetBlock's stamp statement (``store.blocks.block_stamp``) and the
full read the pool runs (``BlockLocator.find`` in a read transaction) in three states:

- ``warm``: the same agent read just before (what the glance policy allows on the loop);
- ``cold``: an agent not read before, with the database file and its WAL evicted from the OS page
  cache first (``posix_fadvise(POSIX_FADV_DONTNEED)``, this file only, no root needed), over a
  connection kept open as the server's are (its schema read), so every page it needs that SQLite's
  own cache does not hold comes from this VM's disk;
- per read, the read system calls (``syscr``) and the bytes fetched from storage (``read_bytes``) from
  ``/proc/self/io``: how many pages a cold glance waits for, so its stall on a slower disk is that
  count times the disk's latency.

And the policy's answer for each state (``Glances.run``: declined for a key not read in
``WARM_SECONDS``; a run over ``SLOW_SECONDS`` pauses glances for ``PAUSE_SECONDS``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

from strata_memory.domain.model import Block, RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.operations.blocks import BlockLocator
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store.database import Database
from strata_memory.store.glance import PAUSE_SECONDS, SLOW_SECONDS, WARM_SECONDS, Glances
from strata_memory.store.records import AgentRecord

WORK = Path(".cache/bench/work/glance_cold")
TENANT = "tenant-cold"
VALUE = "Lives in Lyon, works nights; prefers short answers and green tea.\n" * 64  # ~4.2 KB


def build(path: Path, agents: int) -> list[str]:
    ids_file = path.with_suffix(".ids.json")
    if path.exists() and ids_file.exists():
        ids: list[str] = json.loads(ids_file.read_text())
        if len(ids) == agents:
            return ids
    for stale in path.parent.glob(path.name + "*"):
        stale.unlink()
    db = Database(f"sqlite:///{path}")
    db.migrate()
    ids = []
    started = time.monotonic()
    for start in range(0, agents, 1000):
        with db.writing() as conn:
            for n in range(start, min(agents, start + 1000)):
                record = AgentRecord(
                    id=f"agent-cold-{n:07d}",
                    tenant_id=TENANT,
                    name=f"a{n}",
                    system="You are Sam.\n{CORE_MEMORY}",
                    render_mode=RenderMode.STANDARD,
                    recompile_policy=RecompilePolicy.EXPLICIT,
                    timezone="UTC",
                    tool_result_style=ToolResultStyle.FULL_VALUE,
                    version=0,
                    created_us=0,
                    updated_us=0,
                )
                agent = agent_rows.insert_agent(conn, record)
                for label in ("persona", "human"):
                    block = Block(label, f"{label} {n}\n{VALUE}", limit=20_000, id=f"block-{label}-{n:07d}")
                    stored = block_rows.insert_block(conn, TENANT, block, source="bench", actor="bench")
                    block_rows.attach(conn, agent.id, stored.block)
                ids.append(agent.id)
        print(f"  built {len(ids)} agents in {time.monotonic() - started:.0f} s", flush=True)
    db.close()
    ids_file.write_text(json.dumps(ids))
    return ids


def _io() -> tuple[int, int]:
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["read_bytes"])


def evict(path: Path) -> None:
    for each in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if each.exists() and not each.name.endswith("-shm"):
            fd = os.open(each, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def timed(run: Any) -> dict[str, float]:
    calls, fetched = _io()
    start = time.perf_counter()
    run()
    took = time.perf_counter() - start
    calls_after, fetched_after = _io()
    return {
        "ms": took * 1e3,
        "read_calls": calls_after - calls,
        "kib_from_disk": (fetched_after - fetched) / 1024,
    }


def _summary(rows: list[dict[str, float]]) -> dict[str, float]:
    ms = sorted(r["ms"] for r in rows)
    return {
        "p50_ms": round(statistics.median(ms), 4),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 4),
        "max_ms": round(ms[-1], 4),
        "read_calls_median": statistics.median(r["read_calls"] for r in rows),
        "kib_from_disk_median": statistics.median(r["kib_from_disk"] for r in rows),
        "over_slow_bound": sum(r["ms"] > SLOW_SECONDS * 1e3 for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf.glance_cold", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--agents", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--output", type=Path, default=Path("bench/results/glance_cold.json"))
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / "store.sqlite3"
    ids = build(path, args.agents)
    load = [os.getloadavg()[0]]
    db = Database(f"sqlite:///{path}")
    uri = path.resolve().as_uri() + "?mode=ro"
    pick = random.Random(32)
    found: dict[str, list[dict[str, float]]] = {
        k: [] for k in ("glance_warm", "glance_cold", "pool_read_cold", "pool_read_warm")
    }
    declined_cold = 0
    glances = Glances(str(path))
    raw = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=0)
    raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
    for _ in range(args.samples):
        agent_id = pick.choice(ids)
        locator = BlockLocator(agent_id=agent_id, label="human")

        def stamp(raw: sqlite3.Connection, agent_id: str = agent_id) -> Any:
            return block_rows.block_stamp(raw, TENANT, agent_id=agent_id, label="human")

        def full(locator: BlockLocator = locator) -> Any:
            with db.reading() as conn:
                return locator.find(conn, TENANT)

        # The policy on a key never read: declined, the pool reads it.
        declined_cold += glances.run(("block", TENANT, locator), stamp) is None
        evict(path)  # the glance connection stays open (schema read) as the server's does
        found["glance_cold"].append(timed(lambda stamp=stamp: stamp(raw)))
        found["glance_warm"].append(timed(lambda stamp=stamp: stamp(raw)))
        evict(path)
        found["pool_read_cold"].append(timed(full))
        found["pool_read_warm"].append(timed(full))
    raw.close()
    glances.close()
    db.close()
    load.append(os.getloadavg()[0])
    size_mib = path.stat().st_size / 2**20
    result = {
        "agents": len(ids),
        "database_mib": round(size_mib, 1),
        "samples": args.samples,
        "policy": {
            "warm_seconds": WARM_SECONDS,
            "slow_seconds": SLOW_SECONDS,
            "pause_seconds": PAUSE_SECONDS,
        },
        "never_read_keys_declined": declined_cold,
        "load": load,
        **{name: _summary(rows) for name, rows in found.items()},
    }
    print(json.dumps(result, indent=1), flush=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
