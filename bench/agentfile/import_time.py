"""How long ImportAgentFile takes: the largest shared Letta file and a generated 10,000-message agent.

Both services run in this process on free ports (SQLite store, the real ONNX embedder, Qdrant's
in-process engine and Tantivy in a temporary folder). For each file:

- ``import_s``: an ImportAgentFile call (parse, check, one transaction storing agents, blocks,
  messages, outbox jobs and prompts), ``--runs`` times, median and each run;
- ``searchable_s``: from the same call's start until RetrievalService holds every message it
  imported (embedded and indexed; polled through ``Stats``), before the next run starts;
- ``export_s``: ExportAgentFile with messages of the first imported agent.

The generated agent (``generated_file``) has two blocks and ``--messages`` messages in Letta's message
form (user, then an assistant ``send_message`` tool call, then its tool return; ~120-character texts),
so it exercises tool calls and the kept-verbatim residues as the real files do.

    .venv/bin/python -m bench.agentfile.import_time          # writes bench/results/agentfile_import.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from bench.agentfile.generated import generated_file
from bench.servers import ServicePair
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "tests" / "data" / "agentfile"
RESULTS = ROOT / "bench" / "results" / "agentfile_import.json"
ANY_SIZE = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
"""An export of 10,000 messages is larger than gRPC's default 4 MiB receive limit."""


async def measure(name: str, data: bytes, stubs: Stubs, runs: int) -> dict[str, Any]:
    """``runs`` imports of ``data``, each timed to its answer and then until RetrievalService holds
    every message it imported (polled through Stats; the queue is drained before the next run)."""
    calls, searchable = [], []
    first_agent, messages = "", 0
    for _ in range(runs):
        before = await _indexed(stubs)
        started = time.perf_counter()
        reply = await stubs.memory.ImportAgentFile(api.ImportAgentFileRequest(agent_file=data), timeout=600)
        calls.append(time.perf_counter() - started)
        first_agent, messages = first_agent or reply.agents[0].id, reply.report.messages_imported
        while await _indexed(stubs) < before + messages:  # noqa: ASYNC110 - polling another process
            await asyncio.sleep(0.05)
        searchable.append(time.perf_counter() - started)
    started = time.perf_counter()
    exported = await stubs.memory.ExportAgentFile(
        api.ExportAgentFileRequest(agent_id=first_agent, with_messages=True), timeout=600
    )
    export = time.perf_counter() - started
    return {
        "file": name,
        "bytes": len(data),
        "messages": messages,
        "import_s_median": round(statistics.median(calls), 4),
        "import_s_runs": [round(t, 4) for t in calls],
        "searchable_s_median": round(statistics.median(searchable), 3),
        "searchable_s_runs": [round(t, 3) for t in searchable],
        "export_s": round(export, 4),
        "export_bytes": len(exported.agent_file),
    }


@dataclass(frozen=True)
class Stubs:
    memory: Any
    retrieval: Any


async def _indexed(stubs: Stubs) -> int:
    stats = await stubs.retrieval.Stats(rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id="default")))
    return int(stats.message_count)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    largest = max(SHARED.glob("*.af"), key=lambda p: p.stat().st_size)
    with tempfile.TemporaryDirectory(prefix="agentfile-bench-") as tmp:
        folder = Path(tmp)
        embedder = OnnxSentenceEmbedder.load(folder / "models", threads=2, batch_size=32)
        pair = ServicePair(folder, embedder=embedder, quick_retries=False)
        await pair.start()
        try:
            async with (
                grpc.aio.insecure_channel(pair.memory_address, options=ANY_SIZE) as channel,
                grpc.aio.insecure_channel(pair.retrieval_address) as retrieval_channel,
            ):
                stubs = Stubs(
                    memory_service_pb2_grpc.MemoryServiceStub(channel),
                    retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel),
                )
                generated = generated_file(args.messages)
                results = [
                    await measure(largest.name, largest.read_bytes(), stubs, args.runs),
                    await measure(f"generated ({args.messages} messages)", generated, stubs, args.runs),
                ]
        finally:
            await pair.stop()
    return {"command": "python -m bench.agentfile.import_time", "cpus": os.cpu_count(), "results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = asyncio.run(run(args))
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
