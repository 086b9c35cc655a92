"""SciFact (BEIR test split) through RetrievalService: quality per mode and engine, ingest rate, latency.

Run: ``make bench-quality`` (``python -m bench.scifact.quality [--quick] [--engine embedded|server|both]``).
Both engines run by default and are reported side by side (JSON, and a markdown table in
``bench/results/scifact_quality.md``): ``embedded`` (Qdrant's engine in-process + Tantivy BM25) and
``server`` (both legs in one Qdrant collection, the text leg as BM25 sparse vectors with the IDF
modifier; through qdrant-client's local mode here, as no Qdrant server can be installed). The server
engine's collection is rebuilt once after ingest (a new generation behind its alias), which measures
its mean document length for BM25's ``avg_len`` as the service does. Steps, each bounded, per engine:

1. Ingest the 5,183 abstracts (title + text) through the real engine in batches of 64, timed
   (abstracts/s, embedding-bound), then 2,000 chat-length messages cut from the same abstracts
   into another tenant (messages/s). Texts are embedded once per run: the second engine reuses the
   first one's vectors, so its ingest rate excludes the embedder.
2. Run the 300 claims with top_k = 100: each leg's candidates once per claim (as a hybrid search
   runs them; one request for the server engine), then nDCG@10 and Recall@100 of the vector leg, the
   text leg, the hybrid searches served by default (fused as RetrievalService's settings say: a
   request with no knobs, ``hybrid``; MemoryService's archival and recall searches), and RRF
   (k = 60) under a few leg weightings and DBSF and min-max rows (how the defaults were chosen).
3. Embedded engine only: start the real gRPC server on the same index and time sequential Search
   calls per mode (top_k = 10, query embedding included) next to a health-check RPC, the transport
   floor. The server engine's latency is not measured: local mode searches by brute force in Python
   (about 1 s per sparse query at 7k points here), which says nothing about a Qdrant server.

``--text-legs`` compares only the two text legs, without the embedder (minutes, not tens of them):
Tantivy BM25 against the server engine's BM25 sparse vectors on the same documents, with ``avg_len``
as the service sets it (the collection's measured mean, after a rebuild) and at Qdrant's default 256
(``scifact_text_legs.json``; ``--bm25-avg-len N`` adds that value too).

Results are printed and written to ``bench/results/scifact_quality.json``. ``--latency-only``
repeats step 3 on the index the last full run left (this machine is shared; re-time when it is
quiet). ``--quick`` indexes a 1,000-abstract sample (all qrels documents plus filler) for a fast
smoke run; its figures are not comparable with published ones (``scifact_quality_quick.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.scifact import engines as scifact_engines
from bench.scifact import fusion as scifact_fusion
from bench.scifact.data import (
    EVAL_TOP_K,
    RESULTS,
    TENANT,
    Report,
    as_documents,
    chat_messages,
    load_scifact,
    ndcg_at_10,
)
from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.protocol import Embedder, Vectors
from strata_retrieval.engine import FTS, VECTOR, RetrievalEngine
from strata_retrieval.fusion import fuse, rrf
from strata_retrieval.main import RetrievalApp, load_embedder, open_engine
from strata_retrieval.model import (
    DEFAULT_RRF_K,
    Document,
    DocumentFilter,
    ScoredKey,
    SearchMode,
    SearchQuery,
    default_depth,
    document_key,
)
from strata_retrieval.settings import RetrievalSettings, VectorBackend
from strata_retrieval.vectors.qdrant_joint import (
    QdrantJointIndex,
)

BATCH = 64
LATENCY_CALLS = 300
MIN_MAX_DEPTHS = (50, 100)
SERVED = RetrievalSettings()
"""RetrievalService's default settings: the fusion and leg weights a search gets when it names none."""
WEIGHTINGS = [(1.0, 1.0), (1.0, 0.5), (0.5, 1.0), (1.0, 0.75), (0.75, 1.0)]
ENGINES: dict[str, dict[str, Any]] = {
    "embedded": {},
    # an enum member, not "server": model_copy(update=...) does not validate, and open_engine compares
    # by identity (a plain string silently selected the dense-only qdrant backend beside Tantivy)
    "server": {
        "vector_backend": VectorBackend.SERVER,
        "qdrant_url": ":memory:",
        "qdrant_collection": "scifact",
    },
}


