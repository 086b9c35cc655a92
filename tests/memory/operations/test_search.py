"""Archival and recall search and the three external tools, through a real RetrievalService.

RetrievalService runs in-process on a free port (real embedder, Edge shard and Tantivy in a temp dir);
writes reach it through the real outbox worker. DESIGN.md: filters (scope, tags any/all, roles, time
range) apply inside each leg; results carry id, timestamp, content, tags and relevance; hits are read
from the store, so only what is stored is shown; archival insert returns the new passage id.

The embedder's graph is built once per session, or kept in ``STRATA_TEST_MODEL_CACHE`` when set
(``make mutation`` sets it; see tests/retrieval/conftest.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from strata_memory.domain.model import Block, RecompilePolicy, SearchMode
from strata_memory.indexing.outbox import OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.operations.archival import Archives
from strata_memory.operations.external_tools import ExternalTools
from strata_memory.operations.messages import Messages
from strata_memory.operations.search import LegWeights, Search, SearchWindow
from strata_memory.operations.tools import ToolCall, ToolRunner
from strata_memory.store.records import AgentRecord, PassageRecord
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_serving.errors import InvalidArgument
from tests.memory.operations.conftest import NOW, TENANT, Ops, agent_record, clock, message_record
from tests.retrieval.service_fixtures import running_service

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> OnnxSentenceEmbedder:
    kept = os.environ.get("STRATA_TEST_MODEL_CACHE")
    cache = Path(kept) if kept else tmp_path_factory.mktemp("models")
    return OnnxSentenceEmbedder.load(cache, threads=1, batch_size=16)


@dataclass
class Searching:
    ops: Ops
    worker: OutboxWorker
    search: Search
    external: ExternalTools
    runner: ToolRunner
    messages: Messages

    async def deliver(self) -> None:
        while await self.worker.deliver_once():
            pass


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def retrieval(
    tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> AsyncIterator[RetrievalConnection]:
    """One RetrievalService for the module: every test's documents are scoped by its own agent."""
    async with running_service(tmp_path_factory.mktemp("retrieval"), embedder) as service:
        client = RetrievalConnection(service.app.address)
        try:
            yield client
        finally:
            await client.close()


@pytest_asyncio.fixture(loop_scope="module")
async def searching(ops: Ops, retrieval: RetrievalConnection) -> Searching:
    worker = OutboxWorker(ops.db, retrieval)
    search = Search(ops.db, retrieval, archival=LegWeights(), recall=LegWeights(depth=40))
    external = ExternalTools(
        Archives(ops.db, ops.prompts, worker), search, worker, clock, insert_wait_seconds=0
    )
    return Searching(
        ops=ops,
        worker=worker,
        search=search,
        external=external,
        runner=ToolRunner(ops.db, ops.prompts, clock, external),
        messages=Messages(ops.db, worker),
    )


async def _agent(
    ops: Ops, *, timezone: str = "UTC", policy: RecompilePolicy = RecompilePolicy.ON_EDIT
) -> AgentRecord:
    return await ops.agents.create(agent_record(timezone=timezone, policy=policy), [Block("human", limit=9)])


async def _insert(
    s: Searching, agent: AgentRecord, text: str, tags: tuple[str, ...] = (), created_us: int = 0
) -> str:
    passage = PassageRecord(
        id="", tenant_id=TENANT, archive_id="", text=text, tags=tags, created_us=created_us
    )
    written = await s.ops.archives.insert(TENANT, agent_id=agent.id, archive_id="", passages=[passage])
    return written.items[0].id


def _us(days_before_now: float) -> int:
    return int((NOW - timedelta(days=days_before_now)).timestamp() * 1_000_000)


