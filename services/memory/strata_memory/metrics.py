"""MemoryService's own Prometheus figures: the outbox (read from the store at scrape time) and the
deliveries to RetrievalService (counted as they happen)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import now_us


class OutboxCollector(Collector):
    """Outbox depth, parked jobs and the oldest job's age, one small query per scrape."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._database.reading() as conn:
            depth = index_jobs.depth(conn)
        age = 0.0 if depth.oldest_created_us is None else max(0, now_us() - depth.oldest_created_us) / 1e6
        yield GaugeMetricFamily("strata_outbox_jobs", "Index jobs waiting for delivery.", value=depth.waiting)
        yield GaugeMetricFamily(
            "strata_outbox_parked_jobs", "Index jobs parked after repeated refusals.", value=depth.parked
        )
        yield GaugeMetricFamily(
            "strata_outbox_oldest_job_age_seconds", "Age of the oldest undelivered job (0: none).", value=age
        )


class DeliveryMetrics:
    """Calls to RetrievalService that index or delete (the outbox and Reindex), by outcome."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.documents = Counter(
            "strata_index_delivered_documents",
            "Documents sent to RetrievalService and acknowledged (upserts).",
            registry=registry,
        )
        self.failures = Counter(
            "strata_index_delivery_failures",
            "Index or delete calls to RetrievalService that failed, by status code.",
            ["code"],
            registry=registry,
        )

    def delivered(self, documents: int) -> None:
        self.documents.inc(documents)

    def failed(self, code: str) -> None:
        self.failures.labels(code).inc()
