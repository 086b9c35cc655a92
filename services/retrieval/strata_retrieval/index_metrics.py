"""Prometheus figures read from the indexes at scrape time."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from strata_retrieval.engine import RetrievalEngine


class IndexCollector(Collector):
    """The HNSW build state (vectors not yet in a graph, searched exactly until the next build) and
    documents per tenant (tenants this process has indexed for since it started: one count each)."""

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
            "Documents in the index, per tenant indexed since start.",
            labels=["tenant"],
        )
        for tenant, count in self._engine.documents_per_tenant().items():
            documents.add_metric([tenant], count)
        yield documents