async def test_archival_search_through_the_tool(searching: Searching) -> None:
    s = searching
    agent = await _agent(s.ops, timezone="Europe/Paris")
    other = await _agent(s.ops)
    tea = await _insert(s, agent, "Bob drinks green tea every morning", ("drinks", "bob"), _us(1))
    coffee = await _insert(s, agent, "Alice prefers strong coffee", ("drinks",), _us(2))
    await _insert(s, agent, "The office moved to Berlin in May", ("work",), _us(3))
    await _insert(s, other, "Bob's tea is another agent's memory", ("drinks", "bob"), _us(1))
    await s.deliver()

    text = await s.external.run(
        "archival_memory_search", json.dumps({"query": "tea", "tags": ["bob"]}), agent
    )
    found = json.loads(text)
    assert [hit["id"] for hit in found] == [tea]
    hit = found[0]
    assert hit["content"] == "Bob drinks green tea every morning"
    assert hit["tags"] == ["drinks", "bob"]
    assert hit["timestamp"] == "2026-07-31T20:24:28+02:00"  # a day before the clock, in Paris
    relevance = hit["relevance"]
    assert relevance["search_mode"] == "hybrid"
    assert relevance["rrf_score"] > 0
    assert {"vector_rank", "fts_rank"} & set(relevance)

    both = json.loads(
        await s.external.run(
            "archival_memory_search",
            json.dumps({"query": "drink", "tags": ["drinks", "bob"], "tag_match_mode": "all"}),
            agent,
        )
    )
    assert [hit["id"] for hit in both] == [tea]
    any_drink = json.loads(
        await s.external.run(
            "archival_memory_search", json.dumps({"query": "drink", "tags": ["drinks"], "top_k": 5}), agent
        )
    )
    assert sorted(hit["id"] for hit in any_drink) == sorted([tea, coffee])
    one = json.loads(
        await s.external.run("archival_memory_search", json.dumps({"query": "drinks", "top_k": 1}), agent)
    )
    assert len(one) == 1

    window = {"query": "drinks", "start_datetime": "2026-07-31T00:00:00+00:00", "end_datetime": "2026-07-31"}
    recent = json.loads(await s.external.run("archival_memory_search", json.dumps(window), agent))
    assert [hit["id"] for hit in recent] == [tea]


async def test_an_agent_without_archives_finds_nothing(searching: Searching) -> None:
    agent = await _agent(searching.ops)
    assert (
        await searching.search.archival(TENANT, agent.id, SearchWindow("tea"), tags=[], match_all=False) == []
    )
    assert await searching.external.run("archival_memory_search", '{"query": "tea"}', agent) == "[]"


async def test_a_deleted_passage_is_never_shown(searching: Searching) -> None:
    s = searching
    agent = await _agent(s.ops)
    kept = await _insert(s, agent, "tea with Bob")
    gone = await _insert(s, agent, "tea with Carol")
    await s.deliver()
    with s.ops.db.writing() as conn:  # deleted in the store, not yet from the index
        from strata_memory.store import archives as archive_rows

        archive_rows.delete_passage(conn, TENANT, gone)
    hits = await s.search.archival(TENANT, agent.id, SearchWindow("tea"), tags=[], match_all=False)
    assert [h.item.id for h in hits] == [kept]


@pytest.mark.parametrize(("mode", "leg"), [(SearchMode.VECTOR, "vector_rank"), (SearchMode.FTS, "fts_rank")])
async def test_a_single_leg_search_reports_its_mode(searching: Searching, mode: SearchMode, leg: str) -> None:
    s = searching
    agent = await _agent(s.ops)
    await _insert(s, agent, "tea with Bob")
    await s.deliver()
    hits = await s.search.archival(TENANT, agent.id, SearchWindow("tea", mode=mode), tags=[], match_all=False)
    assert [h.search_mode for h in hits] == [mode]
    assert getattr(hits[0], leg) == 1
    other_leg = "fts_rank" if leg == "vector_rank" else "vector_rank"
    assert getattr(hits[0], other_leg) is None