class EmbeddedOnce:
    """The embedder, remembering every text's vector so the second engine does not embed again."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._documents: dict[str, Vectors] = {}
        self._queries: dict[str, Vectors] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        missing = [text for text in dict.fromkeys(texts) if text not in self._documents]
        if missing:
            self._documents.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return np.stack([self._documents[text] for text in texts])

    def embed_query(self, text: str) -> Vectors:
        if text not in self._queries:
            self._queries[text] = self.inner.embed_query(text)
        return self._queries[text]


MODE_PB = {
    SearchMode.VECTOR: pb.SEARCH_MODE_VECTOR,
    SearchMode.FTS: pb.SEARCH_MODE_FTS,
    SearchMode.HYBRID: pb.SEARCH_MODE_HYBRID,
}


def ingest(engine: RetrievalEngine, documents: list[Document]) -> dict[str, float]:
    started = time.perf_counter()
    for start in range(0, len(documents), BATCH):
        engine.upsert(documents[start : start + BATCH])
    seconds = time.perf_counter() - started
    return {
        "documents": len(documents),
        "seconds": round(seconds, 2),
        "per_second": round(len(documents) / seconds, 1),
    }


def evaluate(
    engine: RetrievalEngine, queries: dict[str, str], qrels: dict[str, set[str]], ids: dict[str, str]
) -> dict[str, dict[str, float]]:
    """nDCG@10 and Recall@100 of each leg alone and of each weighting of their RRF, from one set of
    candidates per claim (``ids`` maps storage keys to document ids)."""
    scores: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for query_id, text in queries.items():
        query = SearchQuery(
            text=text, mode=SearchMode.HYBRID, filter=DocumentFilter(tenant_id=TENANT), top_k=EVAL_TOP_K
        )
        candidates = engine.candidates(query)
        legs = {name: [c.key for c in found] for name, found in candidates.items()}
        rankings = {str(SearchMode.VECTOR): legs[VECTOR], str(SearchMode.FTS): legs[FTS]}
        for vector_w, fts_w in WEIGHTINGS:
            fused = rrf(legs, k=query.rrf_k, weights={VECTOR: vector_w, FTS: fts_w})
            default = (vector_w, fts_w) == WEIGHTINGS[0]
            label = (
                "hybrid rrf (k 60, equal weights)" if default else f"hybrid rrf vector={vector_w} fts={fts_w}"
            )
            rankings[label] = [entry.key for entry in fused]
        for label, fusion in served_fusions().items():
            depth = int(fusion["depth"])
            cut = {name: [(c.key, c.score) for c in found[:depth]] for name, found in candidates.items()}
            weights = {VECTOR: fusion["vector_weight"], FTS: fusion["fts_weight"]}
            ranking, _ = fuse(cut, SERVED.fusion_setting, rrf_k=fusion["rrf_k"], weights=weights)
            rankings[label] = sorted(ranking.keys, key=lambda key: (-ranking.scores[key], ids[key]))
        for depth in MIN_MAX_DEPTHS:
            label = f"hybrid min-max scores, equal weights, depth {depth} (measured, not served)"
            rankings[label] = min_max_fusion(candidates, depth, ids)
        rankings.update(scifact_fusion.dbsf_rankings(candidates, ids))
        for label, keys in rankings.items():
            ranked = [ids[key] for key in keys[:EVAL_TOP_K]]
            relevant = qrels[query_id]
            scores[label].append((ndcg_at_10(ranked, relevant), len(set(ranked) & relevant) / len(relevant)))
    return {
        label: {
            "ndcg@10": round(statistics.fmean(s[0] for s in pairs), 4),
            "recall@100": round(statistics.fmean(s[1] for s in pairs), 4),
        }
        for label, pairs in scores.items()
    }


def min_max_fusion(candidates: dict[str, list[ScoredKey]], depth: int, ids: dict[str, str]) -> list[str]:
    """Keys by the mean of each leg's score scaled to [0, 1] over its top ``depth`` (0 where a leg
    missed the key): the convex combination of Bruch et al. (ACM TOIS 2023), at equal weights."""
    fused: dict[str, float] = defaultdict(float)
    for found in candidates.values():
        top = found[:depth]
        if not top:
            continue
        high, low = top[0].score, top[-1].score
        for candidate in top:
            fused[candidate.key] += 0.5 * ((candidate.score - low) / (high - low) if high > low else 1.0)
    return sorted(fused, key=lambda key: (-fused[key], ids[key]))


def served_fusions() -> dict[str, dict[str, float]]:
    """The hybrid searches served by default, fused as RetrievalService's settings say (``SERVED``),
    each leg cut to the depth asked for (a search for the top 10 with no depth set: RetrievalService's
    default_depth(10)): a Search request with no knobs (the service's defaults; ``hybrid``, the
    headline), MemoryService's archival search, and its recall search (checked here on SciFact)."""
    s = MemorySettings()
    return {
        str(SearchMode.HYBRID): {
            "vector_weight": SERVED.vector_weight,
            "fts_weight": SERVED.fts_weight,
            "rrf_k": DEFAULT_RRF_K,
            "depth": default_depth(10),
        },
        "hybrid, archival defaults (served)": {
            "vector_weight": s.archival_vector_weight,
            "fts_weight": s.archival_fts_weight,
            "rrf_k": s.rrf_k,
            "depth": s.archival_candidate_depth or default_depth(10),
        },
        "hybrid, recall defaults (served)": {
            "vector_weight": s.recall_vector_weight,
            "fts_weight": s.recall_fts_weight,
            "rrf_k": s.recall_rrf_k,
            "depth": s.recall_candidate_depth or default_depth(10),
        },
    }


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
    }


