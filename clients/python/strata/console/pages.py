"""What every view shares: the acting session, checked forms, rendering and the service's errors.

Rules:
- A GET with no session opens one when auth is off (acting as the configured tenant) and sends the
  browser to sign in when it is on. The operations page needs a session holding the admin key.
- A POST is a change: it needs a live session, a same-origin ``Origin`` when the browser sends one,
  and a one-time form token (:mod:`strata.console.sessions`); anything else is 403 and changes nothing.
- A service refusal is shown with the service's own message, next to the field it names, with the
  HTTP status that matches its gRPC code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from strata.client import AsyncAdminClient, AsyncMemoryClient, StrataClientError
from strata.console.formatting import budget_level, budget_percent, when
from strata.console.sessions import COOKIE, Session, SessionStore
from strata.console.settings import ConsoleSettings

HERE = Path(__file__).parent

HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}


def http_status(error: StrataClientError) -> int:
    """The HTTP status a page showing this refusal is served with (502 for the unexpected)."""
    return HTTP_STATUS.get(error.code, 502)


@dataclass
class Refusal:
    """A service error as a page shows it: the message, its reason, and the field it concerns."""

    message: str
    reason: str = ""
    field: str = ""
    fields: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, error: StrataClientError, default_field: str = "") -> Refusal:
        named = {v.field.rsplit(".", 1)[-1]: v.description for v in error.field_violations}
        return cls(f"{error.code.name}: {error.message}", error.reason, default_field, named)

    def at(self, name: str) -> str:
        """The message to show beside field ``name`` (empty when it is not about that field)."""
        if name in self.fields:
            return self.fields[name]
        return self.message if name == self.field else ""


@dataclass
class Console:
    """The running console: settings, sessions, templates, and the shared client when auth is off."""

    settings: ConsoleSettings
    sessions: SessionStore
    templates: Environment
    shared: AsyncMemoryClient | None = None

    @classmethod
    def build(cls, settings: ConsoleSettings) -> Console:
        templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        templates.globals.update(budget_level=budget_level, budget_percent=budget_percent, when=when)
        return cls(settings, SessionStore(settings.session_minutes * 60.0), templates)

    def memory_client(self, api_key: str | None) -> AsyncMemoryClient:
        """A MemoryService client sending ``api_key`` (auth on) or the configured tenant (auth off)."""
        tenant = None if api_key else self.settings.tenant
        return AsyncMemoryClient(
            self.settings.memory_target, tenant=tenant, api_key=api_key, timeout=self.settings.timeout
        )

    def admin_client(self, api_key: str) -> AsyncAdminClient:
        return AsyncAdminClient(self.settings.memory_target, api_key=api_key, timeout=self.settings.timeout)

    async def close(self) -> None:
        await self.sessions.close()
        if self.shared is not None:
            await self.shared.close()


def console_of(request: Request) -> Console:
    found: Console = request.app.state.console
    return found


def current_session(request: Request) -> Session | None:
    return console_of(request).sessions.get(request.cookies.get(COOKIE))


def memory_of(request: Request, session: Session) -> AsyncMemoryClient:
    """The client this session's calls go through; 403 for a session that holds only the admin key."""
    console = console_of(request)
    if session.memory is not None and not session.is_admin:
        return session.memory
    if console.settings.auth:
        raise HTTPException(403, "The admin key may use only the operations page: sign in with a tenant key.")
    if console.shared is None:
        console.shared = console.memory_client(None)
    return console.shared


def acting(request: Request) -> Session:
    """The session a page acts as; opens one when auth is off, else redirects to sign in (303)."""
    found = current_session(request)
    console = console_of(request)
    if found is not None and (found.signed_in or not console.settings.auth):
        return found
    if console.settings.auth:
        raise HTTPException(303, headers={"Location": f"/signin?next={request.url.path}"})
    opened = console.sessions.open(console.settings.tenant)
    request.state.new_session = opened
    return opened


async def checked_form(request: Request) -> tuple[Session, FormData]:
    """The session and form of a POST that passed the checks; 403 (nothing changed) otherwise."""
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        raise HTTPException(403, "Refused: the form came from another site.")
    session = current_session(request)
    if session is None:
        raise HTTPException(403, "Refused: no session (sign in, or reload the page, and send it again).")
    form = await request.form()
    token = form.get("csrf")
    if not session.consume_token(token if isinstance(token, str) else ""):
        raise HTTPException(
            403, "Refused: this form was already sent, has expired or was not issued here. Reload the page."
        )
    return session, form


def text(form: FormData, name: str, default: str = "") -> str:
    value = form.get(name)
    return value if isinstance(value, str) else default


def render(
    request: Request, session: Session | None, template: str, status: int = 200, **values: Any
) -> Response:
    """The page ``template`` with a fresh form token, the session's tenant and ``values``."""
    console = console_of(request)
    token = session.issue_token() if session is not None else ""
    page = console.templates.get_template(template).render(
        request=request, session=session, csrf=token, auth=console.settings.auth, **values
    )
    response = HTMLResponse(page, status_code=status)
    return with_cookie(request, response)


def with_cookie(request: Request, response: Response) -> Response:
    """Sets the cookie of a session opened while handling this request."""
    opened: Session | None = getattr(request.state, "new_session", None)
    if opened is not None:
        console = console_of(request)
        response.set_cookie(
            COOKIE,
            opened.id,
            max_age=console.settings.session_minutes * 60,
            httponly=True,
            samesite="strict",
            secure=console.settings.secure_cookie,
            path="/",
        )
    return response


def redirect(request: Request, location: str) -> Response:
    """303 to ``location`` after a change (post/redirect/get)."""
    return with_cookie(request, RedirectResponse(location, status_code=303))
