"""The agents list (search, paging, counts, last change), create, and delete with confirmation.

ListAgents has no name filter and no RPC counts an agent's messages or passages, so: a search reads
the tenant's agents page by page (at most ``SEARCH_SCAN`` of them) and pages the matches itself; the
counts are the length of one page of at most ``COUNT_PAGE`` (shown as ``1000+`` when full).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from strata.client import AsyncMemoryClient, StrataClientError
from strata.console.formatting import at_most, when
from strata.console.pages import (
    Refusal,
    acting,
    checked_form,
    http_status,
    memory_of,
    redirect,
    render,
    text,
)
from strata.memory.v1 import resources_pb2 as pb

PAGE = 20
COUNT_PAGE = 1000
SEARCH_SCAN = 5000


@dataclass(frozen=True)
class AgentRow:
    agent: pb.Agent
    blocks: str
    messages: str
    passages: str
    last_change: str


async def agent_row(memory: AsyncMemoryClient, agent: pb.Agent) -> AgentRow:
    """One row of the list: the agent and its counts, read concurrently."""
    blocks, messages, passages = await asyncio.gather(
        memory.list_blocks(agent_id=agent.id, page_size=COUNT_PAGE),
        memory.list_messages(agent_id=agent.id, page_size=COUNT_PAGE),
        memory.list_passages(agent_id=agent.id, page_size=COUNT_PAGE),
    )
    stamps = [agent.update_time, *(b.update_time for b in blocks.blocks)]
    latest = max(stamps, key=lambda s: (s.seconds, s.nanos))
    return AgentRow(
        agent,
        at_most(len(blocks.blocks), COUNT_PAGE),
        at_most(len(messages.messages), COUNT_PAGE),
        at_most(len(passages.passages), COUNT_PAGE),
        when(latest),
    )


async def matching(memory: AsyncMemoryClient, query: str) -> list[pb.Agent]:
    """Agents whose name or id contains ``query`` (case-insensitive), from the first SEARCH_SCAN."""
    needle, found, seen = query.lower(), [], 0
    async for agent in memory.iter_agents(page_size=1000):
        seen += 1
        if needle in agent.name.lower() or needle in agent.id.lower():
            found.append(agent)
        if seen >= SEARCH_SCAN:
            break
    return found


async def agents_page(request: Request, refusal: Refusal | None = None, status: int = 200) -> Response:
    session = acting(request)
    memory = memory_of(request, session)
    query = request.query_params.get("q", "").strip()
    token = request.query_params.get("page_token", "")
    try:
        if query:
            start = int(request.query_params.get("start", "0") or 0)
            found = await matching(memory, query)
            agents, next_link = found[start : start + PAGE], ""
            if start + PAGE < len(found):
                next_link = "?" + urlencode({"q": query, "start": start + PAGE})
        else:
            page = await memory.list_agents(page_size=PAGE, page_token=token)
            agents = list(page.agents)
            next_link = f"?page_token={page.next_page_token}" if page.next_page_token else ""
        rows = await asyncio.gather(*(agent_row(memory, agent) for agent in agents))
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    except ValueError:
        return render(request, session, "error.html", 400, refusal=Refusal("start must be a whole number"))
    return render(
        request, session, "agents.html", status, rows=rows, query=query, next_link=next_link, refusal=refusal
    )


async def create_agent(request: Request) -> Response:
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    agent = pb.Agent(name=text(form, "name").strip(), system=text(form, "system"))
    try:
        created = await memory.create_agent(agent=agent)
    except StrataClientError as error:
        return await agents_page(request, Refusal.of(error, "name"), http_status(error))
    return redirect(request, f"/agents/{created.id}")


async def confirm_delete(request: Request) -> Response:
    session = acting(request)
    memory = memory_of(request, session)
    try:
        agent = await memory.get_agent(agent_id=request.path_params["agent_id"])
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    return render(request, session, "delete_agent.html", agent=agent, refusal=None)


async def delete_agent(request: Request) -> Response:
    """Delete only the state the person confirmed (its etag); a later change is shown, not deleted."""
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    agent_id = request.path_params["agent_id"]
    try:
        await memory.delete_agent(agent_id=agent_id, etag=text(form, "etag"))
    except StrataClientError as error:
        try:
            agent = await memory.get_agent(agent_id=agent_id)
        except StrataClientError:
            return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
        refusal = Refusal.of(error, "etag")
        return render(request, session, "delete_agent.html", http_status(error), agent=agent, refusal=refusal)
    return redirect(request, "/agents")