async def grpc_latency(settings: RetrievalSettings, queries: list[str]) -> dict[str, dict[str, float]]:
    app = RetrievalApp(settings.model_copy(update={"address": "127.0.0.1:0"}))
    await app.start()
    try:
        async with grpc.aio.insecure_channel(app.address) as channel:
            health, stub = health_pb2_grpc.HealthStub(channel), pb_grpc.RetrievalServiceStub(channel)
            results = {
                "health_check_floor": await _timed(
                    lambda _: health.Check(health_pb2.HealthCheckRequest()), queries
                )
            }
            for mode, number in MODE_PB.items():
                request = lambda text, number=number: stub.Search(  # noqa: E731
                    pb.SearchRequest(
                        query=text, mode=number, top_k=10, filter=pb.DocumentFilter(tenant_id=TENANT)
                    )
                )
                results[f"search_{mode}"] = await _timed(request, queries)
        return results
    finally:
        await app.stop()


async def _timed(call: Any, queries: list[str]) -> dict[str, float]:
    for text in queries[:20]:  # warm-up
        await call(text)
    samples = []
    for i in range(LATENCY_CALLS):
        started = time.perf_counter()
        await call(queries[i % len(queries)])
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def run(quick: bool, report: Report, engines: list[str]) -> None:
    corpus, queries, qrels = load_scifact(quick)
    data_dir = Path(".data/bench/scifact-quick" if quick else ".data/bench/scifact")
    shutil.rmtree(data_dir, ignore_errors=True)
    base = RetrievalSettings().model_copy(update={"data_dir": data_dir, "log_json": False})
    embedder = EmbeddedOnce(load_embedder(base))
    report.record(
        "setup", {"corpus_documents": len(corpus), "queries": len(queries), "embedder": embedder.name}
    )
    documents, messages = as_documents(corpus), chat_messages(corpus, 2000)
    ids = {document_key(d.scope.tenant_id, d.id): d.id for d in documents}
    results: dict[str, dict[str, Any]] = {}
    for name in engines:
        settings = base.model_copy(update=ENGINES[name])
        engine = open_engine(settings, embedder)
        assert (name == "server") == isinstance(engine._vectors, QdrantJointIndex)  # the engine named
        results[name] = {"ingest_abstracts": ingest(engine, documents)}
        results[name]["ingest_messages"] = ingest(engine, messages)
        report.record("engines", results)
        if name == "server":
            started = time.perf_counter()
            generation = engine.rebuild()  # measures avg_len; dense vectors copied, not re-embedded
            results[name]["rebuild"] = {
                "generation": generation,
                "seconds": round(time.perf_counter() - started, 1),
                "bm25_avg_len": round(_server_index(engine).bm25_params.avg_len or 0.0, 2),
            }
            report.record("engines", results)
        started = time.perf_counter()
        results[name]["quality"] = evaluate(engine, queries, qrels, ids)
        results[name]["evaluation_seconds"] = round(time.perf_counter() - started, 1)
        report.record("engines", results)
        engine.close()
        if name == "embedded":
            report.record("grpc_latency", asyncio.run(grpc_latency(settings, list(queries.values()))))
    labels = list(next(iter(results.values()))["quality"])
    report.record(
        "side_by_side_ndcg@10",
        {label: {name: results[name]["quality"][label]["ndcg@10"] for name in results} for label in labels},
    )
    if {"embedded", "server"} <= set(results):
        report.record("verdict_text_leg_parity", scifact_engines.parity(results))
    report.out.with_suffix(".md").write_text(
        scifact_engines.side_by_side_markdown(report.data, results, labels)
    )


