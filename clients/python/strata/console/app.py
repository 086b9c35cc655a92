"""The console's Starlette application: routes, static assets, error pages and security headers.

Every URL names what it shows, so a link can be shared (within the same tenant: each page asks the
service as the signed-in tenant, which answers NOT_FOUND for another tenant's ids).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from strata.console.pages import HERE, Console, Refusal, current_session, render
from strata.console.settings import ConsoleSettings
from strata.console.views import agents, auth, history, memory, operations, prompt, search, tools

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""Every asset comes from the console itself (no CDN); no inline script can run."""


async def home(request: Request) -> Response:
    return RedirectResponse("/agents", status_code=303)


def routes() -> list[Route | Mount]:
    agent = "/agents/{agent_id}"
    block = agent + "/blocks/{block_id}"
    return [
        Route("/", home),
        Route("/signin", auth.signin_page, methods=["GET"]),
        Route("/signin", auth.signin, methods=["POST"]),
        Route("/signout", auth.signout, methods=["POST"]),
        Route("/agents", agents.agents_page, methods=["GET"]),
        Route("/agents", agents.create_agent, methods=["POST"]),
        Route(agent, memory.memory_page, methods=["GET"]),
        Route(agent + "/delete", agents.confirm_delete, methods=["GET"]),
        Route(agent + "/delete", agents.delete_agent, methods=["POST"]),
        Route(agent + "/blocks", memory.create_block, methods=["POST"]),
        Route(agent + "/attach", memory.attach_block, methods=["POST"]),
        Route(block, memory.edit_block, methods=["POST"]),
        Route(block + "/detach", memory.detach_block, methods=["POST"]),
        Route(block + "/history", history.history_page, methods=["GET"]),
        Route(block + "/restore", history.restore, methods=["POST"]),
        Route(agent + "/prompt", prompt.prompt_page, methods=["GET"]),
        Route(agent + "/prompt/recompile", prompt.recompile, methods=["POST"]),
        Route(agent + "/archival", search.archival_page, methods=["GET"]),
        Route(agent + "/passages", search.add_passage, methods=["POST"]),
        Route(agent + "/passages/{passage_id}/delete", search.delete_passage, methods=["POST"]),
        Route(agent + "/recall", search.recall_page, methods=["GET"]),
        Route(agent + "/tools", tools.tools_page, methods=["GET"]),
        Route(agent + "/tools", tools.run_tool, methods=["POST"]),
        Route("/operations", operations.operations_page, methods=["GET"]),
        Route("/operations/retry", operations.retry, methods=["POST"]),
        Route("/operations/reindex", operations.reindex, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]


async def http_error(request: Request, error: Exception) -> Response:
    """Redirects pass through; any other HTTP error is a page saying what to do."""
    assert isinstance(error, HTTPException)
    if 300 <= error.status_code < 400:
        return Response(status_code=error.status_code, headers=error.headers)
    return render(
        request, current_session(request), "error.html", error.status_code, refusal=Refusal(error.detail)
    )


class SecurityHeaders(BaseHTTPMiddleware):
    """CSP, no framing, no sniffing, no referrer to other sites, and no caching of pages holding a
    tenant's data."""

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"  # no-referrer would make forms send Origin: null
        if not request.url.path.startswith("/static/"):
            response.headers["Cache-Control"] = "no-store"
        return response


def create_app(settings: ConsoleSettings) -> Starlette:
    """The console for these settings; its gRPC clients are closed when the app shuts down."""
    console = Console.build(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await console.close()

    app = Starlette(
        routes=routes(),
        middleware=[Middleware(SecurityHeaders)],
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
    app.state.console = console
    return app
