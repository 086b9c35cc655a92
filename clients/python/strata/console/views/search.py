"""Archival passages and recall messages: lists, add/delete passages, and search with explained scores.

Each hit shows the service's ``Relevance``: ``score`` (what the hits are ordered by), ``rrf_score``
and the rank it had in each leg (``vector_rank``, ``fts_rank``; absent when that leg did not
return it). ListPassages has no tag
filter, so the tag filter of the list applies to the page read; search filters are the service's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response

from strata.client import StrataClientError
from strata.console.formatting import parse_day
from strata.console.pages import Refusal, acting, checked_form, http_status, memory_of, redirect, render, text
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb

PAGE = 50
SEARCH_MODES = {
    "hybrid": api.SEARCH_MODE_HYBRID,
    "vector": api.SEARCH_MODE_VECTOR,
    "fts": api.SEARCH_MODE_FTS,
}
TAG_MATCH = {"any": api.TAG_MATCH_ANY, "all": api.TAG_MATCH_ALL}
ROLES = {
    "system": pb.MESSAGE_ROLE_SYSTEM,
    "user": pb.MESSAGE_ROLE_USER,
    "assistant": pb.MESSAGE_ROLE_ASSISTANT,
    "tool": pb.MESSAGE_ROLE_TOOL,
}


def search_filters(params: QueryParams) -> dict[str, Any]:
    """The common search fields of the query string; ``ValueError`` names the bad one."""
    mode = params.get("mode", "hybrid")
    if mode not in SEARCH_MODES:
        raise ValueError(f"mode must be one of {', '.join(SEARCH_MODES)}")
    return {
        "mode": SEARCH_MODES[mode],
        "start_time": parse_day(params.get("start", "")),
        "end_time": parse_day(params.get("end", ""), end=True),
    }


async def archival_page(request: Request, refusal: Refusal | None = None, status: int = 200) -> Response:
    session = acting(request)
    memory = memory_of(request, session)
    agent_id, params = request.path_params["agent_id"], request.query_params
    archive, tag, query = (
        params.get("archive", ""),
        params.get("tag", "").strip(),
        params.get("q", "").strip(),
    )
    try:
        agent, archives, page = await asyncio.gather(
            memory.get_agent(agent_id=agent_id),
            memory.list_archives(agent_id=agent_id, page_size=1000),
            memory.list_passages(
                agent_id="" if archive else agent_id,
                archive_id=archive,
                page_size=PAGE,
                page_token=params.get("page_token", ""),
            ),
        )
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    hits: list[api.ArchivalHit] = []
    if query:
        try:
            tags = [t.strip() for t in params.get("tags", "").split(",") if t.strip()]
            match = TAG_MATCH.get(params.get("tag_match", "any"), api.TAG_MATCH_ANY)
            found = await memory.search_archival(
                agent_id=agent_id, query=query, tags=tags, tag_match=match, **search_filters(params)
            )
            hits = list(found.hits)
        except ValueError as error:
            refusal, status = Refusal(str(error), field="q"), 400
        except StrataClientError as error:
            refusal, status = Refusal.of(error, "q"), http_status(error)
    passages = [p for p in page.passages if not tag or tag in p.tags]
    return render(
        request,
        session,
        "archival.html",
        status,
        agent=agent,
        archives=archives.archives,
        passages=passages,
        next_token=page.next_page_token,
        hits=hits,
        params=params,
        refusal=refusal,
        tab="archival",
    )


async def add_passage(request: Request) -> Response:
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    agent_id = request.path_params["agent_id"]
    tags = [t.strip() for t in text(form, "tags").split(",") if t.strip()]
    passage = pb.Passage(text=text(form, "text"), tags=tags)
    try:
        await memory.create_passages(
            passages=[passage], agent_id=agent_id, archive_id=text(form, "archive_id"), wait_searchable=True
        )
    except StrataClientError as error:
        return await archival_page(request, Refusal.of(error, "text"), http_status(error))
    return redirect(request, f"/agents/{agent_id}/archival")


async def delete_passage(request: Request) -> Response:
    session, _ = await checked_form(request)
    memory = memory_of(request, session)
    agent_id = request.path_params["agent_id"]
    try:
        await memory.delete_passage(passage_id=request.path_params["passage_id"])
    except StrataClientError as error:
        return await archival_page(request, Refusal.of(error), http_status(error))
    return redirect(request, f"/agents/{agent_id}/archival")


async def recall_page(request: Request) -> Response:
    session = acting(request)
    memory = memory_of(request, session)
    agent_id, params = request.path_params["agent_id"], request.query_params
    conversation, query = params.get("conversation", ""), params.get("q", "").strip()
    roles = [ROLES[r] for r in params.getlist("roles") if r in ROLES]
    hits: list[api.MessageHit] = []
    try:
        agent, conversations, page = await asyncio.gather(
            memory.get_agent(agent_id=agent_id),
            memory.list_conversations(agent_id=agent_id, page_size=1000),
            memory.list_messages(
                agent_id=agent_id,
                conversation_id=conversation,
                roles=roles,
                page_size=PAGE,
                page_token=params.get("page_token", ""),
            ),
        )
        if query:
            found = await memory.search_messages(
                agent_id=agent_id,
                query=query,
                roles=roles,
                conversation_id=conversation,
                **search_filters(params),
            )
            hits = list(found.hits)
    except ValueError as error:
        return render(request, session, "error.html", 400, refusal=Refusal(str(error), field="q"))
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    return render(
        request,
        session,
        "recall.html",
        agent=agent,
        conversations=conversations.conversations,
        messages=page.messages,
        next_token=page.next_page_token,
        hits=hits,
        params=params,
        roles=list(ROLES),
        role_names={v: k for k, v in ROLES.items()},
        tab="recall",
    )
