"""A RetrievalService that refuses every call for its own state, or whose index server (Qdrant) is
down, is an outage, not a verdict on the documents: the outbox keeps their jobs waiting, parks none,
and delivers them once it is fixed.

RetrievalService refuses every call with FAILED_PRECONDITION when its index was built with another
embedding model (EMBEDDING_MODEL_MISMATCH) or its model files are missing, and a replica that met
another whole-index rebuild at start-up does so with REBUILD_IN_PROGRESS. Parking jobs for that
would leave every write made meanwhile unsearchable until an operator retried them by hand.
The server engine's calls to a Qdrant server that is down or restarting fail in qdrant-client
(connection refused, a timeout, a 5xx answer); parking on those would do the same.
Real RetrievalService (refusing, then fixed on the same port) and the real outbox over a SQLite store;
the Qdrant outage is injected into qdrant-client (local mode stands in for the server).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store.database import Database
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.manifest import MANIFEST_NAME
from strata_retrieval.settings import RetrievalSettings
from strata_serving.errors import StrataError
from tests.memory.indexing.test_outbox_retries import jobs, make_due, write
from tests.memory_process import free_port

POLICY = OutboxPolicy(batch_size=16, max_attempts=2, max_backoff_seconds=0.2)


@asynccontextmanager
async def retrieval(
    address: str,
    data_dir: Path,
    embedder: OnnxSentenceEmbedder,
    *,
    reports_serving: bool = False,
    **settings: Any,
) -> AsyncIterator[None]:
    """A real RetrievalService; ``reports_serving`` marks it SERVING whatever its state, as releases
    before this one did while refusing every call."""
    app = RetrievalApp(
        RetrievalSettings(
            address=address, data_dir=data_dir, workers=2, grace_seconds=0.5, log_json=False, **settings
        ),
        embedder=embedder,
    )
    await app.start()
    if reports_serving:
        await app.server.mark_serving()
    try:
        yield
    finally:
        await app.stop()


@pytest.mark.parametrize(
    ("reports_serving", "said"),
    [
        # this release: a refusing replica reports NOT_SERVING, so MemoryService's health-following
        # channel has no replica to send to
        (False, "backend unhealthy"),
        # an earlier release (rolling upgrade) reported SERVING and refused each call with its reason
        (True, "EMBEDDING_MODEL_MISMATCH"),
    ],
    ids=["not-serving", "serving-but-refusing"],
)
async def test_jobs_wait_while_retrieval_refuses_every_call_and_are_delivered_once_it_is_fixed(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder, reports_serving: bool, said: str
) -> None:
    address = f"127.0.0.1:{free_port()}"
    other_model = tmp_path / "other-model"
    other_model.mkdir()
    (other_model / MANIFEST_NAME).write_text(
        json.dumps({"embedding_model": "bge-small-en", "embedding_dimension": 384})
    )
    db = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    db.migrate()
    client = RetrievalConnection(address)
    try:
        [kept] = write(db, "t", ["The harbour ferry leaves at seven"])
        outbox = OutboxWorker(db, client, policy=POLICY)
        async with retrieval(address, other_model, security_embedder, reports_serving=reports_serving):
            for _ in range(POLICY.max_attempts + 1):
                make_due(db)
                await outbox.deliver_once()
        waiting = jobs(db)[kept]
        assert waiting["parked_us"] is None, waiting["last_error"]
        assert said in str(waiting["last_error"])
        async with retrieval(address, tmp_path / "fixed", security_embedder):
            make_due(db)
            assert await outbox.deliver_once() == 1
            assert jobs(db) == {}
            async with grpc.aio.insecure_channel(address) as channel:
                stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
                found = await stub.Search(
                    rpb.SearchRequest(
                        query="ferry",
                        mode=rpb.SEARCH_MODE_HYBRID,
                        filter=rpb.DocumentFilter(tenant_id="t"),
                        top_k=1,
                    )
                )
                assert [hit.document.id for hit in found.hits] == [kept]
    finally:
        await client.close()
        db.close()


async def found(address: str, query: str) -> list[str]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        response = await stub.Search(
            rpb.SearchRequest(
                query=query, mode=rpb.SEARCH_MODE_HYBRID, filter=rpb.DocumentFilter(tenant_id="t"), top_k=1
            )
        )
    return [hit.document.id for hit in response.hits]


async def test_jobs_wait_while_the_qdrant_server_is_down_and_are_delivered_once_it_is_back(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = f"127.0.0.1:{free_port()}"
    db = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    db.migrate()
    client = RetrievalConnection(address)
    original = QdrantClient.upsert

    def down(*args: Any, **kwargs: Any) -> Any:
        raise ResponseHandlingException(httpx.ConnectError("[Errno 111] Connection refused"))

    try:
        [kept] = write(db, "t", ["The harbour ferry leaves at seven"])
        outbox = OutboxWorker(db, client, policy=POLICY)
        async with retrieval(
            address, tmp_path / "data", security_embedder, vector_backend="server", qdrant_url=":memory:"
        ):
            monkeypatch.setattr(QdrantClient, "upsert", down)
            for _ in range(POLICY.max_attempts + 1):
                make_due(db)
                await outbox.deliver_once()
            waiting = jobs(db)[kept]
            assert waiting["parked_us"] is None, waiting["last_error"]
            assert "INDEX_UNAVAILABLE" in str(waiting["last_error"])
            monkeypatch.setattr(QdrantClient, "upsert", original)  # the server is back
            make_due(db)
            assert await outbox.deliver_once() == 1
            assert jobs(db) == {}
            assert await found(address, "ferry") == [kept]
    finally:
        await client.close()
        db.close()


@pytest.mark.parametrize("reports_serving", [False, True], ids=["this-release", "serving-but-refusing"])
async def test_a_refusing_replica_beside_a_healthy_one_costs_no_call(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder, reports_serving: bool
) -> None:
    """Two RetrievalService replicas behind MemoryService's channel (round robin over the replicas
    reporting SERVING), one of them on an index of another embedding model. Every upsert and search
    reaches the healthy one. A replica that reported SERVING while refusing (releases before this one,
    or a rolling upgrade's older replica: ``serving-but-refusing``) took its share of the calls,
    each failing with its refusal."""
    healthy, refusing = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    other_model = tmp_path / "other-model"
    other_model.mkdir()
    (other_model / MANIFEST_NAME).write_text(
        json.dumps({"embedding_model": "bge-small-en", "embedding_dimension": 384})
    )
    client = RetrievalConnection(f"ipv4:{healthy},{refusing}")
    refusals: list[str] = []
    found = 0
    try:
        async with (
            retrieval(healthy, tmp_path / "healthy", security_embedder),
            retrieval(refusing, other_model, security_embedder, reports_serving=reports_serving),
        ):
            for i in range(12):
                document = rpb.Document(
                    id=f"message-{i}",
                    text=f"the ferry number {i} leaves at seven",
                    kind=rpb.DOCUMENT_KIND_MESSAGE,
                    scope=rpb.Scope(tenant_id="t", agent_id="agent-1"),
                )
                search = rpb.SearchRequest(
                    query="ferry",
                    mode=rpb.SEARCH_MODE_FTS,
                    filter=rpb.DocumentFilter(tenant_id="t"),
                    top_k=20,
                )
                try:
                    await client.upsert([document])
                    found = len((await client.search(search)).hits)
                except StrataError as refused:
                    refusals.append(str(refused.metadata.get("refusal", refused.reason)))
    finally:
        await client.close()
    if reports_serving:
        assert refusals, "round robin over two SERVING replicas never reached the refusing one"
        assert set(refusals) == {"EMBEDDING_MODEL_MISMATCH"}
    else:
        assert refusals == []
        assert found == 12  # every upsert reached the index the searches read
