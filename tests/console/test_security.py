"""The console with API keys on: sign-in, tenant isolation through every URL, and forged or replayed
forms refused. Each tenant's agents are made with its own key through strata.client."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import pytest
from playwright.sync_api import APIResponse, BrowserContext, Page, expect

from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import IndexJob
from tests.console.browsing import accessible, form_token, screenshot
from tests.console.conftest import ConsoleServer, tenant_key
from tests.security.conftest import ADMIN_KEY


@dataclass(frozen=True)
class Tenant:
    name: str
    key: str
    agent: pb.Agent
    block: pb.Block
    passage_id: str


def make_tenant(console: ConsoleServer) -> Tenant:
    """A tenant with a key, an agent named after it, its human block and one passage."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    key = tenant_key(console.memory, name)
    with MemoryClient(console.memory, api_key=key, timeout=30) as client:
        agent = client.create_agent(agent=pb.Agent(name=f"agent of {name}"))
        block = client.update_block(
            block=pb.Block(value=f"secret of {name}"), update_mask=["value"], agent_id=agent.id, label="human"
        )
        stored = client.create_passages(agent_id=agent.id, passages=[pb.Passage(text=f"passage of {name}")])
    return Tenant(name, key, agent, block, stored.passages[0].id)


def sign_in(page: Page, console: ConsoleServer, key: str) -> None:
    page.goto(console.url + "/signin")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Signed in as")).to_be_visible()


@pytest.fixture
def alice(auth_console: ConsoleServer) -> Tenant:
    return make_tenant(auth_console)


@pytest.fixture
def bob(auth_console: ConsoleServer) -> Tenant:
    return make_tenant(auth_console)


def post(context: BrowserContext, url: str, form: Mapping[str, str]) -> APIResponse:
    """A form POST with this browser's cookies (as a page's form would send it)."""
    fields: dict[str, str | float | bool] = dict(form)
    return context.request.post(url, form=fields, max_redirects=0)


def test_sign_in_keeps_the_key_out_of_every_page_and_url(
    page: Page, context: BrowserContext, auth_console: ConsoleServer, alice: Tenant
) -> None:
    response = page.goto(auth_console.url + "/agents")
    assert response is not None
    assert page.url.startswith(auth_console.url + "/signin")  # auth on: nothing without signing in
    accessible(page)
    screenshot(page, "signin")
    page.get_by_label("API key").fill("not-a-key-of-anyone")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#api_key-error")).to_contain_text("UNAUTHENTICATED")

    sign_in(page, auth_console, alice.key)
    expect(page.get_by_role("link", name=alice.agent.name, exact=True)).to_be_visible()
    own = f"/agents/{alice.agent.id}"
    for path in ("/agents", own, own + "/prompt", own + "/archival", own + "/recall", own + "/tools"):
        shown = page.goto(auth_console.url + path)
        assert shown is not None
        assert shown.status == 200, path
        assert alice.key not in page.content()
        assert alice.key not in page.url
    (cookie,) = context.cookies()
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Strict"
    assert alice.key not in cookie["value"]
    assert page.evaluate("document.cookie") == ""  # scripts cannot read the session

    page.get_by_role("button", name="Sign out").click()
    page.goto(auth_console.url + f"/agents/{alice.agent.id}")
    assert page.url.startswith(auth_console.url + "/signin")


def test_a_tenant_can_neither_read_nor_change_another_tenants_agents(
    page: Page, context: BrowserContext, auth_console: ConsoleServer, alice: Tenant, bob: Tenant
) -> None:
    sign_in(page, auth_console, alice.key)
    expect(page.get_by_role("link", name=bob.agent.name)).to_have_count(0)
    base = f"{auth_console.url}/agents/{bob.agent.id}"
    reads = [
        "",
        "/prompt",
        "/prompt?preview=1",
        "/archival",
        "/archival?q=passage",
        "/recall",
        "/tools",
        "/delete",
    ]
    reads.append(f"/blocks/{bob.block.id}/history")
    for path in reads:
        response = page.goto(base + path)
        assert response is not None
        assert response.status == 404, path
        assert bob.name not in page.content(), path
    accessible(page)  # the refusal page too

    changes: dict[str, dict[str, str]] = {
        f"/blocks/{bob.block.id}": {
            "value": "overwritten",
            "description": "",
            "limit": "",
            "etag": bob.block.etag,
        },
        f"/blocks/{bob.block.id}/detach": {"etag": bob.block.etag},
        f"/blocks/{bob.block.id}/restore": {"version": "1", "etag": bob.block.etag},
        "/blocks": {"label": "planted", "value": "x", "description": "", "limit": ""},
        "/passages": {"text": "planted", "tags": "", "archive_id": ""},
        f"/passages/{bob.passage_id}/delete": {},
        "/tools": {"tool": "memory_insert", "arguments": '{"label": "human", "new_string": "planted"}'},
        "/prompt/recompile": {},
        "/delete": {"etag": bob.agent.etag},
    }
    for path, fields in changes.items():
        page.goto(auth_console.url + "/agents")
        refused = post(context, base + path, {**fields, "csrf": form_token(page)})
        assert refused.status == 404, (path, refused.status)
    attach = f"{auth_console.url}/agents/{alice.agent.id}/attach"  # B's block into A's agent
    page.goto(auth_console.url + "/agents")
    assert post(context, attach, {"block_id": bob.block.id, "csrf": form_token(page)}).status == 404

    with MemoryClient(auth_console.memory, api_key=bob.key, timeout=10) as client:
        assert client.get_agent(agent_id=bob.agent.id).etag == bob.agent.etag
        assert client.get_block(block_id=bob.block.id).etag == bob.block.etag
        assert [b.label for b in client.list_blocks(agent_id=bob.agent.id).blocks] == ["persona", "human"]
        assert [p.id for p in client.list_passages(agent_id=bob.agent.id).passages] == [bob.passage_id]


