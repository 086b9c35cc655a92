"""A stream of 1-3-document upserts straight into RetrievalService beside the encoder (issue 32 item 6).

    python -m bench.search.upsert_stream --a /tmp/before --b . --rounds 3 --seconds 12 --writers 32

``--writers`` clients each send UpsertDocuments of 1, 2 or 3 LoCoMo turns (cycling) in a closed
loop; a call returns once its documents are durable and searchable, so throughput is documents
searchable per second. This is what reaches RetrievalService when several MemoryService replicas (or
outbox deliveries) index at once: concurrent small calls, whose fixed per-call cost (a Tantivy commit
per tenant, a journal fsync, an encoder run) group commit shares out. ``--a`` / ``--b`` are source
trees (a checkout or ``git archive`` of a commit): RetrievalService's child process runs with
``PYTHONPATH=<tree>/services/retrieval`` ahead of the editable install. Rounds alternate the order
(AB, BA, ...), each on a fresh data folder. After each variant's stream the encoder alone (this
process, the service's thread settings) embeds the texts the stream wrote, in batches of 256 (as
``bench.perf.ingest_e2e`` measures it), so each rate has its own encoder figure taken under the same
load. Reported per round and as medians: docs/s, the ratio to the encoder (target >= 0.8), call
latency p50/p99, RetrievalService's CPU per document; and B / A of each. ``--output`` writes JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.ingest_e2e import conversations, encoder_rate, process_cpu_seconds
from bench.perf.processes import ServerProcess
from bench.perf.serve import MODEL_CACHE, bench_precision
from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.settings import RetrievalSettings

WORK = Path(".cache/bench/work/upsert_stream")
SIZES = (1, 2, 3)
ENCODER_BATCH = 256
TARGET_RATIO = 0.8


async def stream(address: str, writers: int, seconds: float) -> dict[str, Any]:
    """The closed loop; returns docs/s, latencies and the texts written."""
    convs = conversations(writers * 700)[:writers]
    latencies: list[float] = []
    texts: list[str] = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        stop_at = time.perf_counter() + seconds

        async def writer(index: int) -> None:
            turns, position, call = convs[index], 0, 0
            while time.perf_counter() < stop_at and position < len(turns):
                batch = turns[position : position + SIZES[call % len(SIZES)]]
                documents = [
                    pb.Document(
                        id=f"w{index}-m{position + i}",
                        text=turn.content,
                        kind=pb.DOCUMENT_KIND_MESSAGE,
                        role="user",
                        scope=pb.Scope(tenant_id="default", agent_id=f"agent-{index}", conversation_id="c"),
                    )
                    for i, turn in enumerate(batch)
                ]
                sent = time.perf_counter()
                await stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=documents), timeout=120)
                latencies.append(time.perf_counter() - sent)
                texts.extend(turn.content for turn in batch)
                position += len(batch)
                call += 1

        started = time.perf_counter()
        await asyncio.gather(*(writer(i) for i in range(writers)))
        elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "docs": len(texts),
        "calls": len(latencies),
        "rate_per_s": round(len(texts) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
        "texts": texts,
    }


def one_variant(
    tree: Path, name: str, writers: int, seconds: float, model: OnnxSentenceEmbedder
) -> dict[str, Any]:
    work = WORK / name
    shutil.rmtree(work, ignore_errors=True)
    env = {"PYTHONPATH": str(tree.resolve() / "services" / "retrieval")}
    with ServerProcess(["retrieval", "--data-dir", str(work)], WORK / f"{name}.log", env=env) as server:
        cpu = process_cpu_seconds(server.pid)
        result = asyncio.run(stream(server.address, writers, seconds))
        cpu = process_cpu_seconds(server.pid) - cpu
    texts = result.pop("texts")
    result["cpu_ms_per_doc"] = round(1000 * cpu / max(len(texts), 1), 3)
    encoder = encoder_rate(model, texts, ENCODER_BATCH)
    result["encoder_per_s"] = encoder["texts_per_s"]
    result["vs_encoder"] = round(result["rate_per_s"] / encoder["texts_per_s"], 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.search.upsert_stream", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--a", type=Path, required=True)
    parser.add_argument("--b", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    settings = RetrievalSettings()
    model = OnnxSentenceEmbedder.load(
        MODEL_CACHE,
        precision=bench_precision(),
        threads=settings.embedder_threads,
        batch_size=settings.embedder_batch_size,
    )
    trees = {"A": args.a, "B": args.b}
    rounds: list[dict[str, Any]] = []
    ticks = cpu_ticks()
    for index in range(args.rounds):
        row: dict[str, Any] = {"load": os.getloadavg()[0]}
        for name in "AB" if index % 2 == 0 else "BA":
            row[name] = one_variant(trees[name], name, args.writers, args.seconds, model)
            print(f"round {index + 1} {name}: {row[name]} (load {os.getloadavg()[0]:.1f})", flush=True)
        rounds.append(row)

    def summary(pick: Callable[[dict[str, Any]], float]) -> dict[str, float]:
        return {
            "A": round(statistics.median(pick(r["A"]) for r in rounds), 3),
            "B": round(statistics.median(pick(r["B"]) for r in rounds), 3),
            "B/A": round(statistics.median(pick(r["B"]) / pick(r["A"]) for r in rounds), 3),
        }

    keys = ("rate_per_s", "vs_encoder", "encoder_per_s", "p50_ms", "p99_ms", "cpu_ms_per_doc", "calls")
    result: dict[str, Any] = {key: summary(_field(key)) for key in keys}
    result["target_vs_encoder"] = TARGET_RATIO
    result["meta"] = {
        "command": f"python -m bench.search.upsert_stream --a {args.a} --b {args.b} --rounds {args.rounds} "
        f"--seconds {args.seconds:g} --writers {args.writers}",
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "loads": [round(r["load"], 1) for r in rounds],
        "load_after": os.getloadavg(),
        "steal_percent": steal_percent(ticks, cpu_ticks()),
    }
    print(json.dumps(result, indent=1), flush=True)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({"summary": result, "rounds": rounds}, indent=1) + "\n")


def _field(key: str) -> Callable[[dict[str, Any]], float]:
    return lambda row: float(row[key])


if __name__ == "__main__":
    main()
