"""The compiled system prompt, its stale flag, the memory rendered in each mode, and recompile.

Recompile is two steps: ``?preview=1`` asks the service for a dry run (nothing saved) and shows its
diff against the stored prompt; only the confirmation form then recompiles for real.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from strata.client import StrataClientError
from strata.console.formatting import classify
from strata.console.pages import Refusal, acting, checked_form, http_status, memory_of, redirect, render
from strata.memory.v1 import resources_pb2 as pb

MODES = {
    "standard": pb.RENDER_MODE_STANDARD,
    "line_numbered": pb.RENDER_MODE_LINE_NUMBERED,
    "git": pb.RENDER_MODE_GIT,
}


async def prompt_page(request: Request) -> Response:
    session = acting(request)
    memory = memory_of(request, session)
    agent_id = request.path_params["agent_id"]
    mode = request.query_params.get("mode", "standard")
    if mode not in MODES:
        refusal = Refusal(f"Unknown render mode {mode!r}: choose one of {', '.join(MODES)}.", field="mode")
        return render(request, session, "error.html", 400, refusal=refusal)
    try:
        agent, prompt, rendered = await asyncio.gather(
            memory.get_agent(agent_id=agent_id),
            memory.get_system_prompt(agent_id=agent_id),
            memory.render_memory(agent_id=agent_id, mode=MODES[mode]),
        )
        preview = None
        if request.query_params.get("preview"):
            preview = await memory.recompile_system_prompt(agent_id=agent_id, dry_run=True)
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    diff = classify(preview.diff.splitlines()) if preview is not None else []
    return render(
        request,
        session,
        "prompt.html",
        agent=agent,
        prompt=prompt,
        rendered=rendered.text,
        mode=mode,
        modes=list(MODES),
        preview=preview,
        diff=diff,
        tab="prompt",
    )


async def recompile(request: Request) -> Response:
    session, _ = await checked_form(request)
    memory = memory_of(request, session)
    agent_id = request.path_params["agent_id"]
    try:
        await memory.recompile_system_prompt(agent_id=agent_id)
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    return redirect(request, f"/agents/{agent_id}/prompt")
