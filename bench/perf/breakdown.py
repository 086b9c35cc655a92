"""Where a search's time goes: the engine's parts wrapped in stopwatches, run in-process.

The engine is built from the same classes the service uses (``EdgeShardIndex``, ``TenantTextIndexes``,
the ONNX embedder) over the data directory the service just wrote, with thin subclasses/wrappers that
time each call: query embedding, the vector leg (HNSW or exact search in the Qdrant edge shard), the
text leg (Tantivy BM25), and reading the hits' documents. Everything else inside
``RetrievalEngine.search`` (validation, RRF fusion, assembling hits) is reported as "fusion".
No service code changes for this; gRPC's share is the gRPC p50 minus the engine p50. ``stage_p50_ms``
is each stage's own duration; ``share`` is the part of the wall time it adds (a hybrid text leg
that runs beside the vector leg adds only what outlasts it).
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from strata_retrieval.embedding.protocol import Embedder, Vectors
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.model import Document, DocumentFilter, ScoredKey, SearchMode, SearchQuery
from strata_retrieval.text_tenants import TEXT_FOLDER, TenantTextIndexes
from strata_retrieval.vectors.edge_shard import EdgeShardIndex

T = TypeVar("T")
STAGES = ("embedding", "vector_leg", "text_leg", "fetch", "fusion")


class Stopwatch:
    """Seconds per stage for the query being measured."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)

    def time(self, stage: str, call: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.current[stage] += time.perf_counter() - start

    def take(self) -> dict[str, float]:
        taken, self.current = dict(self.current), defaultdict(float)
        return taken


class TimedEmbedder:
    def __init__(self, model: Embedder, watch: Stopwatch) -> None:
        self._model = model
        self._watch = watch

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def dimension(self) -> int:
        return self._model.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._model.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self._watch.time("embedding", lambda: self._model.embed_query(text))


class TimedVectors(EdgeShardIndex):
    def __init__(self, path: Path, dimension: int, watch: Stopwatch) -> None:
        super().__init__(path, dimension)
        self.watch = watch

    def search(self, vector: Vectors, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        return self.watch.time("vector_leg", lambda: super(TimedVectors, self).search(vector, flt, limit))

    def fetch(self, keys: Sequence[str]) -> dict[str, Document]:
        return self.watch.time("fetch", lambda: super(TimedVectors, self).fetch(keys))


class TimedText(TenantTextIndexes):
    def __init__(self, path: Path, watch: Stopwatch) -> None:
        super().__init__(path)
        self.watch = watch

    def search(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        return self.watch.time("text_leg", lambda: super(TimedText, self).search(text, flt, limit))


def open_timed_engine(data_dir: Path, model: Embedder, watch: Stopwatch) -> RetrievalEngine:
    """The engine over ``data_dir`` (as the service lays it out) with every part timed."""
    vectors = TimedVectors(data_dir / "vectors", model.dimension, watch)
    text = TimedText(data_dir / TEXT_FOLDER, watch)
    return RetrievalEngine(TimedEmbedder(model, watch), vectors, text, EngineConfig())


def measure_search(
    engine: RetrievalEngine,
    watch: Stopwatch,
    queries: Sequence[str],
    mode: SearchMode,
    flt: DocumentFilter,
    *,
    top_k: int = 10,
) -> dict[str, Any]:
    """Search every query once (after a short warm-up); per-stage medians and shares of the time."""
    for text in queries[:10]:
        engine.search(SearchQuery(text=text, mode=mode, filter=flt, top_k=top_k))
    watch.take()
    rows: list[dict[str, float]] = []  # each stage's own duration
    added: list[dict[str, float]] = []  # the wall time each stage added
    for text in queries:
        start = time.perf_counter()
        engine.search(SearchQuery(text=text, mode=mode, filter=flt, top_k=top_k))
        total = time.perf_counter() - start
        stages = watch.take()
        exposed = _exposed(stages, mode)
        exposed["fusion"] = stages["fusion"] = max(total - sum(exposed.values()), 0.0)
        rows.append(stages | {"total": total})
        added.append(exposed)
    totals = [r["total"] for r in rows]
    return {
        "queries": len(rows),
        "engine_p50_ms": round(statistics.median(totals) * 1e3, 3),
        "engine_p99_ms": round(statistics.quantiles(totals, n=100)[98] * 1e3, 3),
        "stage_p50_ms": {s: round(statistics.median(r.get(s, 0.0) for r in rows) * 1e3, 3) for s in STAGES},
        "share": {s: round(sum(a.get(s, 0.0) for a in added) / sum(totals), 3) for s in STAGES},
    }


def _exposed(stages: dict[str, float], mode: SearchMode) -> dict[str, float]:
    """The wall time each stage adds. In hybrid mode the text leg runs beside embedding + vector leg
    (``RetrievalEngine._run_legs``), so only the part of it that outlasts them counts."""
    if mode is not SearchMode.HYBRID:
        return dict(stages)
    beside = stages.get("embedding", 0.0) + stages.get("vector_leg", 0.0)
    return stages | {"text_leg": max(stages.get("text_leg", 0.0) - beside, 0.0)}
