"""What tenant-scoped BM25 costs the text leg (issue 26 item 5), measured in process.

Embedded engine: the same chat-length documents (``bench.perf.corpus``) written in batches of 32,
each batch one tenant's (as MemoryService's outbox sends them), into the shared Tantivy index of
earlier versions (``shared``) and into one index per tenant (``per_tenant``, the service's text leg
with its default bounds), for 1 and for 100 tenants; with 100 tenants also with fewer writers kept
open than tenants written (``writers_8``: every batch closes another tenant's writer) and with
fewer indexes kept open than tenants searched (``open_32``). Figures: text-leg upsert throughput
(documents/s), FTS search p50/p90 (ms) over queries spread round-robin over the tenants, and the
threads, descriptors and resident memory the process holds afterwards.

Server engine (qdrant-client's local mode, fewer documents: local mode searches by scanning in
Python, so its milliseconds say nothing about a Qdrant server): the sparse leg's search with its
IDF corpus narrowed to the tenant (``SearchParams.idf``, as served) and collection-wide (as before),
query by query in turn. Both are one request; on a server the corpus filter is the tenant's
payload index.

    .venv/bin/python -m bench.search.tenant_scoring            # bench/results/tenant_scoring.json
    .venv/bin/python -m bench.search.tenant_scoring --quick    # smaller, for a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import models

from bench.perf import corpus
from strata_retrieval.legs import TextIndex
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope
from strata_retrieval.text_index import TantivyTextIndex
from strata_retrieval.text_tenants import TenantTextIndexes
from strata_retrieval.vectors import qdrant_joint
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex, SparseTextLeg

RESULTS = Path(__file__).resolve().parents[1] / "results" / "tenant_scoring.json"
BATCH = 32
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def documents(texts: Sequence[str], tenants: int) -> list[list[Document]]:
    """The texts as batches of ``BATCH``, batch i belonging to tenant i mod ``tenants``."""
    batches = []
    for number, start in enumerate(range(0, len(texts), BATCH)):
        tenant = f"tenant-{number % tenants}"
        batches.append(
            [
                Document(
                    id=f"d{start + i}",
                    text=text,
                    kind=DocumentKind.MESSAGE,
                    scope=Scope(tenant_id=tenant, agent_id="a"),
                    role="user",
                    created_at=T0,
                )
                for i, text in enumerate(texts[start : start + BATCH])
            ]
        )
    return batches


def process_state() -> dict[str, float]:
    status = Path("/proc/self/status").read_text()
    rss_kib = int(status.split("VmRSS:")[1].split()[0])
    return {
        "threads": len(list(Path("/proc/self/task").iterdir())),
        "descriptors": len(list(Path("/proc/self/fd").iterdir())),
        "rss_mb": round(rss_kib / 1024, 1),
    }


def percentiles(seconds: Sequence[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))] * 1000, 3),
    }


def measure_text(
    make: Callable[[Path], TextIndex], texts: Sequence[str], tenants: int, queries: Sequence[str]
) -> tuple[float, list[float], dict[str, float]]:
    """One write of every batch and one search per query: documents/s, search seconds, and the
    process's threads, descriptors and memory before the index is closed."""
    with tempfile.TemporaryDirectory(prefix="tenant-scoring-") as tmp:
        index = make(Path(tmp) / "text")
        started = time.perf_counter()
        for batch in documents(texts, tenants):
            index.upsert(batch)
        rate = len(texts) / (time.perf_counter() - started)
        for query in queries[:20]:  # warm-up
            index.search(query, DocumentFilter(tenant_id="tenant-0"), 10)
        seconds = []
        for i, query in enumerate(queries):
            flt = DocumentFilter(tenant_id=f"tenant-{i % tenants}")
            begun = time.perf_counter()
            index.search(query, flt, 10)
            seconds.append(time.perf_counter() - begun)
        state = process_state()
        index.close()
        return rate, seconds, state


