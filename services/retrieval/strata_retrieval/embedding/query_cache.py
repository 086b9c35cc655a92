"""Query vectors kept for the texts asked most recently, so a query asked again is not embedded again.

An embedder's query vector depends only on the model and the text, so one kept from an earlier call
is the vector the model would give now: an agent asking the same question of its memory twice (a
retry, a page of results, a tool call repeated, one query through several modes) pays the encoder
once (``strata_query_embeddings_reused_total`` counts the calls that did not). Keys are (model name,
text); the least recently used entry goes once ``size`` are held (``size`` 0 keeps none). Kept
vectors are read-only, so no caller can change another's. Two callers missing on the same text at
once both embed it (the second write replaces the first, an equal vector): a lock is held only
around the table, never around the model.

A hit answers faster than a miss, so a caller who times searches can learn that the same text was
asked recently by some caller of this RetrievalService; a deployment whose tenants must not learn
even that sets ``query_embedding_cache`` to 0.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from strata_retrieval.embedding.observed import EmbeddingMetrics
from strata_retrieval.embedding.protocol import Embedder, Vectors


class QueryCache:
    """``inner`` with its query vectors kept for the ``size`` texts asked most recently."""

    def __init__(self, inner: Embedder, size: int, metrics: EmbeddingMetrics | None = None) -> None:
        if size < 0:
            raise ValueError(f"size must be at least 0, not {size}")
        self._inner = inner
        self._size = size
        self._kept: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()
        self._metrics = metrics
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def __len__(self) -> int:
        return len(self._kept)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        key = (self._inner.name, text)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                self.hits += 1
                if self._metrics is not None:
                    self._metrics.reused.inc()
                return kept
            self.misses += 1
        vector = self._inner.embed_query(text)
        if self._size == 0:
            return vector
        vector.setflags(write=False)
        with self._lock:
            self._kept[key] = vector
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return vector
