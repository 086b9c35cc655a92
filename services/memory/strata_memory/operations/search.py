"""Archival and recall search for an agent, through RetrievalService, answered from the store.

Filters (scope, tags any/all, roles, conversation, time range) travel inside the request, so each
search leg applies them before ranking. Hits come back as ids and ranks; their content is read from
the store (the source of truth), so a document deleted a moment ago is never shown. A recall search
checks its agent in the same store read that fetches the hits (one read, not two, on every search):
an unknown agent is NOT_FOUND after the search ran, and the search, scoped to the caller's tenant and
that agent id, finds nothing of anyone else's.

A recall query that names a period ("… on 8 May, 2023?", "… in May 2023?", "the week before 16 May
2023", "as of May 2023": ``strata_memory.indexing.time_phrases.named_period``) and comes with no time
range of its own searches the messages said from the start of that period (open when it has none)
to QUERY_PERIOD_AFTER past its end: people tell of a day on it or later. When no message was said in
that range the search runs again without it, so a period the query names wrongly never
leaves it with nothing. A caller's start or end time always wins over the period the text names;
``query_periods=False`` (setting ``recall_query_periods``) turns the reading off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.domain.model import SearchMode
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.indexing.time_phrases import may_name_period, named_period
from strata_memory.limits import MAX_QUERY_CHARS, check_tag_filter
from strata_memory.store import agents as agent_rows
from strata_memory.store import archives as archive_rows
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.records import MessageRecord, PassageRecord
from strata_serving.errors import InvalidArgument

T = TypeVar("T")
MODES = {mode: rpb.SearchMode.Value(f"SEARCH_MODE_{mode.name}") for mode in SearchMode}
"""RetrievalService's number for each mode, derived from the one enum (:class:`SearchMode`)."""
MODE_NAMES = {number: mode for mode, number in MODES.items()}
QUERY_PERIOD_AFTER = timedelta(days=31)
"""A recall query naming a period also finds messages said up to this long after it ends."""


@dataclass(frozen=True, slots=True)
class LegWeights:
    """How the two legs are fused for one kind of search (defaults chosen by benchmark)."""

    vector: float = 1.0
    fts: float = 1.0
    rrf_k: float = 60.0
    depth: int = 0
    """Candidates per leg of a hybrid search (raised to the limit); 0 leaves RetrievalService's default."""


@dataclass(frozen=True, slots=True)
class Hit(Generic[T]):
    item: T
    rrf_score: float
    vector_rank: int | None
    fts_rank: int | None
    search_mode: SearchMode
    score: float  # what RetrievalService ordered the hits by (its fusion's score)
    vector_score: float | None
    fts_score: float | None


@dataclass(frozen=True, slots=True)
class SearchWindow:
    """What a search asks for besides its scope: text, mode, size and inclusive time bounds."""

    query: str
    mode: SearchMode = SearchMode.HYBRID
    limit: int = 5
    start: datetime | None = None
    end: datetime | None = None