def test_forged_and_replayed_forms_are_refused(
    page: Page,
    context: BrowserContext,
    browser_context_b: BrowserContext,
    auth_console: ConsoleServer,
    alice: Tenant,
) -> None:
    sign_in(page, auth_console, alice.key)
    edit = f"{auth_console.url}/agents/{alice.agent.id}/blocks/{alice.block.id}"
    fields = {"value": "forged", "description": "", "limit": "", "etag": alice.block.etag}
    assert post(context, edit, fields).status == 403  # no token
    assert post(context, edit, {**fields, "csrf": "guessed-token"}).status == 403

    other = browser_context_b.new_page()  # a token this session never issued (another browser's)
    sign_in(other, auth_console, alice.key)
    assert post(context, edit, {**fields, "csrf": form_token(other)}).status == 403

    page.goto(auth_console.url + "/agents")
    token = form_token(page)
    cross_site = context.request.post(
        edit, form={**fields, "csrf": token}, headers={"Origin": "https://evil.example"}, max_redirects=0
    )
    assert cross_site.status == 403
    anonymous = page.request.post(
        edit, form={**fields, "csrf": token}, headers={"Cookie": ""}, max_redirects=0
    )
    assert anonymous.status == 403

    page.goto(auth_console.url + "/agents")
    create = {"name": "made once", "system": "", "csrf": form_token(page)}
    first = post(context, auth_console.url + "/agents", create)
    assert first.status == 303
    replayed = post(context, auth_console.url + "/agents", create)
    assert replayed.status == 403
    assert "already sent" in replayed.text()
    with MemoryClient(auth_console.memory, api_key=alice.key, timeout=10) as client:
        assert [a.name for a in client.list_agents().agents].count("made once") == 1
        assert client.get_block(block_id=alice.block.id).value == f"secret of {alice.name}"


def park_a_job(database_url: str, tenant: str) -> None:
    """Park an index job of ``tenant`` as the outbox would after RetrievalService refused it (a fault
    injected through the store: no public call makes delivery give up)."""
    db = Database(database_url)
    try:
        with db.writing() as conn:
            [job] = index_jobs.enqueue(conn, tenant, index_jobs.UPSERT, ["message-gone"])
            unclaimed = IndexJob(job, tenant, index_jobs.UPSERT, "message-gone", 0)
            index_jobs.park(conn, [unclaimed], reason="INVALID_ARGUMENT: refused for the console test")
    finally:
        db.close()


def test_operations_need_the_admin_key(
    page: Page, auth_console: ConsoleServer, auth_memory_database: str, alice: Tenant
) -> None:
    park_a_job(auth_memory_database, alice.name)
    sign_in(page, auth_console, alice.key)
    response = page.goto(auth_console.url + "/operations")
    assert response is not None
    assert response.status == 403
    page.get_by_role("button", name="Sign out").click()

    page.goto(auth_console.url + "/signin")
    page.get_by_label("API key").fill(ADMIN_KEY)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(auth_console.url + "/operations")
    health = page.get_by_role("region", name="Service health")
    expect(health.locator("tbody tr")).to_have_count(2)
    expect(health.locator("td.ok")).to_have_count(2)
    expect(page.get_by_role("region", name="Index health per tenant")).to_contain_text(alice.name)
    parked = page.get_by_role("region", name="Parked index jobs")
    expect(parked.locator("tbody tr", has_text=alice.name)).to_contain_text("refused for the console test")
    response = page.goto(auth_console.url + f"/agents/{alice.agent.id}")  # the admin key is no tenant
    assert response is not None
    assert response.status == 403
    page.goto(auth_console.url + "/operations")
    page.get_by_role("button", name="Reindex").click()
    expect(page.locator("#reindex-status")).to_contain_text("Done", timeout=60_000)
    assert page.locator("#reindex-progress").evaluate("bar => bar.value === bar.max && bar.max > 0")
    accessible(page)
    screenshot(page, "operations")
    page.reload()
    page.get_by_role("button", name=f"Retry {alice.name}'s parked jobs").click()
    expect(page.get_by_role("region", name="Parked index jobs")).not_to_contain_text(alice.name)