async def test_search_refuses_bad_windows(searching: Searching) -> None:
    s = searching
    agent = await _agent(s.ops)
    await _insert(s, agent, "tea")
    with pytest.raises(InvalidArgument) as caught:
        await s.search.archival(TENANT, agent.id, SearchWindow("x" * 10_001), tags=[], match_all=False)
    assert caught.value.message == "query: is 10001 characters; at most 10000"
    await s.search.archival(TENANT, agent.id, SearchWindow("x" * 10_000), tags=[], match_all=False)
    late, early = NOW, NOW - timedelta(days=1)
    with pytest.raises(InvalidArgument) as caught:
        await s.search.recall(
            TENANT, agent.id, SearchWindow("x", start=late, end=early), roles=[], conversation_id=""
        )
    assert caught.value.message == "start_time: is after end_time"
    with pytest.raises(InvalidArgument):
        await s.search.archival(TENANT, agent.id, SearchWindow("x"), tags=["x" * 101], match_all=False)


async def test_conversation_search_through_the_tool(searching: Searching) -> None:
    s = searching
    agent = await _agent(s.ops, timezone="America/New_York")
    two_hours_ago = int((NOW - timedelta(hours=2)).timestamp() * 1_000_000)
    messages = [
        message_record("user", "I love green tea", created_us=two_hours_ago),
        message_record("assistant", "Noted: green tea it is", created_us=two_hours_ago),
    ]
    await s.messages.append(TENANT, agent.id, "default", messages)
    await s.ops.agents.create_conversation(TENANT, agent.id, "c2")
    await s.messages.append(
        TENANT,
        agent.id,
        "c2",
        [message_record("user", "tea in the other chat", created_us=two_hours_ago)],
    )
    await s.deliver()

    text = await s.external.run(
        "conversation_search", json.dumps({"query": "green tea", "roles": ["assistant"]}), agent
    )
    decoded = json.loads(text)
    assert decoded["message"] == "Showing 1 results:"
    result = decoded["results"][0]
    assert (result["role"], result["content"], result["time_ago"]) == (
        "assistant",
        "Noted: green tea it is",
        "2h ago",
    )
    assert result["timestamp"] == "2026-08-01T12:24:28-04:00"

    every = json.loads(await s.external.run("conversation_search", '{"query": "tea", "limit": 10}', agent))
    assert every["message"] == "Showing 3 results:"  # every conversation of the agent
    hits = await s.search.recall(
        TENANT, agent.id, SearchWindow("tea", limit=10), roles=["user", "user"], conversation_id="c2"
    )
    assert [h.item.content for h in hits] == ["tea in the other chat"]
    none = json.loads(
        await s.external.run("conversation_search", '{"query": "tea", "start_date": "2026-08-02"}', agent)
    )
    assert none == {"message": "No results found.", "results": []}


async def test_archival_insert_through_the_runner(searching: Searching) -> None:
    s = searching
    agent = await _agent(s.ops)
    run = await s.runner.execute(
        ToolCall(
            TENANT,
            agent.id,
            "default",
            "archival_memory_insert",
            '{"content": "Bob likes tea", "tags": ["bob", "drinks"]}',
        )
    )
    assert run.ok
    assert run.prompt_recompiled is True
    passage_id = run.text.split("passage ", 1)[1].split(" ", 1)[0]
    assert run.text == (
        f"Inserted into archival memory as passage {passage_id} with tags bob, drinks. "
        "It is stored and becomes searchable as soon as indexing catches up."
    )
    assert json.loads(run.envelope)["status"] == "OK"
    text = (await s.ops.prompts.get(TENANT, agent.id, "default")).prompt.text
    assert "- Available archival memory tags: bob, drinks\n" in text

    await s.deliver()
    searched = await s.runner.execute(
        ToolCall(TENANT, agent.id, "default", "archival_memory_search", '{"query": "tea"}')
    )
    assert [hit["id"] for hit in json.loads(searched.text)] == [passage_id]
    assert searched.prompt_recompiled is False