class Search:
    def __init__(
        self,
        db: Database,
        retrieval: RetrievalConnection,
        *,
        archival: LegWeights,
        recall: LegWeights,
        query_periods: bool = True,
    ) -> None:
        self._db = db
        self._retrieval = retrieval
        self._archival = archival
        self._recall = recall
        self._query_periods = query_periods

    async def archival(
        self, tenant_id: str, agent_id: str, window: SearchWindow, *, tags: Sequence[str], match_all: bool
    ) -> list[Hit[PassageRecord]]:
        check_tag_filter(tags)
        archive_ids = await self._db.read(lambda conn: _archives_of(conn, tenant_id, agent_id))
        if not archive_ids:
            return []
        flt = rpb.DocumentFilter(
            tenant_id=tenant_id,
            archive_ids=archive_ids,
            kinds=[rpb.DOCUMENT_KIND_PASSAGE],
            tags=list(tags),
            tag_match=rpb.TAG_MATCH_ALL if match_all else rpb.TAG_MATCH_ANY,
        )
        hits = await self._search(window, flt, self._archival)
        found = await self._db.read(
            lambda conn: archive_rows.get_passages(conn, tenant_id, [h.document.id for h in hits])
        )
        return _in_rank_order(hits, {p.id: p for p in found})

    async def recall(
        self,
        tenant_id: str,
        agent_id: str,
        window: SearchWindow,
        *,
        roles: Sequence[str],
        conversation_id: str,
    ) -> list[Hit[MessageRecord]]:
        _check_window(window)
        flt = rpb.DocumentFilter(
            tenant_id=tenant_id,
            agent_ids=[agent_id],
            kinds=[rpb.DOCUMENT_KIND_MESSAGE],
            roles=list(dict.fromkeys(roles)),  # each role once: a repeated one is no wider a filter
        )
        if conversation_id:
            flt.conversation_ids.append(conversation_id)
        ranged = await _within_named_period(window) if self._query_periods else window
        hits = await self._search(ranged, _copy(flt), self._recall)
        if not hits and ranged is not window:  # nothing was said in the period named: search it all
            hits = await self._search(window, flt, self._recall)
        found = await self._db.read(
            lambda conn: _messages_of(conn, tenant_id, agent_id, [h.document.id for h in hits])
        )
        return _in_rank_order(hits, {m.id: m for m in found})

    async def _search(
        self, window: SearchWindow, flt: rpb.DocumentFilter, weights: LegWeights
    ) -> list[rpb.SearchHit]:
        _check_window(window)
        if window.start:
            flt.created_at.start.CopyFrom(_timestamp(window.start))
        if window.end:
            flt.created_at.end.CopyFrom(_timestamp(window.end))
        request = rpb.SearchRequest(
            query=window.query,
            mode=MODES[window.mode],
            filter=flt,
            top_k=window.limit,
            rrf_k=weights.rrf_k,
            vector_weight=weights.vector,
            fts_weight=weights.fts,
        )
        if weights.depth and request.mode == rpb.SEARCH_MODE_HYBRID:
            request.vector_depth = request.fts_depth = max(weights.depth, window.limit)
        return list((await self._retrieval.search(request)).hits)


async def _within_named_period(window: SearchWindow) -> SearchWindow:
    """The window bounded by the period its query names, when the caller gave no time range."""
    if window.start or window.end or len(window.query) > MAX_QUERY_CHARS:
        return window
    if not may_name_period(window.query):
        return window  # most queries: no parse, no thread hop
    period = await asyncio.to_thread(named_period, window.query)  # a parse: milliseconds, off the loop
    if period is None:
        return window
    start, end = period
    return replace(window, start=start, end=end + QUERY_PERIOD_AFTER)


def _copy(flt: rpb.DocumentFilter) -> rpb.DocumentFilter:
    copied = rpb.DocumentFilter()
    copied.CopyFrom(flt)
    return copied


def _check_window(window: SearchWindow) -> None:
    if len(window.query) > MAX_QUERY_CHARS:
        raise InvalidArgument.field("query", f"is {len(window.query)} characters; at most {MAX_QUERY_CHARS}")
    if window.start and window.end and window.start > window.end:
        raise InvalidArgument.field("start_time", "is after end_time")


def _messages_of(conn: Connection, tenant_id: str, agent_id: str, ids: list[str]) -> list[MessageRecord]:
    """The agent's messages with these ids; AgentNotFound when the tenant has no such agent."""
    agent_rows.get_agent(conn, tenant_id, agent_id)
    return message_rows.get_messages(conn, tenant_id, ids)


def _archives_of(conn: Connection, tenant_id: str, agent_id: str) -> list[str]:
    agent_rows.get_agent(conn, tenant_id, agent_id)
    return archive_rows.agent_archive_ids(conn, agent_id)


def _in_rank_order(hits: Sequence[rpb.SearchHit], items: dict[str, T]) -> list[Hit[T]]:
    return [
        Hit(
            item=items[hit.document.id],
            rrf_score=hit.rrf_score,
            vector_rank=hit.vector_rank if hit.HasField("vector_rank") else None,
            fts_rank=hit.fts_rank if hit.HasField("fts_rank") else None,
            search_mode=MODE_NAMES.get(hit.search_mode, SearchMode.HYBRID),
            score=hit.score,
            vector_score=hit.vector_score if hit.HasField("vector_score") else None,
            fts_score=hit.fts_score if hit.HasField("fts_score") else None,
        )
        for hit in hits
        if hit.document.id in items
    ]


def _timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp
