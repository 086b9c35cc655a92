"""The memory tools that reach external context: archival insert/search and conversation search."""

from __future__ import annotations

from strata_memory.domain.tools.search_tools import (
    Found,
    archival_results,
    parse_archival_insert,
    parse_archival_search,
    parse_recall_search,
    recall_results,
)
from strata_memory.indexing.documents import message_text
from strata_memory.operations.archival import Archives, IndexQueue
from strata_memory.operations.prompts import Clock
from strata_memory.operations.search import Hit, Search, SearchWindow
from strata_memory.store.records import AgentRecord, MessageRecord, PassageRecord, to_datetime


class ExternalTools:
    """Runs ``archival_memory_insert``, ``archival_memory_search`` and ``conversation_search``."""

    def __init__(
        self,
        archives: Archives,
        search: Search,
        queue: IndexQueue,
        clock: Clock,
        *,
        insert_wait_seconds: float = 5.0,
    ) -> None:
        self._archives = archives
        self._search = search
        self._queue = queue
        self._clock = clock
        self._insert_wait = insert_wait_seconds

    async def run(self, name: str, arguments: str, agent: AgentRecord) -> str:
        """The result text for the LLM; raises a StrataError the caller reports as a failed result."""
        if name == "archival_memory_insert":
            return await self._insert(arguments, agent)
        if name == "archival_memory_search":
            return await self._archival_search(arguments, agent)
        return await self._recall_search(arguments, agent)

    async def _insert(self, arguments: str, agent: AgentRecord) -> str:
        wanted = parse_archival_insert(arguments)
        passage = PassageRecord(
            id="", tenant_id=agent.tenant_id, archive_id="", text=wanted.content, tags=wanted.tags
        )
        written = await self._archives.insert(
            agent.tenant_id, agent_id=agent.id, archive_id="", passages=[passage]
        )
        stored = written.items[0]
        tags = f" with tags {', '.join(stored.tags)}" if stored.tags else ""
        searchable = await self._queue.wait_delivered(written.job_ids, self._insert_wait)
        later = "" if searchable else " It is stored and becomes searchable as soon as indexing catches up."
        return f"Inserted into archival memory as passage {stored.id}{tags}.{later}"

    async def _archival_search(self, arguments: str, agent: AgentRecord) -> str:
        query = parse_archival_search(arguments, agent.timezone)
        window = SearchWindow(query.query, limit=query.top_k, start=query.start, end=query.end)
        hits = await self._search.archival(
            agent.tenant_id, agent.id, window, tags=query.tags, match_all=query.match_all
        )
        return archival_results([_passage_found(h) for h in hits], agent.timezone)

    async def _recall_search(self, arguments: str, agent: AgentRecord) -> str:
        query = parse_recall_search(arguments, agent.timezone)
        window = SearchWindow(query.query, limit=query.limit, start=query.start, end=query.end)
        hits = await self._search.recall(
            agent.tenant_id, agent.id, window, roles=query.roles, conversation_id=""
        )
        return recall_results([_message_found(h) for h in hits], agent.timezone, self._clock())


def _passage_found(hit: Hit[PassageRecord]) -> Found:
    passage = hit.item
    return Found(
        id=passage.id,
        created_at=to_datetime(passage.created_us),
        content=passage.text,
        rrf_score=hit.rrf_score,
        score=hit.score,
        vector_rank=hit.vector_rank,
        fts_rank=hit.fts_rank,
        search_mode=hit.search_mode,
        tags=passage.tags,
    )


def _message_found(hit: Hit[MessageRecord]) -> Found:
    message = hit.item
    return Found(
        id=message.id,
        created_at=to_datetime(message.created_us),
        content=message.content or message_text(message),
        rrf_score=hit.rrf_score,
        score=hit.score,
        vector_rank=hit.vector_rank,
        fts_rank=hit.fts_rank,
        search_mode=hit.search_mode,
        role=message.role,
    )