async def test_an_insert_that_is_searchable_says_so(searching: Searching) -> None:
    s = searching
    s.worker.start()
    try:
        external = ExternalTools(
            Archives(s.ops.db, s.ops.prompts, s.worker), s.search, s.worker, clock, insert_wait_seconds=30
        )
        agent = await _agent(s.ops, policy=RecompilePolicy.EXPLICIT)
        text = await external.run("archival_memory_insert", '{"content": "untagged"}', agent)
        assert text.startswith("Inserted into archival memory as passage passage-")
        assert text.endswith(".")
        assert " with tags " not in text
        assert "catches up" not in text
    finally:
        await s.worker.stop()


async def test_an_explicit_agent_is_not_recompiled_by_an_insert(searching: Searching) -> None:
    s = searching
    agent = await _agent(s.ops, policy=RecompilePolicy.EXPLICIT)
    run = await s.runner.execute(
        ToolCall(TENANT, agent.id, "default", "archival_memory_insert", '{"content": "x"}')
    )
    assert (run.ok, run.prompt_recompiled) == (True, False)


async def test_a_refused_search_tool_is_a_failed_result_in_the_agents_zone(searching: Searching) -> None:
    s = searching
    agent = await _agent(s.ops, timezone="Europe/Paris")
    run = await s.runner.execute(ToolCall(TENANT, agent.id, "default", "conversation_search", '{"limit": 0}'))
    assert (run.ok, run.reason) == (False, "INVALID_TOOL_ARGUMENTS")
    assert run.text == "conversation_search: 'limit' must be between 1 and 100, got 0."
    assert json.loads(run.envelope)["time"] == "2026-08-01 08:24:28 PM CEST+0200"


async def test_leg_weights_and_k_reach_the_fusion(
    searching: Searching, retrieval: RetrievalConnection
) -> None:
    """score = sum of w_leg / (k + rank_leg) (DESIGN.md); a lone document ranks first in both legs."""
    s = searching
    agent = await _agent(s.ops)
    await _insert(s, agent, "green tea with Bob")
    await s.deliver()
    weighted = Search(
        s.ops.db, retrieval, archival=LegWeights(vector=2.0, fts=0.5, rrf_k=1.0), recall=LegWeights()
    )
    hits = await weighted.archival(TENANT, agent.id, SearchWindow("green tea"), tags=[], match_all=False)
    assert [(h.vector_rank, h.fts_rank) for h in hits] == [(1, 1)]
    assert hits[0].rrf_score == pytest.approx(2.0 / (1.0 + 1) + 0.5 / (1.0 + 1))
    default = await s.search.archival(TENANT, agent.id, SearchWindow("green tea"), tags=[], match_all=False)
    assert default[0].rrf_score == pytest.approx(2 / 61)


LAST_US = 253_402_300_799_999_999
"""9999-12-31T23:59:59.999999Z, the last moment AppendMessages and CreatePassages accept."""
FIRST_US = -62_135_596_800_000_000
"""0001-01-01T00:00:00Z, the first."""


@pytest.mark.parametrize("timezone", ["Pacific/Kiritimati", "Etc/GMT+12", "UTC"])
async def test_the_tools_show_the_first_and_last_accepted_moments_in_any_zone(
    searching: Searching, timezone: str
) -> None:
    """Microseconds divided as a float rounded 9999-12-31T23:59:59.999999 up to year 10000: every
    search of the agent failed for good. The edges are shown, in UTC where the zone has no such date."""
    s = searching
    agent = await _agent(s.ops, timezone=timezone)
    await _insert(s, agent, "the very last boat", (), LAST_US)
    await _insert(s, agent, "the very first boat", (), FIRST_US)
    edge = [message_record("user", "the very last boat sails", created_us=LAST_US)]
    await s.messages.append(TENANT, agent.id, "default", edge)
    await s.deliver()

    found = json.loads(await s.external.run("archival_memory_search", '{"query": "boat"}', agent))
    recalled = json.loads(await s.external.run("conversation_search", '{"query": "boat"}', agent))

    stamps = sorted(datetime.fromisoformat(hit["timestamp"]) for hit in found)
    assert stamps == [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
    ]
    (result,) = recalled["results"]
    assert datetime.fromisoformat(result["timestamp"]) == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
