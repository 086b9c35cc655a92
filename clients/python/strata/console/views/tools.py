"""The tool playground: run a memory tool with JSON arguments as an LLM would call it, and see exactly
what the LLM receives (``ok``, result text, envelope, reason) and the block change it made.

Arguments must be a JSON object; the text is passed to ExecuteTool as written, so the service's own
parsing and refusals are what the page shows. The change is the diff between the block before the
call (read just before it) and the block the service returns.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from strata.client import StrataClientError
from strata.console.formatting import DiffLine, line_diff
from strata.console.pages import Refusal, acting, checked_form, http_status, memory_of, render, text
from strata.console.sessions import Session
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb


@dataclass
class Run:
    """What the playground shows after a run: the form as sent, the result or the refusal, the change."""

    draft: dict[str, str]
    result: api.ExecuteToolResponse | None = None
    refusal: Refusal | None = None
    change: list[DiffLine] = dataclasses.field(default_factory=list)


async def tools_page(request: Request) -> Response:
    session = acting(request)
    return await show_tools(request, session, Run({"tool": "", "arguments": "{}"}), 200)


async def show_tools(request: Request, session: Session, run: Run, status: int) -> Response:
    memory = memory_of(request, session)
    try:
        agent, tools = await asyncio.gather(
            memory.get_agent(agent_id=request.path_params["agent_id"]), memory.list_tools()
        )
    except StrataClientError as error:
        return render(request, session, "error.html", http_status(error), refusal=Refusal.of(error))
    return render(
        request,
        session,
        "tools.html",
        status,
        agent=agent,
        tools=tools.tools,
        draft=run.draft,
        result=run.result,
        refusal=run.refusal,
        change=run.change,
        tab="tools",
    )


def argument_problem(arguments: str) -> str:
    """Why ``arguments`` is not a JSON object (empty when it is)."""
    try:
        parsed = json.loads(arguments or "null")
    except ValueError as error:
        return f"Not JSON: {error}."
    return "" if isinstance(parsed, dict) else 'Arguments must be a JSON object, e.g. {"label": "human"}.'


async def run_tool(request: Request) -> Response:
    session, form = await checked_form(request)
    memory = memory_of(request, session)
    agent_id = request.path_params["agent_id"]
    run = Run({"tool": text(form, "tool"), "arguments": text(form, "arguments")})
    if problem := argument_problem(run.draft["arguments"]):
        run.refusal = Refusal(problem, field="arguments")
        return await show_tools(request, session, run, 400)
    try:
        before = {b.id: b async for b in memory.iter_blocks(agent_id=agent_id, page_size=1000)}
        run.result = await memory.execute_tool(
            agent_id=agent_id, tool_name=run.draft["tool"], arguments=run.draft["arguments"]
        )
    except StrataClientError as error:
        run.refusal = Refusal.of(error, "arguments")
        return await show_tools(request, session, run, http_status(error))
    run.change = block_change(before, run.result)
    return await show_tools(request, session, run, 200)


def block_change(before: dict[str, pb.Block], result: api.ExecuteToolResponse) -> list[DiffLine]:
    """The diff of the block the tool returned against the same block before the call."""
    if not result.HasField("block"):
        return []
    old = before.get(result.block.id)
    if old is None:
        return line_diff("", result.block.value, "(no block)", f"{result.block.label} (new)")
    return line_diff(
        old.value, result.block.value, f"{old.label} version {old.version}", f"version {result.block.version}"
    )
