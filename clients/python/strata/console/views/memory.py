"""An agent's memory: its blocks with budget bars and markers; edit, create, attach and detach.

Rules:
- Every save sends the etag the page was rendered with. When the block changed since (ABORTED), the
  page shows the person's text and the stored one as a diff and offers three ways on: keep mine
  (save again against the new etag), take theirs (drop the edit), or merge line by line (the
  service's three-way merge from the version the edit started at). Nothing is overwritten silently.
- A refusal (over the budget, a bad label) is shown beside the field with the service's message;
  the draft stays in the form and nothing is saved.
- "Shared" names the other agents holding the block: no RPC lists a block's holders, so the page
  reads the blocks of the tenant's first ``HOLDER_SCAN`` agents.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response

from strata.client import AbortedError, AsyncMemoryClient, StrataClientError
from strata.console.formatting import DiffLine, line_diff
from strata.console.pages import Refusal, acting, checked_form, http_status, memory_of, redirect, render, text
from strata.console.sessions import Session
from strata.memory.v1 import resources_pb2 as pb

HOLDER_SCAN = 200


@dataclass
class Conflict:
    """A save refused because the block changed: what the person wrote, what is stored now."""

    block_id: str
    mine: str
    base_etag: str
    diff: list[DiffLine]


@dataclass
class PageState:
    """What a re-rendered memory page carries besides the stored blocks."""

    refusals: dict[str, Refusal] = field(default_factory=dict)
    drafts: dict[str, dict[str, str]] = field(default_factory=dict)
    conflict: Conflict | None = None


async def holders(memory: AsyncMemoryClient, agent_id: str) -> dict[str, list[pb.Agent]]:
    """For each block id, the other agents (of the first HOLDER_SCAN) it is attached to."""
    others: list[pb.Agent] = []
    async for agent in memory.iter_agents(page_size=HOLDER_SCAN):
        if agent.id != agent_id:
            others.append(agent)
        if len(others) >= HOLDER_SCAN:
            break
    pages = await asyncio.gather(*(memory.list_blocks(agent_id=a.id, page_size=1000) for a in others))
    held: dict[str, list[pb.Agent]] = {}
    for agent, page in zip(others, pages, strict=True):
        for block in page.blocks:
            held.setdefault(block.id, []).append(agent)
    return held


async def all_blocks(memory: AsyncMemoryClient, agent_id: str) -> list[pb.Block]:
    return [block async for block in memory.iter_blocks(agent_id=agent_id, page_size=1000)]


async def memory_page(request: Request, state: PageState | None = None, status: int = 200) -> Response:
    session = acting(request)
    return await show_memory(request, session, state or PageState(), status)


async def show_memory(request: Request, session: Session, state: PageState, status: int) -> Response:
    memory = memory_of(request, session)
    agent_id = request.path_params["agent_id"]
    try:
        agent, blocks, held = await asyncio.gather(
            memory.get_agent(agent_id=agent_id), all_blocks(memory, agent_id), holders(memory, agent_id)
        )
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    return render(
        request,
        session,
        "memory.html",
        status,
        agent=agent,
        blocks=blocks,
        held=held,
        state=state,
        tab="memory",
    )


def block_from(form_text: dict[str, str]) -> tuple[pb.Block, list[str]]:
    """The block fields of an edit form and the update mask naming them (limit only when given)."""
    block = pb.Block(value=form_text["value"], description=form_text["description"])
    mask = ["value", "description"]
    if form_text["limit"].strip():
        block.limit = int(form_text["limit"])
        mask.append("limit")
    return block, mask


async def edit_block(request: Request) -> Response:
    """Save an edit (``action``: ``save`` with the etag, or ``merge`` onto the base etag)."""
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    block_id = request.path_params["block_id"]
    draft = {name: text(form, name) for name in ("value", "description", "limit", "etag")}
    state = PageState(drafts={block_id: draft})
    try:
        block, mask = block_from(draft)
        if text(form, "action") == "merge":
            await memory.update_block(
                block=block, update_mask=mask, block_id=block_id, base_etag=draft["etag"]
            )
        else:
            await memory.update_block(block=block, update_mask=mask, block_id=block_id, etag=draft["etag"])
    except ValueError:
        state.refusals[block_id] = Refusal("The limit must be a whole number of characters.", field="limit")
        return await show_memory(request, session, state, 400)
    except AbortedError as error:
        if error.reason == "ETAG_MISMATCH":
            return await show_conflict(request, session, state, block_id, draft)
        state.refusals[block_id] = Refusal.of(error, "value")
        return await show_memory(request, session, state, http_status(error))
    except StrataClientError as error:
        state.refusals[block_id] = Refusal.of(error, "value")
        return await show_memory(request, session, state, http_status(error))
    return redirect(request, f"/agents/{request.path_params['agent_id']}#block-{block_id}")


async def show_conflict(
    request: Request, session: Session, state: PageState, block_id: str, draft: dict[str, str]
) -> Response:
    """The memory page with the stored and the person's text side by side as a diff (409)."""
    memory = memory_of(request, session)
    current = await memory.get_block(block_id=block_id)
    diff = line_diff(current.value, draft["value"], f"stored now (version {current.version})", "your edit")
    state.conflict = Conflict(block_id, draft["value"], draft["etag"], diff)
    state.drafts[block_id] = {**draft, "etag": current.etag}
    return await show_memory(request, session, state, 409)


async def create_block(request: Request) -> Response:
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    draft = {name: text(form, name) for name in ("label", "value", "description", "limit")}
    state = PageState(drafts={"new": draft})
    try:
        block = pb.Block(
            label=draft["label"].strip(),
            value=draft["value"],
            description=draft["description"],
            read_only=text(form, "read_only") == "on",
        )
        if draft["limit"].strip():
            block.limit = int(draft["limit"])
        await memory.create_block(block=block, agent_id=request.path_params["agent_id"])
    except ValueError:
        state.refusals["new"] = Refusal("The limit must be a whole number of characters.", field="limit")
        return await show_memory(request, session, state, 400)
    except StrataClientError as error:
        state.refusals["new"] = Refusal.of(error, "label")
        return await show_memory(request, session, state, http_status(error))
    return redirect(request, f"/agents/{request.path_params['agent_id']}")


async def attach_block(request: Request) -> Response:
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    block_id = text(form, "block_id").strip()
    try:
        await memory.attach_block(agent_id=request.path_params["agent_id"], block_id=block_id)
    except StrataClientError as error:
        state = PageState(
            refusals={"attach": Refusal.of(error, "block_id")}, drafts={"attach": {"block_id": block_id}}
        )
        return await show_memory(request, session, state, http_status(error))
    return redirect(request, f"/agents/{request.path_params['agent_id']}")


async def detach_block(request: Request) -> Response:
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    block_id = request.path_params["block_id"]
    try:
        await memory.detach_block(
            agent_id=request.path_params["agent_id"], block_id=block_id, etag=text(form, "etag")
        )
    except StrataClientError as error:
        state = PageState(refusals={block_id: Refusal.of(error, "detach")})
        return await show_memory(request, session, state, http_status(error))
    return redirect(request, f"/agents/{request.path_params['agent_id']}")
