"""``strata mcp --transport http`` refuses, before any MCP session: no key or one MemoryService does not
know (401), a key that may not use MemoryService (403), a foreign Origin or Host (403 / 421), an
oversized body (413). Each refusal says why."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from strata.client import AdminClient, AsyncMemoryClient, UnauthenticatedError
from tests.mcp.sessions import HttpServer, Tenant, http_session
from tests.security.conftest import ADMIN_KEY

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def post(server: HttpServer, body: Any = INITIALIZE, **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(server.url, json=body, headers={**MCP_HEADERS, **headers})


async def test_a_request_with_the_tenants_key_is_served(mcp_http: HttpServer, tenant: Tenant) -> None:
    response = await post(mcp_http, Authorization=f"Bearer {tenant.key}")
    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "strata"


async def test_a_request_without_a_key_is_refused_with_401(mcp_http: HttpServer) -> None:
    for headers in ({}, {"Authorization": "Basic dXNlcjpwdw=="}, {"Authorization": "Bearer"}):
        response = await post(mcp_http, **headers)
        assert response.status_code == 401
        assert response.json()["error"]["data"] == {"error": "invalid_request"}
        assert "Authorization: Bearer <key>" in response.json()["error"]["message"]
        assert response.headers["www-authenticate"].startswith('Bearer error="invalid_request"')


async def test_a_key_memory_service_does_not_know_is_refused_with_its_message(
    mcp_http: HttpServer, memory_target: str
) -> None:
    wrong = "sk-unknown.000000000000000000000000"
    async with AsyncMemoryClient(memory_target, api_key=wrong, timeout=10) as client:
        with pytest.raises(UnauthenticatedError) as refused:
            await client.list_tools()
    response = await post(mcp_http, Authorization=f"Bearer {wrong}")
    assert response.status_code == 401
    reason = f" (reason: {refused.value.reason})" if refused.value.reason else ""
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32001,
            "message": f"MemoryService refused the API key: {refused.value.message}{reason}",
            "data": {"error": "invalid_token"},
        },
    }


async def test_a_revoked_key_is_refused(mcp_http: HttpServer, memory_target: str, tenant: Tenant) -> None:
    with AdminClient(memory_target, api_key=ADMIN_KEY, timeout=10) as admin:
        created = admin.create_api_key(tenant_id=tenant.name)
        admin.revoke_api_key(key_id=created.api_key.key_id)
    response = await post(mcp_http, Authorization=f"Bearer {created.secret}")
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


async def test_the_admin_key_may_not_use_memory_and_is_refused_with_403(mcp_http: HttpServer) -> None:
    response = await post(mcp_http, Authorization=f"Bearer {ADMIN_KEY}")
    assert response.status_code == 403
    assert response.json()["error"]["data"] == {"error": "insufficient_scope"}
    assert response.json()["error"]["message"].startswith("MemoryService refused the API key: ")


async def test_the_sdk_client_with_a_wrong_key_cannot_open_a_session(mcp_http: HttpServer) -> None:
    with pytest.raises(BaseExceptionGroup) as refused:
        async with http_session(mcp_http.url, "sk-wrong.0000"):
            pass
    (error,) = [leaf for leaf in leaves(refused.value) if isinstance(leaf, MCPError)]
    assert error.message.startswith("MemoryService refused the API key: ")


async def test_a_foreign_origin_or_host_is_refused(mcp_http: HttpServer, tenant: Tenant) -> None:
    key = f"Bearer {tenant.key}"
    foreign_origin = await post(mcp_http, Authorization=key, Origin="https://evil.example")
    assert (foreign_origin.status_code, foreign_origin.text) == (403, "Invalid Origin header")
    local_origin = await post(mcp_http, Authorization=key, Origin="http://localhost:3000")
    assert local_origin.status_code == 200
    foreign_host = await post(mcp_http, Authorization=key, Host="evil.example")
    assert (foreign_host.status_code, foreign_host.text) == (421, "Invalid Host header")


async def test_a_body_over_the_limit_is_refused_with_413(mcp_http: HttpServer, tenant: Tenant) -> None:
    body = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * (8 * 1024 * 1024)}}
    response = await post(mcp_http, body, Authorization=f"Bearer {tenant.key}")
    assert (response.status_code, response.text) == (413, "Request body too large")
