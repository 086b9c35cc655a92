"""Sign in with an API key (auth on, or the admin key for operations) and sign out.

The key is checked by MemoryService itself: a call as a tenant (ListAgents) tells a tenant key; a
tenant call refused with PERMISSION_DENIED followed by an AdminService call that succeeds tells the
admin key. With auth off the console acts as its configured tenant and only the admin key signs in
(for the operations page). The key then lives only inside the session's clients.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from strata.client import AsyncAdminClient, AsyncMemoryClient, PermissionDeniedError, StrataClientError
from strata.console.pages import (
    Console,
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
    """The sign-in form, in a session of its own (its form token needs one; it holds no key yet)."""
    session = current_session(request)
    if session is None:
        session = request.state.new_session = console_of(request).sessions.open(None)
    return render(
        request, session, "signin.html", next=safe_next(request.query_params.get("next", "")), refusal=None
    )


async def signin(request: Request) -> Response:
    """Check the key with the service; on success replace the pre-sign-in session with a new one."""
    console = console_of(request)
    old, form = await checked_form(request)
    key = text(form, "api_key").strip()
    go = safe_next(text(form, "next"))
    if not key:
        return render(
            request, old, "signin.html", 400, next=go, refusal=Refusal("Enter an API key.", field="api_key")
        )
    memory = console.memory_client(key)
    try:
        admin = await admin_or_tenant(console, memory, key)
    except StrataClientError as error:
        await memory.close()
        refusal = Refusal.of(error, "api_key")
        return render(request, old, "signin.html", http_status(error), next=go, refusal=refusal)
    if admin is not None:
        go = "/operations"
    await console.sessions.end(old)
    await console.sessions.sweep()
    session = console.sessions.open(None)
    session.memory, session.admin, session.signed_in = memory, admin, True
    session.tenant = "admin" if admin is not None else await _tenant_name(session)
    request.state.new_session = session
    return redirect(request, go)


async def admin_or_tenant(console: Console, memory: AsyncMemoryClient, key: str) -> AsyncAdminClient | None:
    """None for a tenant key, an AdminService client for the admin key; raises the service's refusal.

    With auth off every caller is the configured tenant, so only the admin key is worth a sign-in."""
    if console.settings.auth:
        try:
            await memory.list_agents(page_size=1)
        except PermissionDeniedError:
            pass  # perhaps the admin key: AdminService decides
        else:
            return None
    admin = console.admin_client(key)
    try:
        await admin.list_api_keys(page_size=1)
    except StrataClientError:
        await admin.close()
        raise
    return admin


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
