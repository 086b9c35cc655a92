"""What a merged write costs next to a plain one, measured side by side through a real MemoryService.

    python -m bench.memory_time.merge_cost --rounds 200 --output bench/results/memory_time_merge.json

One MemoryService (SQLite file in a temp folder, RetrievalService not needed) serves three blocks per
size (``--lines`` lines of ~50 characters each). Each round runs, in an order shuffled afresh (seeded):

- ``plain``: UpdateBlock of the last line, conditional on the etag just read (``etag``);
- ``merged``: another writer first changes the first line, then UpdateBlock of the last line based on
  the version before it (``base_etag``), which the server merges (history lookup + merge3);
- ``merged_validate``: the same merge with ``validate_only`` (a read transaction, nothing written).

Only the measured call is timed (the other writer's write and the reads are not). Reported per lane
and size: p50 and p90 in milliseconds, and the paired ratio merged/plain (median over rounds of
the two lanes' times in that round, so load that comes and goes hits both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from strata.client import AsyncMemoryClient
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings

LANES = ("plain", "merged", "merged_validate")


def _value(lines: int, round_no: int) -> list[str]:
    return [f"line {i:05d}: a fact the agent keeps about the user, r{round_no}\n" for i in range(lines)]


async def _round(client: AsyncMemoryClient, blocks: dict[str, str], lines: int, n: int) -> dict[str, float]:
    """One call per lane, in a shuffled order; each lane's time in seconds."""
    order = list(LANES)
    random.shuffle(order)
    taken: dict[str, float] = {}
    for lane in order:
        block_id = blocks[lane]
        read = await client.get_block(block_id=block_id)
        text = read.value.splitlines(keepends=True)
        mine = [*text[:-1], f"last line, edited in round {n}\n"]
        condition: dict[str, Any] = {"etag": read.etag}
        if lane != "plain":
            theirs = [f"first line, edited by another writer in round {n}\n", *text[1:]]
            await client.update_block(
                block=pb.Block(value="".join(theirs)), update_mask=["value"], block_id=block_id
            )
            condition = {"base_etag": read.etag, "validate_only": lane == "merged_validate"}
        start = time.perf_counter()
        await client.update_block(
            block=pb.Block(value="".join(mine)), update_mask=["value"], block_id=block_id, **condition
        )
        taken[lane] = time.perf_counter() - start
    return taken


async def measure(sizes: list[int], rounds: int, seed: int) -> dict[str, Any]:
    random.seed(seed)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        settings = MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{Path(folder) / 'memory.sqlite3'}",
            retrieval_address="127.0.0.1:9",
        )
        server = await start_memory_server(settings)
        try:
            async with AsyncMemoryClient(server.address, timeout=30) as client:
                for lines in sizes:
                    value = "".join(_value(lines, 0))
                    blocks = {}
                    for lane in LANES:
                        created = await client.create_block(
                            block=pb.Block(label=f"{lane}-{lines}", value=value, limit=10 * len(value))
                        )
                        blocks[lane] = created.id
                    times: dict[str, list[float]] = {lane: [] for lane in LANES}
                    for n in range(rounds):
                        for lane, seconds in (await _round(client, blocks, lines, n)).items():
                            times[lane].append(seconds)
                    results[f"{lines}_lines"] = _summary(times, chars=len(value))
        finally:
            await server.stop(0)
    return results


def _summary(times: dict[str, list[float]], *, chars: int) -> dict[str, Any]:
    def quantiles(values: list[float]) -> dict[str, float]:
        cut = statistics.quantiles(values, n=10)
        return {"p50_ms": round(statistics.median(values) * 1000, 3), "p90_ms": round(cut[8] * 1000, 3)}

    ratios = [m / p for m, p in zip(times["merged"], times["plain"], strict=True)]
    return {
        "chars": chars,
        "calls_per_lane": len(times["plain"]),
        **{lane: quantiles(values) for lane, values in times.items()},
        "merged_over_plain_paired": round(statistics.median(ratios), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[40, 400])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--output", type=Path, default=Path("bench/results/memory_time_merge.json"))
    args = parser.parse_args()
    results = asyncio.run(measure(args.lines, args.rounds, args.seed))
    report = {
        "benchmark": "bench.memory_time.merge_cost",
        "rounds": args.rounds,
        "seed": args.seed,
        "results": results,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
