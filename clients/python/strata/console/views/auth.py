"""Sign in with an API key (auth on, or the admin key for operations) and sign out.

The key is checked by MemoryService itself: a call as a tenant (ListAgents) tells a tenant key; a
tenant call refused with PERMISSION_DENIED followed by an AdminService call that succeeds tells the
admin key. The key then lives only inside the session's clients.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from strata.client import PermissionDeniedError, StrataClientError
from strata.console.pages import (
    Refusal,
    checked_form,
    console_of,
    current_session,
    http_status,
    redirect,
    render,
    text,
)
from strata.console.sessions import COOKIE, Session


def safe_next(value: str) -> str:
    """Where to go after signing in: a path on this console only (never another site)."""
    return value if value.startswith("/") and not value.startswith("//") else "/agents"


async def signin_page(request: Request) -> Response:
    console = console_of(request)
    session = current_session(request) or console.sessions.open(None)
    request.state.new_session = session if current_session(request) is None else None
    return render(
        request, session, "signin.html", next=safe_next(request.query_params.get("next", "")), refusal=None
    )


async def signin(request: Request) -> Response:
    """Check the key with the service; on success replace the pre-sign-in session with a new one."""
    console = console_of(request)
    old, form = await checked_form(request)
    key = text(form, "api_key").strip()
    go = safe_next(text(form, "next"))
    memory = console.memory_client(key or None)
    admin = None
    try:
        if not key:
            raise ValueError("Enter an API key.")
        try:
            await memory.list_agents(page_size=1)
        except PermissionDeniedError:
            admin = console.admin_client(key)
            await admin.list_api_keys(page_size=1)
            go = "/operations"
    except (StrataClientError, ValueError) as error:
        await memory.close()
        if admin is not None:
            await admin.close()
        refusal = (
            Refusal.of(error, "api_key")
            if isinstance(error, StrataClientError)
            else Refusal(str(error), field="api_key")
        )
        status = http_status(error) if isinstance(error, StrataClientError) else 400
        return render(request, old, "signin.html", status, next=go, refusal=refusal)
    await console.sessions.end(old)
    session = console.sessions.open(None)
    session.memory, session.admin, session.signed_in = memory, admin, True
    session.tenant = "admin" if admin is not None else await _tenant_name(session)
    request.state.new_session = session
    return redirect(request, go)


async def _tenant_name(session: Session) -> str | None:
    """The tenant the key names, as the service reports it on an agent (None until it has one)."""
    assert session.memory is not None
    page = await session.memory.list_agents(page_size=1)
    return page.agents[0].tenant_id if page.agents else None


async def signout(request: Request) -> Response:
    session, _ = await checked_form(request)
    await console_of(request).sessions.end(session)
    response = redirect(request, "/signin" if console_of(request).settings.auth else "/agents")
    response.delete_cookie(COOKIE, path="/")
    return response
