"""RetrievalService: ingest throughput, search latency per mode as the corpus grows, footprint.

One real RetrievalService (ONNX all-MiniLM-L6-v2, Qdrant edge shard, Tantivy) is fed chat-length
documents over gRPC (``UpsertDocuments``, 64 per call, 2 calls in flight, embedding included) up to
each corpus size. At each size the service is stopped and the engine is reopened in this process
with timed parts: that open builds the HNSW graph once 10k vectors are unindexed (as the service's
start does; the build time is reported), and times every stage of a search. Then the service is
started again on the same data and searched over gRPC per mode at concurrency 1 (latency) and,
hybrid only, at 8 (throughput). All documents belong to one agent, and every search filters by
tenant and agent: the worst case of one agent owning the whole corpus.

"Embedding excluded" ingest: the vectors the service computed for the first documents are read back
from its shard and handed to a second service as a text -> vector table, which then ingests the same
texts into an empty data directory without running the model.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import numpy as np
import qdrant_edge as qe

from bench.perf import breakdown
from bench.perf.corpus import chat_documents, queries
from bench.perf.host import cpu_ticks, steal_percent
from bench.perf.processes import ServerProcess, disk_mib, rss_mib
from bench.perf.scenarios import HEALTH, Call, Durations, measure
from bench.perf.serve import MODEL_CACHE, bench_precision, save_precomputed
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.model import DocumentFilter, SearchMode, document_key
from strata_retrieval.vectors.payload import VECTOR_NAME

SERVICE = "strata.retrieval.v1.RetrievalService"
TENANT, AGENT = "bench", "agent-bench"
BATCH = 64
INGEST_CONCURRENCY = 2
MODES = {"vector": "SEARCH_MODE_VECTOR", "fts": "SEARCH_MODE_FTS", "hybrid": "SEARCH_MODE_HYBRID"}
BREAKDOWN_QUERIES = 200
EMBEDDER_SAMPLE = 2_000


def _server(data_dir: Path, log: Path, precomputed: Path | None = None) -> ServerProcess:
    args = ["retrieval", "--data-dir", str(data_dir)]
    return ServerProcess(args + (["--precomputed", str(precomputed)] if precomputed else []), log)


def ingest(address: str, corpus_file: Path, start: int, count: int, label: str) -> dict[str, Any]:
    """Upsert corpus lines ``[start, start + count)`` over gRPC; documents per second."""
    params = {"corpus_file": str(corpus_file), "batch": BATCH, "start": start, "end": start + count}
    call = Call(f"{SERVICE}/UpsertDocuments", factory="upsert_batches", params=params | _scope())
    began = time.monotonic()
    report = measure(
        address,
        call,
        INGEST_CONCURRENCY,
        3600.0,
        warmup=0.0,
        requests=-(-count // BATCH),
        processes=1,
        timeout=120.0,
    )
    seconds = time.monotonic() - began
    documents = count if report["ok"] == report["count"] else report["ok"] * BATCH
    print(f"  ingest {label}: {documents} documents in {seconds:.1f} s", flush=True)
    return {
        "documents": documents,
        "seconds": round(report["seconds"], 3),
        "docs_per_s": round(documents / report["seconds"], 1),
        "batch": BATCH,
        "calls_in_flight": INGEST_CONCURRENCY,
        "call_latency_ms": report["latency_ms"],
        "status_codes": report["status_codes"],
        "cpu_steal_percent": report["cpu_steal_percent"],
    }


def _scope() -> dict[str, str]:
    return {"tenant_id": TENANT, "agent_id": AGENT}


def _breakdown(data_dir: Path, model: OnnxSentenceEmbedder, asked: list[str]) -> dict[str, Any]:
    watch = breakdown.Stopwatch()
    began = time.monotonic()
    engine = breakdown.open_timed_engine(data_dir, model, watch)
    opened = time.monotonic() - began
    began = time.monotonic()
    built = engine.maintain()
    result: dict[str, Any] = {
        "open_s": round(opened, 2),
        "hnsw_built": built,
        "hnsw_build_s": round(time.monotonic() - began, 2) if built else 0.0,
    }
    flt = DocumentFilter(tenant_id=TENANT, agent_ids=(AGENT,))
    try:
        for name in MODES:
            ticks = cpu_ticks()
            result[name] = breakdown.measure_search(engine, watch, asked, SearchMode(name), flt)
            result[name]["cpu_steal_percent"] = steal_percent(ticks, cpu_ticks())
            shares = ", ".join(f"{k} {v:.0%}" for k, v in result[name]["share"].items())
            print(f"    engine {name:<6} p50 {result[name]['engine_p50_ms']:7.3f} ms  ({shares})", flush=True)
    finally:
        engine.close()
    return result


def _searches(address: str, asked: list[str], times: Durations, pid: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, mode in MODES.items():
        params = {"queries": asked, "mode": mode} | _scope()
        call = Call(f"{SERVICE}/Search", factory="search", params=params)
        found[f"{name}_c1"] = measure(address, call, 1, times.latency, warmup=times.warmup, server_pids=[pid])
    params = {"queries": asked, "mode": MODES["hybrid"]} | _scope()
    call = Call(f"{SERVICE}/Search", factory="search", params=params)
    found["hybrid_c8"] = measure(address, call, 8, times.throughput, warmup=times.warmup, server_pids=[pid])
    found["floor_c1"] = measure(address, Call(HEALTH), 1, times.latency, warmup=times.warmup)
    return found


def _predicted_seconds(step: dict[str, Any] | None, documents: int) -> float:
    """A rough time for ingesting ``documents`` more and measuring (HNSW build ~1.2 s per 1k vectors)."""
    rate = step["docs_per_s"] if step else 500.0
    return documents / rate + documents * 1.2e-3 + 90.0


def run(
    work: Path,
    sizes: list[int],
    times: Durations,
    *,
    deadline: float,
    texts: list[str] | None = None,
    precomputed: Path | None = None,
) -> dict[str, Any]:
    """Grow one corpus through ``sizes``, measuring at each, while the deadline allows.

    Without ``precomputed`` the service embeds every document; afterwards the embedding-excluded
    ingest is measured too. With it, the service looks document vectors up (``bench-large``).
    """
    print(f"RetrievalService, corpus sizes {sizes}", flush=True)
    corpus_file = work / "corpus.txt"
    texts = texts if texts is not None else chat_documents(max(sizes))
    corpus_file.write_text("\n".join(texts) + "\n", encoding="utf-8")
    asked = queries(BREAKDOWN_QUERIES)
    model = OnnxSentenceEmbedder.load(MODEL_CACHE, precision=bench_precision(), threads=2)
    data_dir = work / "retrieval"
    results: dict[str, Any] = {
        "sizes": {},
        "skipped": {},
        "batch": BATCH,
        "precomputed": bool(precomputed),
        "embedder": model.name,
    }
    server = _server(data_dir, work / "retrieval.log", precomputed).start()
    results["empty"] = {"start_s": round(server.start_seconds, 2), **rss_mib(server.pid)}
    indexed, step = 0, None
    try:
        for size in sizes:
            left, needed = deadline - time.monotonic(), _predicted_seconds(step, size - indexed)
            if needed > left:
                results["skipped"][str(size)] = f"predicted {needed:.0f} s with {left:.0f} s left"
                print(f"  skipping {size}: {results['skipped'][str(size)]}", flush=True)
                break
            step = ingest(server.address, corpus_file, indexed, size - indexed, f"{indexed}->{size}")
            indexed = size
            server.stop()
            print(f"  {size} documents: engine in-process", flush=True)
            parts = _breakdown(data_dir, model, asked)
            server = _server(data_dir, work / "retrieval.log", precomputed).start()
            print(f"  {size} documents: gRPC", flush=True)
            grpc_results = _searches(server.address, asked, times, server.pid)
            results["sizes"][str(size)] = {
                "ingest": step,
                "engine": parts,
                "grpc": grpc_results,
                "footprint": {**rss_mib(server.pid), **disk_mib(data_dir)},
            }
    finally:
        server.stop()
    if precomputed is None and indexed:
        results["embedder_alone"] = _embedder_rate(model, corpus_file)
        excluded = min(indexed, 20_000)
        results["ingest_without_embedding"] = _ingest_precomputed(work, data_dir, corpus_file, excluded)
    return results


def _embedder_rate(model: OnnxSentenceEmbedder, corpus_file: Path) -> dict[str, Any]:
    texts = corpus_file.read_text(encoding="utf-8").splitlines()
    texts = texts[-min(EMBEDDER_SAMPLE, len(texts) // 4) :]
    model.embed_documents(texts[:64])
    began, ticks = time.perf_counter(), cpu_ticks()
    for first in range(0, len(texts), BATCH):
        model.embed_documents(texts[first : first + BATCH])
    seconds = time.perf_counter() - began
    print(f"  embedder alone: {len(texts) / seconds:.0f} docs/s", flush=True)
    return {
        "documents": len(texts),
        "docs_per_s": round(len(texts) / seconds, 1),
        "threads": 2,
        "cpu_steal_percent": steal_percent(ticks, cpu_ticks()),
    }


def _ingest_precomputed(work: Path, data_dir: Path, corpus_file: Path, count: int) -> dict[str, Any]:
    """Ingest ``count`` documents into an empty service whose embedder looks their vectors up."""
    texts = corpus_file.read_text(encoding="utf-8").splitlines()[:count]
    shard = qe.EdgeShard.load(str(data_dir / "vectors"))
    try:
        keys: list[qe.PointId] = [document_key(TENANT, f"doc-{i}") for i in range(count)]
        vectors = np.zeros((count, 384), dtype=np.float32)
        for first in range(0, count, 1000):
            records = shard.retrieve(keys[first : first + 1000], with_payload=False, with_vector=True)
            rows = {str(r.id): cast("dict[str, list[float]]", r.vector)[VECTOR_NAME] for r in records}
            for i in range(first, min(first + 1000, count)):
                vectors[i] = rows[str(keys[i])]
    finally:
        shard.close()
    table = save_precomputed(work / "precomputed", texts, vectors)
    with _server(work / "retrieval-precomputed", work / "retrieval-precomputed.log", table) as server:
        step = ingest(server.address, corpus_file, 0, count, "precomputed vectors")
    step["how"] = "vectors the service computed, read back from its shard and looked up by text"
    return step
