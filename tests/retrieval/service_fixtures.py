"""A real RetrievalService on port 0 (real embedder; Edge shard and Tantivy in a temp dir, or the server
engine over qdrant-client's local mode) and a stub."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from strata_retrieval.embedding.protocol import Embedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings

ENGINES: dict[str, dict[str, Any]] = {
    "embedded": {},  # the default: Qdrant's engine in-process and Tantivy, under data_dir
    "server": {"vector_backend": "server", "qdrant_url": ":memory:"},  # both legs in one collection
}
"""Settings of each engine the behaviour suite runs over. The server engine runs on qdrant-client's
local mode here (no Qdrant server can be installed on this machine); it speaks the server's API."""

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TENANT = "tenant-1"


@dataclass
class Service:
    app: RetrievalApp
    channel: grpc.aio.Channel
    stub: pb_grpc.RetrievalServiceAsyncStub  # a .pyi-only name: annotations are not evaluated


@asynccontextmanager
async def running_service(
    data_dir: Path, embedder: Embedder | None, **settings: Any
) -> AsyncIterator[Service]:
    config = RetrievalSettings(
        address="127.0.0.1:0", data_dir=data_dir, workers=2, grace_seconds=0.5, log_json=False, **settings
    )
    app = RetrievalApp(config, embedder=embedder)
    await app.start()
    try:
        async with grpc.aio.insecure_channel(app.address) as channel:
            yield Service(app=app, channel=channel, stub=pb_grpc.RetrievalServiceStub(channel))
    finally:
        await app.stop()


def at(minutes: int) -> Timestamp:
    timestamp = Timestamp()
    timestamp.FromDatetime(T0 + timedelta(minutes=minutes))
    return timestamp


def passage(
    doc_id: str, text: str, *, minutes: int = 0, tags: tuple[str, ...] = (), **scope: str
) -> pb.Document:
    return pb.Document(
        id=doc_id,
        text=text,
        kind=pb.DOCUMENT_KIND_PASSAGE,
        scope=pb.Scope(
            tenant_id=scope.pop("tenant_id", TENANT), archive_id=scope.pop("archive_id", "arc-1"), **scope
        ),
        tags=list(tags),
        created_at=at(minutes),
    )


def message(
    doc_id: str, text: str, *, role: str, minutes: int = 0, conversation_id: str = "conv-1"
) -> pb.Document:
    return pb.Document(
        id=doc_id,
        text=text,
        kind=pb.DOCUMENT_KIND_MESSAGE,
        scope=pb.Scope(tenant_id=TENANT, agent_id="agent-1", conversation_id=conversation_id),
        role=role,
        created_at=at(minutes),
    )


def search(
    query: str, mode: pb.SearchMode.ValueType = pb.SEARCH_MODE_HYBRID, top_k: int = 5, **fields: Any
) -> pb.SearchRequest:
    """A search request; keyword arguments naming SearchRequest fields go there, the rest to its filter."""
    request_fields = {name: fields.pop(name) for name in list(fields) if name in _REQUEST_FIELDS}
    return pb.SearchRequest(
        query=query,
        mode=mode,
        top_k=top_k,
        filter=pb.DocumentFilter(tenant_id=fields.pop("tenant_id", TENANT), **fields),
        **request_fields,
    )


_REQUEST_FIELDS = set(pb.SearchRequest.DESCRIPTOR.fields_by_name) - {"filter"}


MEMORIES = [
    passage(
        "p-tea",
        "The user loves green tea and drinks it every morning",
        minutes=1,
        tags=("preferences", "food"),
    ),
    passage("p-cat", "The user's cat is called Miso and sleeps on the keyboard", minutes=2, tags=("pets",)),
    passage("p-trip", "Planning a hiking trip to the Alps in September", minutes=3, tags=("travel", "plans")),
    passage(
        "p-job", "The user works as a nurse on night shifts at the city hospital", minutes=4, tags=("work",)
    ),
    passage("p-other-archive", "Green tea notes from another archive", minutes=5, archive_id="arc-2"),
    message("m-1", "Can you remind me what tea I like?", role="user", minutes=6),
    message("m-2", "You told me you love green tea in the morning.", role="assistant", minutes=7),
    message("m-3", "My cat knocked over the tea again!", role="user", minutes=8, conversation_id="conv-2"),
]


async def ids(service: Service, request: pb.SearchRequest) -> list[str]:
    """The document ids of a search's hits, in order."""
    return [hit.document.id for hit in (await service.stub.Search(request)).hits]