def _server_index(engine: RetrievalEngine) -> QdrantJointIndex:
    index = engine._vectors  # the benchmark reports the avg_len the rebuild pinned
    assert isinstance(index, QdrantJointIndex)
    return index


def remeasure_latency(out: Path) -> None:
    """Re-time the gRPC phase against the index a previous full run left, updating its JSON."""
    report = Report(out, json.loads(out.read_text()))
    _, queries, _ = load_scifact(quick=False)
    settings = RetrievalSettings().model_copy(
        update={"data_dir": Path(".data/bench/scifact"), "log_json": False}
    )
    report.record("grpc_latency_remeasured_at", datetime.now(UTC).isoformat(timespec="seconds"))
    report.record("grpc_latency", asyncio.run(grpc_latency(settings, list(queries.values()))))


def remeasure_ingest(out: Path, sample: int) -> None:
    """Re-time ingest on the first ``sample`` abstracts and 2,000 messages in a fresh index."""
    report = Report(out, json.loads(out.read_text()))
    corpus, _, _ = load_scifact(quick=False)
    data_dir = Path(".data/bench/scifact-ingest")
    shutil.rmtree(data_dir, ignore_errors=True)
    settings = RetrievalSettings().model_copy(update={"data_dir": data_dir, "log_json": False})
    engine = open_engine(settings, load_embedder(settings))
    measured = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_before": os.getloadavg(),
        "abstracts": ingest(engine, as_documents(corpus[:sample])),
        "messages": ingest(engine, chat_messages(corpus, 2000)),
    }
    engine.close()
    report.record("ingest_remeasured_on_a_sample", measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000-abstract sample, for a smoke run")
    parser.add_argument(
        "--latency-only", action="store_true", help="re-time gRPC search on the last full index"
    )
    parser.add_argument("--ingest-sample", type=int, default=0, help="re-time ingest on N abstracts")
    parser.add_argument(
        "--text-legs", action="store_true", help="only the two text legs, without the embedder"
    )
    parser.add_argument(
        "--bm25-avg-len", type=float, default=None, help="with --text-legs: also this avg_len"
    )
    parser.add_argument("--engine", choices=[*ENGINES, "both"], default="both", help="default: both")
    args = parser.parse_args()
    if args.ingest_sample:
        remeasure_ingest(RESULTS / "scifact_quality.json", args.ingest_sample)
        return
    if args.text_legs:
        scifact_engines.main_text_legs(args.bm25_avg_len)
        return
    if args.latency_only:
        remeasure_latency(RESULTS / "scifact_quality.json")
        return
    started = time.perf_counter()
    header = {
        "benchmark": "BEIR SciFact test split through strata_retrieval",
        "command": "python -m bench.scifact.quality"
        + (" --quick" if args.quick else "")
        + (f" --engine {args.engine}" if args.engine != "both" else ""),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "load_average_at_start": os.getloadavg(),
    }
    report = Report(
        RESULTS / ("scifact_quality_quick.json" if args.quick else "scifact_quality.json"), header
    )
    run(args.quick, report, list(ENGINES) if args.engine == "both" else [args.engine])
    report.record("total_seconds", round(time.perf_counter() - started, 1))
    print(f"wrote {report.out}")


if __name__ == "__main__":
    main()
