"""Conversions between ``strata.retrieval.v1`` messages and the retrieval domain (both directions).

Parsing rejects what the wire allows but the domain cannot mean: an UNSPECIFIED mode or kind, an
unknown enum number. Range and size checks live in :mod:`strata_retrieval.limits`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.model import (
    DEFAULT_RRF_K,
    ContextLegs,
    Document,
    DocumentFilter,
    DocumentKind,
    Hit,
    LegWeights,
    Scope,
    ScopeStats,
    SearchMode,
    SearchQuery,
    SearchResult,
    TagMatch,
)
from strata_serving import timestamps
from strata_serving.errors import InvalidArgument

_E = TypeVar("_E")

KIND_FROM_PB = {
    pb.DOCUMENT_KIND_PASSAGE: DocumentKind.PASSAGE,
    pb.DOCUMENT_KIND_MESSAGE: DocumentKind.MESSAGE,
}
KIND_TO_PB = {kind: number for number, kind in KIND_FROM_PB.items()}
CONTEXT_LEGS_FROM_PB = {
    pb.CONTEXT_LEGS_UNSPECIFIED: ContextLegs.BOTH,
    pb.CONTEXT_LEGS_TEXT: ContextLegs.TEXT,
    pb.CONTEXT_LEGS_VECTOR: ContextLegs.VECTOR,
    pb.CONTEXT_LEGS_BOTH: ContextLegs.BOTH,
}
CONTEXT_LEGS_TO_PB = {
    ContextLegs.TEXT: pb.CONTEXT_LEGS_TEXT,
    ContextLegs.VECTOR: pb.CONTEXT_LEGS_VECTOR,
    ContextLegs.BOTH: pb.CONTEXT_LEGS_BOTH,
}
MODE_FROM_PB = {
    pb.SEARCH_MODE_VECTOR: SearchMode.VECTOR,
    pb.SEARCH_MODE_FTS: SearchMode.FTS,
    pb.SEARCH_MODE_HYBRID: SearchMode.HYBRID,
}
MODE_TO_PB = {mode: number for number, mode in MODE_FROM_PB.items()}
TAG_MATCH_FROM_PB = {
    pb.TAG_MATCH_UNSPECIFIED: TagMatch.ANY,
    pb.TAG_MATCH_ANY: TagMatch.ANY,
    pb.TAG_MATCH_ALL: TagMatch.ALL,
}
TAG_MATCH_TO_PB = {TagMatch.ANY: pb.TAG_MATCH_ANY, TagMatch.ALL: pb.TAG_MATCH_ALL}


def _enum(table: Mapping[Any, _E], number: int, field: str) -> _E:
    value = table.get(number)
    if value is None:
        problem = "must be set" if number == 0 else f"unknown value {number}"
        raise InvalidArgument.field(field, problem)
    return value


def timestamp_to_datetime(timestamp: Timestamp, field: str = "timestamp") -> datetime:
    return timestamps.to_datetime(timestamp, field)


def datetime_to_timestamp(moment: datetime) -> Timestamp:
    timestamp = Timestamp()
    timestamp.FromDatetime(moment)
    return timestamp


def document_from_pb(message: pb.Document, where: str, now: Callable[[], datetime]) -> Document:
    """A wire document as a domain document; an unset ``created_at`` becomes ``now()``."""
    created_at = (
        timestamp_to_datetime(message.created_at, f"{where}.created_at")
        if message.HasField("created_at")
        else now()
    )
    return Document(
        id=message.id,
        text=message.text,
        kind=_enum(KIND_FROM_PB, message.kind, f"{where}.kind"),
        scope=Scope(
            tenant_id=message.scope.tenant_id,
            agent_id=message.scope.agent_id,
            archive_id=message.scope.archive_id,
            conversation_id=message.scope.conversation_id,
        ),
        role=message.role,
        tags=tuple(message.tags),
        created_at=created_at,
        metadata=dict(message.metadata),
        context=message.context,
        context_legs=_enum(CONTEXT_LEGS_FROM_PB, message.context_legs, f"{where}.context_legs"),
    )


def document_to_pb(document: Document) -> pb.Document:
    message = pb.Document()
    fill_document(message, document)
    return message


def fill_document(message: pb.Document, document: Document) -> None:
    """Write ``document`` into an empty ``message`` in place (a response's hit builds its document
    where it will be sent, instead of building one and copying it in)."""
    message.id = document.id
    message.text = document.text
    message.kind = KIND_TO_PB[document.kind]
    scope, into = document.scope, message.scope
    into.tenant_id = scope.tenant_id
    into.agent_id = scope.agent_id
    into.archive_id = scope.archive_id
    into.conversation_id = scope.conversation_id
    message.role = document.role
    message.tags.extend(document.tags)
    message.created_at.FromDatetime(document.created_at)
    message.metadata.update(document.metadata)
    if document.context:  # without context its legs mean nothing: left unset, as it was sent
        message.context = document.context
        message.context_legs = CONTEXT_LEGS_TO_PB[document.context_legs]


def filter_from_pb(message: pb.DocumentFilter, where: str = "filter") -> DocumentFilter:
    time_range = message.created_at
    return DocumentFilter(
        tenant_id=message.tenant_id,
        agent_ids=tuple(message.agent_ids),
        archive_ids=tuple(message.archive_ids),
        conversation_ids=tuple(message.conversation_ids),
        kinds=tuple(_enum(KIND_FROM_PB, kind, f"{where}.kinds[{i}]") for i, kind in enumerate(message.kinds)),
        tags=tuple(message.tags),
        tag_match=_enum(TAG_MATCH_FROM_PB, message.tag_match, f"{where}.tag_match"),
        roles=tuple(message.roles),
        created_from=timestamp_to_datetime(time_range.start, f"{where}.created_at.start")
        if time_range.HasField("start")
        else None,
        created_to=timestamp_to_datetime(time_range.end, f"{where}.created_at.end")
        if time_range.HasField("end")
        else None,
    )


def filter_to_pb(flt: DocumentFilter) -> pb.DocumentFilter:
    message = pb.DocumentFilter(
        tenant_id=flt.tenant_id,
        agent_ids=list(flt.agent_ids),
        archive_ids=list(flt.archive_ids),
        conversation_ids=list(flt.conversation_ids),
        kinds=[KIND_TO_PB[kind] for kind in flt.kinds],
        tags=list(flt.tags),
        tag_match=TAG_MATCH_TO_PB[flt.tag_match],
        roles=list(flt.roles),
    )
    if flt.created_from is not None:
        message.created_at.start.CopyFrom(datetime_to_timestamp(flt.created_from))
    if flt.created_to is not None:
        message.created_at.end.CopyFrom(datetime_to_timestamp(flt.created_to))
    return message


def search_from_pb(message: pb.SearchRequest, default_weights: LegWeights) -> SearchQuery:
    """A search request; a weight left unset takes its value from ``default_weights``."""
    weights = None
    if message.HasField("vector_weight") or message.HasField("fts_weight"):
        weights = LegWeights(
            vector=message.vector_weight if message.HasField("vector_weight") else default_weights.vector,
            fts=message.fts_weight if message.HasField("fts_weight") else default_weights.fts,
        )
    return SearchQuery(
        text=message.query,
        mode=_enum(MODE_FROM_PB, message.mode, "mode"),
        filter=filter_from_pb(message.filter),
        top_k=message.top_k,
        rrf_k=message.rrf_k if message.HasField("rrf_k") else DEFAULT_RRF_K,
        weights=weights,
        vector_depth=message.vector_depth if message.HasField("vector_depth") else None,
        fts_depth=message.fts_depth if message.HasField("fts_depth") else None,
    )


def hit_to_pb(hit: Hit, mode: SearchMode) -> pb.SearchHit:
    message = pb.SearchHit()
    fill_hit(message, hit, MODE_TO_PB[mode])
    return message


def fill_hit(message: pb.SearchHit, hit: Hit, mode: int) -> None:
    """Write ``hit`` (found in search mode number ``mode``) into an empty ``message`` in place."""
    fill_document(message.document, hit.document)
    message.rrf_score = hit.rrf_score
    message.score = hit.score
    message.search_mode = mode  # type: ignore[assignment]  # an enum number
    if hit.vector_rank is not None:
        message.vector_rank = hit.vector_rank
    if hit.fts_rank is not None:
        message.fts_rank = hit.fts_rank
    if hit.vector_score is not None:
        message.vector_score = hit.vector_score
    if hit.fts_score is not None:
        message.fts_score = hit.fts_score


def hit_from_pb(message: pb.SearchHit) -> Hit:
    """The client-side reading of a hit (used by tests and the benchmark)."""
    return Hit(
        document=document_from_pb(message.document, "hit.document", lambda: datetime.now(UTC)),
        rrf_score=message.rrf_score,
        score=message.score,
        vector_rank=message.vector_rank if message.HasField("vector_rank") else None,
        fts_rank=message.fts_rank if message.HasField("fts_rank") else None,
        vector_score=message.vector_score if message.HasField("vector_score") else None,
        fts_score=message.fts_score if message.HasField("fts_score") else None,
    )


def search_result_to_pb(result: SearchResult) -> pb.SearchResponse:
    """The response, each hit built in place in its repeated field, not built apart and copied in
    (faster: bench/perf/findings.md)."""
    mode = MODE_TO_PB[result.mode]
    response = pb.SearchResponse(search_mode=mode)
    add = response.hits.add
    for hit in result.hits:
        fill_hit(add(), hit, mode)
    return response


def stats_to_pb(stats: ScopeStats) -> pb.StatsResponse:
    return pb.StatsResponse(
        document_count=stats.document_count,
        passage_count=stats.passage_count,
        message_count=stats.message_count,
        tags=list(stats.tags),
        embedding_model=stats.embedding_model,
        embedding_dimension=stats.embedding_dimension,
    )
