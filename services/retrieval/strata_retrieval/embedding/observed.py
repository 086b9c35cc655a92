"""An embedder that reports its work: a span per call, and embedding time in the metrics when a
registry is given. It wraps any :class:`Embedder` and changes nothing it returns."""

from __future__ import annotations

import time
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram

from strata_retrieval.embedding.protocol import Embedder, Vectors
from strata_serving import tracing

EMBED_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class EmbeddingMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.seconds = Histogram(
            "strata_embedding_duration_seconds",
            "Time to embed one query, or one batch of documents.",
            ["kind"],
            buckets=EMBED_BUCKETS,
            registry=registry,
        )
        self.texts = Counter(
            "strata_embedded_texts", "Texts embedded, by kind (query, document).", ["kind"], registry=registry
        )
        self.reused = Counter(
            "strata_query_embeddings_reused",
            "Queries answered with the vector kept from an earlier call instead of embedding again.",
            registry=registry,
        )


class ObservedEmbedder:
    """``inner`` with a span around each call (``embed.query``, ``embed.documents``) and, given
    ``metrics``, its duration and text count."""

    def __init__(self, inner: Embedder, metrics: EmbeddingMetrics | None = None) -> None:
        self._inner = inner
        self._metrics = metrics

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        with tracing.span("embed.documents", texts=len(texts)):
            started = time.perf_counter()
            vectors = self._inner.embed_documents(texts)
        self._observe("batch", "document", len(texts), started)
        return vectors

    def embed_query(self, text: str) -> Vectors:
        with tracing.span("embed.query"):
            started = time.perf_counter()
            vector = self._inner.embed_query(text)
        self._observe("query", "query", 1, started)
        return vector

    def _observe(self, kind: str, text_kind: str, count: int, started: float) -> None:
        if self._metrics is not None:
            self._metrics.seconds.labels(kind).observe(time.perf_counter() - started)
            self._metrics.texts.labels(text_kind).inc(count)
