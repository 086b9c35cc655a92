"""A Reindex cancelled while one of its upserts is still on the way leaves no deleted document indexed.

Reindex reads a batch of documents, upserts it, then deletes from the index whatever the store no
longer holds (a deletion delivered while the upsert was on the wire must not be undone by it). When
the stream was cancelled in between, RetrievalService still applied the upsert (the call's thread runs
on), but nothing deleted again: a passage deleted meanwhile came back into the index for good, taking
a place in every search it matched (its hits are dropped when read from the store, so searches came
back short). Real services; RetrievalService's upsert is held in flight (fault injection) so that the
deletion is delivered while the Reindex's upsert is on its way.
"""

from __future__ import annotations

import asyncio
import threading
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.engine import RetrievalEngine
from tests.security import faults
from tests.servers import ServicePair

DEADLINE = 30.0


class HeldUpsert:
    """Holds RetrievalService's next upsert that carries ``document_id`` until released, before it
    touches the indexes; the others run as usual."""

    def __init__(self, document_id: str) -> None:
        self.document_id = document_id
        self.reached = threading.Event()
        self.release = threading.Event()
        self.applied = threading.Event()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = RetrievalEngine.upsert

        def upsert(engine: RetrievalEngine, documents: Any) -> int:
            held = not self.reached.is_set() and any(d.id == self.document_id for d in documents)
            if held:
                self.reached.set()
                assert self.release.wait(DEADLINE)
            count = original(engine, documents)
            if held:
                self.applied.set()
            return count

        monkeypatch.setattr(RetrievalEngine, "upsert", upsert)


async def indexed_ids(stack: ServicePair) -> list[str]:
    async with grpc.aio.insecure_channel(stack.retrieval_address) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        page = await stub.ListDocumentIds(
            rpb.ListDocumentIdsRequest(filter=rpb.DocumentFilter(tenant_id="default"))
        )
    return list(page.ids)


async def not_indexed(stack: ServicePair, document_id: str) -> bool:
    return document_id not in await indexed_ids(stack)


async def test_a_reindex_cancelled_mid_upsert_does_not_bring_back_a_passage_deleted_meanwhile(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        ServicePair(tmp_path, security_embedder) as stack,
        grpc.aio.insecure_channel(stack.memory_address) as channel,
    ):
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="keeper")))
        texts = ["The lighthouse keeper rows out at dawn", "The lighthouse lamp is lit at dusk"]
        created = await stub.CreatePassages(
            api.CreatePassagesRequest(
                agent_id=agent.id, passages=[pb.Passage(text=t) for t in texts], wait_searchable=True
            )
        )
        deleted, kept = (p.id for p in created.passages)
        held = HeldUpsert(deleted)
        held.install(monkeypatch)

        async def reindex() -> None:
            async for _ in stub.Reindex(api.ReindexRequest()):
                pass

        running = asyncio.create_task(reindex())
        assert await asyncio.to_thread(held.reached.wait, DEADLINE)  # its upsert is on the way
        await stub.DeletePassage(api.DeletePassageRequest(passage_id=deleted))
        assert await faults.wait_until(partial(not_indexed, stack, deleted), within=DEADLINE)
        running.cancel()  # the operator gives up on the Reindex
        with pytest.raises(asyncio.CancelledError):
            await running
        held.release.set()
        assert await asyncio.to_thread(held.applied.wait, DEADLINE)  # RetrievalService applied it
        assert await faults.wait_until(partial(not_indexed, stack, deleted), within=10)
        assert kept in await indexed_ids(stack)
        found = await stub.SearchArchival(
            api.SearchArchivalRequest(agent_id=agent.id, query="lighthouse keeper", top_k=1)
        )
        assert [hit.passage.id for hit in found.hits] == [kept]
