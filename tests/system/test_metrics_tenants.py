"""Tenant labels on RetrievalService's metrics stay bounded however many tenants write (issue 26
item 7): with auth off any caller can invent a tenant name, and each name used to become a series
of ``strata_index_documents`` held until restart. Only the ``TENANT_SERIES`` tenants holding the
most documents keep a series of their own; the rest are summed in one ``tenant="other"`` series."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.index_metrics import OTHER_TENANTS, TENANT_SERIES
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings


@pytest.fixture
async def retrieval(tmp_path: Path, system_embedder: OnnxSentenceEmbedder) -> AsyncIterator[RetrievalApp]:
    app = RetrievalApp(
        RetrievalSettings(
            address="127.0.0.1:0", data_dir=tmp_path / "r", metrics_address="127.0.0.1:0", log_json=False
        ),
        embedder=system_embedder,
    )
    await app.start()
    yield app
    await app.stop()


def _documents_series(app: RetrievalApp) -> dict[str, float]:
    assert app.server.metrics is not None
    url = f"http://127.0.0.1:{app.server.metrics.port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:  # loopback only
        text = reply.read().decode()
    return {
        sample.labels["tenant"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "strata_index_documents"
    }


def _document(tenant: str, number: int) -> rpb.Document:
    return rpb.Document(
        id=f"d{number}",
        text=f"note {number} of {tenant}",
        kind=rpb.DOCUMENT_KIND_PASSAGE,
        scope=rpb.Scope(tenant_id=tenant, archive_id="a"),
    )


async def test_invented_tenant_names_share_one_series(retrieval: RetrievalApp) -> None:
    invented = [f"invented-{i:03d}" for i in range(TENANT_SERIES + 30)]
    documents = [_document("big", n) for n in range(3)] + [_document(t, 0) for t in invented]
    async with grpc.aio.insecure_channel(retrieval.address) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        await stub.UpsertDocuments(rpb.UpsertDocumentsRequest(documents=documents))
    series = await asyncio.to_thread(_documents_series, retrieval)
    assert len(series) == TENANT_SERIES + 1  # the named ones and "other"
    assert series["big"] == 3  # the largest tenants keep their own series
    assert series[OTHER_TENANTS] == len(invented) + 1 - TENANT_SERIES
    assert sum(series.values()) == len(documents)
