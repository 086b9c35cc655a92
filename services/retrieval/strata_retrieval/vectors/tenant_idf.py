"""The server engine's query-term weights: each term's inverse document frequency among the
searching tenant's documents only, counted in the collection.

Qdrant's IDF modifier counts every document of the collection, so a tenant's BM25 scores moved
with other tenants' text (and let a tenant probe the words others hold). Instead, every point's
payload lists its BM25 terms (``bm25_terms``, integer-indexed on a server), and a query term's weight
is Qdrant's own IDF, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, over the tenant's ``N`` documents of
which ``n`` hold it: one filtered count for the tenant and one per query term, run side by side on
a server (local mode runs them one after the other).

The counts are kept per tenant for ``ttl`` seconds, and forgotten as soon as a write through this
index touches the tenant (any delete forgets every tenant: a delete names keys, not tenants), so a
search after this replica's write weighs by what the tenant holds then. Another replica's writes
reach this one's weights within ``ttl``; a term no document of the tenant held then still weighs
(as the rarest), so a document another replica just wrote is found by its words at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from qdrant_client import QdrantClient, models

from strata_retrieval.vectors.bm25 import TERMS_FIELD

DEFAULT_TTL_SECONDS = 1.0
MAX_TENANTS = 1_024  # tenants whose counts are kept (least recently searched dropped first)
MAX_TERMS = 4_096  # terms kept per tenant; past it the tenant's counts start again
COUNT_THREADS = 8


def idf(documents: int, holding: int) -> float:
    """Qdrant's IDF of a term that ``holding`` of ``documents`` hold: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (documents - holding + 0.5) / (holding + 0.5))


@dataclass
class _Counts:
    documents: int
    at: float
    version: int
    holding: dict[int, int] = field(default_factory=dict)


class TenantIdf:
    """Query-term weights by the searching tenant's own document frequencies."""

    def __init__(
        self,
        client: QdrantClient,
        collection: str,
        *,
        concurrent: bool,
        ttl: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._collection = collection
        self._ttl = ttl
        self._clock = clock
        self._pool = ThreadPoolExecutor(COUNT_THREADS, thread_name_prefix="idf") if concurrent else None
        self._lock = threading.Lock()
        self._counts: OrderedDict[str, _Counts] = OrderedDict()
        self._versions: dict[str, int] = {}  # bumped by each write touching the tenant
        self._epoch = 0  # bumped by each delete
        self.counted = 0  # counts sent to Qdrant (for benchmarks)

    def weights(self, tenant_id: str, terms: list[int]) -> dict[int, float]:
        """Each of ``terms`` weighted by its IDF among ``tenant_id``'s documents."""
        version = self._version(tenant_id)
        counts, missing = self._cached(tenant_id, terms)
        if counts is None:
            documents, holding = self._count(tenant_id, terms, with_total=True)
            counts = _Counts(documents, self._clock(), version, holding)
            self._keep(tenant_id, counts)
        elif missing:
            _, holding = self._count(tenant_id, missing, with_total=False)
            counts = replace(counts, holding={**counts.holding, **holding})
            self._keep(tenant_id, counts)
        return {term: idf(counts.documents, counts.holding.get(term, 0)) for term in terms}

    def forget(self, tenant_ids: set[str] | None) -> None:
        """A write touched these tenants (None: a delete, any tenant): count theirs again."""
        with self._lock:
            if tenant_ids is None:
                self._epoch += 1
                self._counts.clear()
                return
            for tenant in tenant_ids:
                self._versions[tenant] = self._versions.get(tenant, 0) + 1
                self._counts.pop(tenant, None)
            if len(self._versions) > 4 * MAX_TENANTS:
                self._epoch += 1  # versions start again: every cached count is dropped with them
                self._versions.clear()
                self._counts.clear()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _version(self, tenant_id: str) -> int:
        with self._lock:
            return self._epoch * (1 << 32) + self._versions.get(tenant_id, 0)

    def _cached(self, tenant_id: str, terms: list[int]) -> tuple[_Counts | None, list[int]]:
        with self._lock:
            counts = self._counts.get(tenant_id)
            if counts is None or self._clock() - counts.at > self._ttl:
                return None, terms
            self._counts.move_to_end(tenant_id)
            return counts, [term for term in terms if term not in counts.holding]

    def _count(self, tenant_id: str, terms: list[int], *, with_total: bool) -> tuple[int, dict[int, int]]:
        """How many of the tenant's documents hold each term (and, ``with_total``, how many it has;
        else 0), counted exactly."""
        tenant = models.FieldCondition(key="tenant_id", match=models.MatchValue(value=tenant_id))
        filters = [models.Filter(must=[tenant])] if with_total else []
        for term in terms:
            holds = models.FieldCondition(key=TERMS_FIELD, match=models.MatchValue(value=term))
            filters.append(models.Filter(must=[tenant, holds]))
        counted = list(self._pool.map(self._exact, filters) if self._pool else map(self._exact, filters))
        self.counted += len(filters)
        documents = counted.pop(0) if with_total else 0
        return documents, dict(zip(terms, counted, strict=True))

    def _exact(self, flt: models.Filter) -> int:
        return int(self._client.count(self._collection, count_filter=flt, exact=True).count)

    def _keep(self, tenant_id: str, counts: _Counts) -> None:
        """Keep ``counts`` unless a write touched the tenant since they were read (or they grew past
        ``MAX_TERMS``)."""
        with self._lock:
            current = self._epoch * (1 << 32) + self._versions.get(tenant_id, 0)
            if counts.version != current or len(counts.holding) > MAX_TERMS:
                return
            self._counts[tenant_id] = counts
            self._counts.move_to_end(tenant_id)
            while len(self._counts) > MAX_TENANTS:
                self._counts.popitem(last=False)
