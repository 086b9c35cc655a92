"""Prometheus figures read from the indexes at scrape time."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from strata_retrieval.engine import RetrievalEngine
from strata_retrieval.text_tenants import TenantTextIndexes

TENANT_SERIES = 20
"""Tenants that keep a ``strata_index_documents`` series of their own: the ones holding the most
documents. A tenant is whatever name the caller sends (MemoryService with auth off passes any
``x-strata-tenant`` through), so the number of series must not follow the number of names."""
OTHER_TENANTS = "other"
"""The label of the one series that sums every tenant beyond the first ``TENANT_SERIES``."""


def bounded_tenant_counts(counts: Mapping[str, int], keep: int = TENANT_SERIES) -> dict[str, int]:
    """The ``keep`` largest counts by tenant (ties by name), the rest summed under ``OTHER_TENANTS``
    (present only when some tenant was folded into it). At most ``keep + 1`` entries whatever the
    number of tenants; the values sum to the same total."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    kept = dict(ranked[:keep])
    rest = ranked[keep:]
    if rest:
        kept[OTHER_TENANTS] = kept.get(OTHER_TENANTS, 0) + sum(count for _, count in rest)
    return kept


class IndexCollector(Collector):
    """The HNSW build state (vectors not yet in a graph, searched exactly until the next build), the
    embedded engine's open text indexes and writers, and documents per tenant (tenants this process
    has indexed for since it started), bounded: the ``TENANT_SERIES`` largest by name, the rest in
    one ``tenant="other"`` series."""

    def __init__(self, engine: RetrievalEngine) -> None:
        self._engine = engine

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "strata_vectors_unindexed",
            "Vectors not yet in an HNSW graph (exact search over them until maintain() builds one).",
            value=self._engine.unindexed_vectors(),
        )
        documents = GaugeMetricFamily(
            "strata_index_documents",
            f"Documents in the index: the {TENANT_SERIES} tenants holding most by name, the rest as "
            f'tenant="{OTHER_TENANTS}" (tenants indexed since start).',
            labels=["tenant"],
        )
        for tenant, count in bounded_tenant_counts(self._engine.documents_per_tenant()).items():
            documents.add_metric([tenant], count)
        yield documents
        text = self._engine.text_leg
        if isinstance(text, TenantTextIndexes):  # the embedded engine: one text index per tenant
            indexes, writers = text.open_counts()
            yield GaugeMetricFamily(
                "strata_text_indexes_open",
                "Tenants' full-text indexes open (one thread each; bounded by TEXT_OPEN_INDEXES).",
                value=indexes,
            )
            yield GaugeMetricFamily(
                "strata_text_writers_open",
                "Tenants' full-text index writers open (a descriptor and threads each; TEXT_WRITERS).",
                value=writers,
            )
