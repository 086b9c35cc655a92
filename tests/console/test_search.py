"""Archival and recall memory through the browser: lists, add/delete, and search hits that show why
they ranked (score, rrf_score, vector_rank, fts_rank) exactly as the service reported them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from strata.client import MemoryClient
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from tests.console.browsing import accessible, screenshot
from tests.console.conftest import ConsoleServer


@pytest.fixture
def api_client(open_console: ConsoleServer) -> Iterator[MemoryClient]:
    with MemoryClient(open_console.memory, tenant=open_console.tenant, timeout=30) as client:
        yield client


PASSAGES = [
    ("The lighthouse keeper logs every ship that passes the northern cape.", ["sea", "log"]),
    ("Sourdough needs a starter fed with flour and water every day.", ["kitchen"]),
    ("Ships passing the cape at night must show a green starboard light.", ["sea"]),
]


def test_archival_search_shows_each_hits_explained_score(
    page: Page, open_console: ConsoleServer, api_client: MemoryClient
) -> None:
    agent = api_client.create_agent(agent=pb.Agent(name="archivist"))
    api_client.create_passages(
        agent_id=agent.id,
        passages=[pb.Passage(text=t, tags=tags) for t, tags in PASSAGES],
        wait_searchable=True,
    )
    page.goto(open_console.url + f"/agents/{agent.id}/archival")
    expect(page.locator("#passages ~ table tbody tr")).to_have_count(3)

    page.get_by_label("Query").fill("ships passing the cape")
    page.get_by_role("button", name="Search").click()
    served = api_client.search_archival(
        agent_id=agent.id, query="ships passing the cape", mode=api.SEARCH_MODE_HYBRID
    )
    hits = page.locator(".hit")
    expect(hits).to_have_count(len(served.hits))
    for index, hit in enumerate(served.hits):
        shown = hits.nth(index)
        expect(shown).to_contain_text(hit.passage.text)
        expect(shown.locator("dd").nth(0)).to_have_text(f"{hit.relevance.score:.5f}")
        expect(shown.locator("dd").nth(1)).to_have_text(f"{hit.relevance.rrf_score:.5f}")
        vector = str(hit.relevance.vector_rank) if hit.relevance.HasField("vector_rank") else "—"
        fts = str(hit.relevance.fts_rank) if hit.relevance.HasField("fts_rank") else "—"
        expect(shown.locator("dd").nth(2)).to_have_text(vector)
        expect(shown.locator("dd").nth(3)).to_have_text(fts)
    accessible(page)
    screenshot(page, "archival")

    page.get_by_label("Mode").select_option("fts")
    page.get_by_label("Tags (comma separated)", exact=True).fill("kitchen")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(".hit")).to_have_count(0)  # the sea passages are filtered out by tag
    page.get_by_label("Query").fill("sourdough starter")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(".hit")).to_have_count(1)
    expect(page.locator(".hit dd").nth(2)).to_have_text("—")  # fts only: no vector rank
    expect(page.locator(".hit dd").nth(4)).to_have_text("fts")

    page.get_by_label("From (YYYY-MM-DD)").fill("yesterday")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#q-error")).to_contain_text("YYYY-MM-DD")

    page.goto(open_console.url + f"/agents/{agent.id}/archival")
    page.get_by_label("Text", exact=True).fill("A passage added by hand.")
    page.get_by_label("Tags of the new passage (comma separated)").fill("manual")
    page.get_by_role("button", name="Add passage").click()
    expect(page.locator("#passages ~ table tbody tr")).to_have_count(4)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete passage 4").click()
    expect(page.locator("#passages ~ table tbody tr")).to_have_count(3)
    texts = [p.text for p in api_client.list_passages(agent_id=agent.id).passages]
    assert "A passage added by hand." not in texts


def test_recall_lists_and_searches_messages_with_scores(
    page: Page, open_console: ConsoleServer, api_client: MemoryClient
) -> None:
    agent = api_client.create_agent(agent=pb.Agent(name="talker"))
    api_client.append_messages(
        agent_id=agent.id,
        messages=[
            pb.Message(role=pb.MESSAGE_ROLE_USER, content="My cat Miso loves the windowsill."),
            pb.Message(role=pb.MESSAGE_ROLE_ASSISTANT, content="Miso sounds like a sunny cat."),
            pb.Message(role=pb.MESSAGE_ROLE_USER, content="I am flying to Lisbon on Friday."),
        ],
        wait_searchable=True,
    )
    page.goto(open_console.url + f"/agents/{agent.id}/recall")
    expect(page.locator("#messages ~ table tbody tr")).to_have_count(3)
    page.get_by_label("user").check()
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#messages ~ table tbody tr")).to_have_count(2)
    page.get_by_label("Search query (empty: list)").fill("cat on the windowsill")
    page.get_by_role("button", name="Show").click()
    served = api_client.search_messages(
        agent_id=agent.id, query="cat on the windowsill", roles=[pb.MESSAGE_ROLE_USER]
    )
    expect(page.locator(".hit")).to_have_count(len(served.hits))
    expect(page.locator(".hit").first).to_contain_text(served.hits[0].message.content)
    expect(page.locator(".hit").first.locator("dd").first).to_have_text(
        f"{served.hits[0].relevance.score:.5f}"
    )
    accessible(page)
    screenshot(page, "recall")


def test_bad_query_strings_are_refused_with_a_message(
    page: Page, open_console: ConsoleServer, api_client: MemoryClient
) -> None:
    agent = api_client.create_agent(agent=pb.Agent(name="strict"))
    block = api_client.get_block(agent_id=agent.id, label="human")
    base = f"{open_console.url}/agents/{agent.id}"
    refused = {
        "/agents?q=strict&start=ten": "whole number",
        f"/agents/{agent.id}/prompt?mode=fancy": "Unknown render mode",
        f"/agents/{agent.id}/blocks/{block.id}/history?from=first": "version numbers",
        f"/agents/{agent.id}/recall?q=x&end=31-12-2026": "YYYY-MM-DD",
        f"/agents/{agent.id}/archival?q=x&mode=psychic": "mode must be one of",
    }
    for path, message in refused.items():
        response = page.goto(open_console.url + path)
        assert response is not None
        assert response.status == 400, path
        expect(page.locator(".refusal")).to_contain_text(message)
    response = page.goto(base.replace(agent.id, "agent-00000000-0000-0000-0000-000000000000"))
    assert response is not None
    assert response.status == 404
    expect(page.locator(".refusal")).to_contain_text("NOT_FOUND")
