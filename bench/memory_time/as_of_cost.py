"""What an as-of render costs next to a render of memory now, at 1,000 versions, side by side.

    python -m bench.memory_time.as_of_cost --versions 1000 --rounds 200 \\
        --output bench/results/memory_time_as_of.json

One MemoryService (SQLite file in a temp folder) holds an agent with three blocks of ~2,000 characters;
the ``human`` block is edited ``--versions`` times (one line changed each time), and a moment is
taken after each edit. Each round, in an order shuffled afresh (seeded), times one call per lane:

- ``now``: RenderMemory of the agent as it is;
- ``as_of_recent``: RenderMemory as of the moment after the last edit (the newest version);
- ``as_of_middle``: as of a moment half-way through the history (version ~versions/2);
- ``as_of_oldest``: as of the moment after the first edit;
- ``receipt``: RenderMemory by the receipt of the prompt compiled after the last edit.

Reported per lane: p50 and p90 in milliseconds, and each as-of lane's paired ratio to ``now``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from strata.client import AsyncMemoryClient
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings

LINE = "a fact the agent keeps about the user, line {i:03d}\n"


def _value(edit: int) -> str:
    lines = [LINE.format(i=i) for i in range(40)]
    lines[edit % 40] = f"edited {edit}: " + lines[edit % 40]
    return "".join(lines)


async def _history(client: AsyncMemoryClient, versions: int) -> tuple[str, list[datetime], str]:
    blocks = [pb.Block(label=label, value=_value(0), limit=10_000) for label in ("persona", "human", "notes")]
    agent = await client.create_agent(agent=pb.Agent(name="as-of bench"), blocks=blocks)
    moments = []
    for edit in range(1, versions):
        await client.update_block(
            block=pb.Block(value=_value(edit)), update_mask=["value"], agent_id=agent.id, label="human"
        )
        moments.append(datetime.now(UTC))
    receipt = (await client.get_system_prompt(agent_id=agent.id)).receipt.id
    return agent.id, moments, receipt


async def measure(versions: int, rounds: int, seed: int) -> dict[str, Any]:
    random.seed(seed)
    with tempfile.TemporaryDirectory() as folder:
        settings = MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{Path(folder) / 'memory.sqlite3'}",
            retrieval_address="127.0.0.1:9",
        )
        server = await start_memory_server(settings)
        try:
            async with AsyncMemoryClient(server.address, timeout=30) as client:
                agent_id, moments, receipt = await _history(client, versions)
                lanes: dict[str, dict[str, Any]] = {
                    "now": {},
                    "as_of_recent": {"as_of": moments[-1]},
                    "as_of_middle": {"as_of": moments[len(moments) // 2]},
                    "as_of_oldest": {"as_of": moments[0]},
                    "receipt": {"receipt_id": receipt},
                }
                times: dict[str, list[float]] = {lane: [] for lane in lanes}
                for _ in range(rounds):
                    order = list(lanes)
                    random.shuffle(order)
                    for lane in order:
                        start = time.perf_counter()
                        await client.render_memory(agent_id=agent_id, **lanes[lane])
                        times[lane].append(time.perf_counter() - start)
        finally:
            await server.stop(0)
    return _summary(times)


def _summary(times: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lane, values in times.items():
        cut = statistics.quantiles(values, n=10)
        out[lane] = {"p50_ms": round(statistics.median(values) * 1000, 3), "p90_ms": round(cut[8] * 1000, 3)}
        if lane != "now":
            ratios = [v / n for v, n in zip(values, times["now"], strict=True)]
            out[lane]["over_now_paired"] = round(statistics.median(ratios), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--output", type=Path, default=Path("bench/results/memory_time_as_of.json"))
    args = parser.parse_args()
    results = asyncio.run(measure(args.versions, args.rounds, args.seed))
    report = {
        "benchmark": "bench.memory_time.as_of_cost",
        "versions": args.versions,
        "rounds": args.rounds,
        "seed": args.seed,
        "results": results,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