def embedded(texts: Sequence[str], queries: Sequence[str], rounds: int) -> dict[str, Any]:
    """Every variant once per round, the rounds one after the other (drift hits them alike)."""

    def shared(path: Path) -> TextIndex:
        return TantivyTextIndex(path)  # as the service opened it before

    variants: dict[str, tuple[Callable[[Path], TextIndex], int]] = {
        "shared, 1 tenant": (shared, 1),
        "per_tenant, 1 tenant": (TenantTextIndexes, 1),
        "shared, 100 tenants": (shared, 100),
        "per_tenant, 100 tenants": (TenantTextIndexes, 100),
        "per_tenant writers_8, 100 tenants": (lambda p: TenantTextIndexes(p, max_writers=8), 100),
        "per_tenant open_32, 100 tenants": (lambda p: TenantTextIndexes(p, max_open=32, max_writers=8), 100),
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    searches: dict[str, list[float]] = {name: [] for name in variants}
    states: dict[str, dict[str, float]] = {}
    for number in range(rounds):
        for name, (make, tenants) in variants.items():
            rate, seconds, states[name] = measure_text(make, texts, tenants, queries)
            rates[name].append(rate)
            searches[name] += seconds
            print(f"round {number + 1} {name}: {rate:.0f} docs/s, {percentiles(seconds)}", flush=True)
    return {
        name: {
            "tenants": tenants,
            "documents": len(texts),
            "upsert_docs_per_s_median": round(statistics.median(rates[name])),
            "upsert_docs_per_s_rounds": [round(rate) for rate in rates[name]],
            "search": percentiles(searches[name]),
            "process_before_close": states[name],
        }
        for name, (_, tenants) in variants.items()
    }


def server(texts: Sequence[str], queries: Sequence[str], tenants: int) -> dict[str, Any]:
    """The sparse leg's search with the IDF corpus narrowed to the tenant (as served) and with the
    collection-wide IDF of before, query by query in turn."""
    index = QdrantJointIndex(":memory:", IndexManifest("none", 1))
    for batch in documents(texts, tenants):
        index.upsert(batch, np.ones((len(batch), 1), dtype=np.float32))
    leg = SparseTextLeg(index)
    seconds: dict[str, list[float]] = {"tenant IDF corpus": [], "collection-wide IDF": []}
    for i, query in enumerate(queries):
        flt = DocumentFilter(tenant_id=f"tenant-{i % tenants}")
        for name, times in seconds.items():
            with patched_corpus(name == "collection-wide IDF"):
                begun = time.perf_counter()
                leg.search(query, flt, 10)
                times.append(time.perf_counter() - begun)
    index.close()
    found: dict[str, Any] = {"documents": len(texts), "tenants": tenants}
    return found | {name: percentiles(times) for name, times in seconds.items()}


@contextlib.contextmanager
def patched_corpus(collection_wide: bool) -> Iterator[None]:
    """The sparse query's IDF corpus as served, or (``collection_wide``) every point, as before."""
    served = qdrant_joint.tenant_corpus
    if collection_wide:
        qdrant_joint.tenant_corpus = lambda tenant_id: models.Filter()
    try:
        yield
    finally:
        qdrant_joint.tenant_corpus = served


def run(quick: bool) -> dict[str, Any]:
    started = time.perf_counter()
    size, asked, rounds = (1_000, 200, 1) if quick else (6_400, 1_000, 2)
    texts, queries = corpus.chat_documents(size), corpus.queries(asked)
    report: dict[str, Any] = {
        "benchmark": "tenant-scoped BM25: text-leg cost, shared index against one index per tenant",
        "command": "python -m bench.search.tenant_scoring" + (" --quick" if quick else ""),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_at_start": os.getloadavg(),
        "embedded": embedded(texts, queries, rounds),
        "server_local_mode": server(texts[: size // 4], queries[: asked // 5], 10),
    }
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = run(args.quick)
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
