"""What one CreateBlock on an agent costs as the agent's other blocks grow (issue 26 item 4).

    python -m bench.tenants.create_block_cost --blocks 3700 --sample-every 100 \\
        --output bench/results/tenants_create_block_cost.json

One MemoryService (SQLite file in a temp folder, default settings but the ``blocks_per_agent`` quota,
raised to let the agent grow past its default of 1,000) holds one agent with the ``on_edit`` recompile
policy (the default). Blocks of ~200 characters are created on it one by one with
``CreateBlock(agent_id=…)``; every call is timed. Reported per window of ``--sample-every`` calls: how
many blocks the agent held at its start and the window's p50 and p90 in milliseconds, and the ratio of
the last window's p50 to the first's (1.0 means the cost does not grow). Then the prompt is read twice
(``GetSystemPrompt``): the first read compiles what the creates deferred, the second reads it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from strata.client import AsyncMemoryClient
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings

RESULTS = Path("bench/results/tenants_create_block_cost.json")
VALUE = "a fact the agent keeps about its user, written once and kept for later recall. " * 2


async def measure(blocks: int, sample_every: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        settings = MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{Path(folder) / 'memory.sqlite3'}",
            retrieval_address="127.0.0.1:9",
            quotas={"blocks_per_agent": blocks + 100},  # past the default blocks a new agent holds
        )
        server = await start_memory_server(settings)
        try:
            async with AsyncMemoryClient(server.address, timeout=60) as client:
                agent = await client.create_agent(agent=pb.Agent(name="many blocks"))
                times: list[float] = []
                for i in range(blocks):
                    block = pb.Block(label=f"fact-{i:05d}", value=VALUE, limit=1_000)
                    start = time.perf_counter()
                    await client.create_block(block=block, agent_id=agent.id)
                    times.append(time.perf_counter() - start)
                reads = []
                for _ in range(2):
                    start = time.perf_counter()
                    await client.get_system_prompt(agent_id=agent.id)
                    reads.append(round((time.perf_counter() - start) * 1000, 3))
        finally:
            await server.stop(0)
    return {
        "windows": _windows(times, sample_every),
        "prompt_read_ms": {"first": reads[0], "second": reads[1]},
    }


def _windows(times: list[float], size: int) -> list[dict[str, Any]]:
    out = []
    for start in range(0, len(times), size):
        window = times[start : start + size]
        if len(window) < 2:
            continue
        cut = statistics.quantiles(window, n=10)
        out.append(
            {
                "blocks_before": start,
                "p50_ms": round(statistics.median(window) * 1000, 3),
                "p90_ms": round(cut[8] * 1000, 3),
            }
        )
    return out


def run(blocks: int, sample_every: int, label: str = "make bench") -> dict[str, Any]:
    """Measure, and return the report (what ``main`` writes)."""
    found = asyncio.run(measure(blocks, sample_every))
    windows = found["windows"]
    return {
        "benchmark": "bench.tenants.create_block_cost",
        "label": label,
        "blocks": blocks,
        "sample_every": sample_every,
        "last_over_first_p50": round(windows[-1]["p50_ms"] / windows[0]["p50_ms"], 2),
        "prompt_read_ms": found["prompt_read_ms"],
        "windows": windows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=3700)
    parser.add_argument("--sample-every", type=int, default=100)
    parser.add_argument("--label", default="", help="a name for this run (e.g. before, after)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = run(args.blocks, args.sample_every, args.label)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "windows"}, indent=2))
    print(report["windows"][0], report["windows"][-1])


if __name__ == "__main__":
    main()
