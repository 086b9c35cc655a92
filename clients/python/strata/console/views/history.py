"""A block's history: its versions (what and who changed it, when), the diff between any two
(``?from=&to=``, the service's own diff), and restore of a version with the block's etag."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from strata.client import StrataClientError
from strata.console.formatting import classify
from strata.console.pages import Refusal, acting, checked_form, http_status, memory_of, redirect, render, text

VERSIONS_SHOWN = 200


async def history_page(request: Request, refusal: Refusal | None = None, status: int = 200) -> Response:
    session = acting(request)
    memory = memory_of(request, session)
    agent_id, block_id = request.path_params["agent_id"], request.path_params["block_id"]
    try:
        agent, block, page = await asyncio.gather(
            memory.get_agent(agent_id=agent_id),
            memory.get_block(block_id=block_id),
            memory.list_block_versions(block_id=block_id, page_size=VERSIONS_SHOWN),
        )
        versions = list(page.versions)
        default_from = versions[1].version if len(versions) > 1 else block.version
        first = int(request.query_params.get("from") or default_from)
        second = int(request.query_params.get("to") or block.version)
        diff = await memory.diff_block_versions(block_id=block_id, from_version=first, to_version=second)
    except ValueError:
        refusal = Refusal("from and to must be version numbers.", field="from")
        return render(request, session, "error.html", 400, refusal=refusal)
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    return render(
        request,
        session,
        "history.html",
        status,
        agent=agent,
        block=block,
        versions=versions,
        first=first,
        second=second,
        diff=classify(diff.diff.splitlines()),
        refusal=refusal,
        tab="memory",
    )


async def restore(request: Request) -> Response:
    """Restore a version as a new one, only if the block is still at the etag the page showed."""
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    agent_id, block_id = request.path_params["agent_id"], request.path_params["block_id"]
    try:
        version = int(text(form, "version"))
        await memory.restore_block_version(block_id=block_id, version=version, etag=text(form, "etag"))
    except ValueError:
        return await history_page(request, Refusal("Choose a version to restore.", field="version"), 400)
    except StrataClientError as error:
        return await history_page(request, Refusal.of(error, "version"), http_status(error))
    return redirect(request, f"/agents/{agent_id}/blocks/{block_id}/history")
