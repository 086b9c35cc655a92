"""Archives and passages, recall messages, and attached files, as the operations store them
(DESIGN.md "Archival and recall": an agent's default archive is created on first insert; every write
commits with its indexing job; messages are persisted with role, conversation and sequence)."""

from __future__ import annotations

import re

import pytest

from strata_memory.domain.errors import AgentNotFound, ConversationNotFound, FileNotFound
from strata_memory.domain.model import Block
from strata_memory.operations.archival import checked_passage
from strata_memory.operations.messages import ROLES, checked_messages
from strata_memory.store import index_jobs
from strata_memory.store.records import (
    AgentRecord,
    ArchiveRecord,
    FileRecord,
    MessageRecord,
    Page,
    PassageRecord,
    ToolCallRecord,
)
from strata_serving.errors import InvalidArgument, NotFound
from tests.memory.operations.conftest import OTHER_TENANT, TENANT, UUID, Ops, agent_record, message_record


def _passage(text: str = "met Bob", tags: tuple[str, ...] = (), created_us: int = 0) -> PassageRecord:
    return PassageRecord(id="", tenant_id="", archive_id="", text=text, tags=tags, created_us=created_us)


async def _agent(ops: Ops, name: str = "Sam") -> AgentRecord:
    return await ops.agents.create(agent_record(name=name), [Block("human", limit=5)])


def _pending(ops: Ops) -> int:
    with ops.db.reading() as conn:
        return index_jobs.pending(conn)


# --- passages ----------------------------------------------------------------------------------


def test_checked_passage_normalises_text_and_tags() -> None:
    checked = checked_passage(_passage("a\r\nb", (" x ", "x", "y")), 0)
    assert (checked.text, checked.tags) == ("a\nb", ("x", "y"))


@pytest.mark.parametrize(
    ("passage", "message"),
    [
        (_passage("  \n"), "passages[3].text: must not be empty"),
        (_passage("x" * 100_001), "passages[3].text: is 100001 characters; at most 100000"),
        (
            _passage("ok", tuple(f"t{i}" for i in range(33))),
            "passages[3].tags: at most 32 tags of 1-100 characters each",
        ),
        (_passage("ok", ("good", " ")), "passages[3].tags: at most 32 tags of 1-100 characters each"),
        (_passage("ok", ("x" * 101,)), "passages[3].tags: at most 32 tags of 1-100 characters each"),
    ],
)
def test_checked_passage_refuses(passage: PassageRecord, message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        checked_passage(passage, 3)
    assert caught.value.message == message


def test_checked_passage_limits_are_inclusive() -> None:
    checked = checked_passage(_passage("x" * 100_000, (*(str(i) for i in range(31)), "y" * 100)), 0)
    assert len(checked.tags) == 32


async def test_first_insert_creates_the_default_archive(ops: Ops) -> None:
    agent = await _agent(ops)
    written = await ops.archives.insert(
        TENANT, agent_id=agent.id, archive_id="", passages=[_passage("one", ("a",)), _passage("two")]
    )
    first, second = written.items
    assert (first.text, first.tags, first.tenant_id) == ("one", ("a",), TENANT)
    assert first.archive_id == second.archive_id
    assert re.fullmatch(f"archive-{UUID}", first.archive_id)
    assert re.fullmatch(f"passage-{UUID}", first.id)
    assert second.created_us == first.created_us + 1  # one microsecond apart: listing keeps call order
    assert len(written.job_ids) == 2
    assert _pending(ops) == 2
    assert ops.queue.notified == 1
    archive = await ops.archives.get(TENANT, first.archive_id)
    assert archive.name == "Sam's archive"
    assert archive.description == "Default archive, created on the agent's first archival insert"
    assert archive.agent_ids == (agent.id,)
    again = await ops.archives.insert(TENANT, agent_id=agent.id, archive_id="", passages=[_passage("three")])
    assert again.items[0].archive_id == first.archive_id  # the same default archive
    listed, total = await ops.archives.passages(TENANT, archive_id="", agent_id=agent.id, page=Page())
    assert ([p.text for p in listed], total) == (["one", "two", "three"], 3)


async def test_a_given_creation_time_is_kept(ops: Ops) -> None:
    agent = await _agent(ops)
    written = await ops.archives.insert(
        TENANT, agent_id=agent.id, archive_id="", passages=[_passage(created_us=42)]
    )
    assert written.items[0].created_us == 42


async def test_an_unnamed_agents_default_archive_is_named_by_its_id(ops: Ops) -> None:
    agent = await _agent(ops, name="")
    written = await ops.archives.insert(TENANT, agent_id=agent.id, archive_id="", passages=[_passage()])
    assert (await ops.archives.get(TENANT, written.items[0].archive_id)).name == f"{agent.id}'s archive"


@pytest.mark.parametrize(
    ("count", "agent", "archive", "message"),
    [
        (0, "a", "", "passages: must contain at least one passage"),
        (1001, "a", "", "passages: at most 1000 per call"),
        (1, "", "", "agent_id: name an agent (its default archive) or an archive_id"),
    ],
)
async def test_insert_refuses_bad_batches(
    ops: Ops, count: int, agent: str, archive: str, message: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await ops.archives.insert(TENANT, agent_id=agent, archive_id=archive, passages=[_passage()] * count)
    assert caught.value.message == message
    assert (_pending(ops), ops.queue.notified) == (0, 0)


async def test_archives_create_attach_list_delete(ops: Ops) -> None:
    one, two = await _agent(ops), await _agent(ops, "Two")
    with pytest.raises(InvalidArgument) as caught:
        await ops.archives.create(
            ArchiveRecord(id="", tenant_id=TENANT, name=" ", description="", created_us=0), ""
        )
    assert caught.value.message == "archive.name: is required"
    shared = await ops.archives.create(
        ArchiveRecord(id="", tenant_id=TENANT, name="team", description="d", created_us=0), one.id
    )
    assert (shared.name, shared.description, shared.agent_ids) == ("team", "d", (one.id,))
    assert re.fullmatch(f"archive-{UUID}", shared.id)
    loose = await ops.archives.create(
        ArchiveRecord(id="", tenant_id=TENANT, name="loose", description="", created_us=0), ""
    )
    assert loose.agent_ids == ()
    attached = await ops.archives.attach(TENANT, two.id, shared.id, attach=True)
    assert sorted(attached.agent_ids) == sorted([one.id, two.id])
    assert [a.id for a in await ops.archives.listing(TENANT, two.id, Page())] == [shared.id]
    assert sorted(a.name for a in await ops.archives.listing(TENANT, "", Page())) == ["loose", "team"]
    detached = await ops.archives.attach(TENANT, one.id, shared.id, attach=False)
    assert detached.agent_ids == (two.id,)
    with pytest.raises(AgentNotFound):
        await ops.archives.listing(OTHER_TENANT, one.id, Page())
    with pytest.raises(AgentNotFound):
        await ops.archives.create(
            ArchiveRecord(id="", tenant_id=TENANT, name="x", description="", created_us=0), "agent-404"
        )

    await ops.archives.insert(TENANT, agent_id="", archive_id=shared.id, passages=[_passage("in team")])
    text = (await ops.prompts.get(TENANT, two.id, "default")).prompt.text
    assert "- 1 total memories you created are stored in archival memory" in text
    await ops.archives.delete(TENANT, shared.id)
    with pytest.raises(NotFound):
        await ops.archives.get(TENANT, shared.id)
    text = (await ops.prompts.get(TENANT, two.id, "default")).prompt.text
    assert "total memories" not in text  # recompiled: the archive and its passage are gone
    assert ops.queue.notified == 2


async def test_archives_are_per_tenant(ops: Ops) -> None:
    agent = await _agent(ops)
    theirs = await ops.archives.create(
        ArchiveRecord(id="", tenant_id=OTHER_TENANT, name="x", description="", created_us=0), ""
    )
    with pytest.raises(NotFound):
        await ops.archives.attach(TENANT, agent.id, theirs.id, attach=True)
    with pytest.raises(NotFound):
        await ops.archives.insert(TENANT, agent_id="", archive_id=theirs.id, passages=[_passage()])
    with pytest.raises(NotFound):
        await ops.archives.passages(TENANT, archive_id=theirs.id, agent_id="", page=Page())
    with pytest.raises(NotFound):
        await ops.archives.delete(TENANT, theirs.id)
    assert (await ops.archives.get(OTHER_TENANT, theirs.id)).name == "x"


async def test_delete_a_passage(ops: Ops) -> None:
    agent = await _agent(ops)
    written = await ops.archives.insert(
        TENANT, agent_id=agent.id, archive_id="", passages=[_passage("a"), _passage("b")]
    )
    await ops.archives.delete_passage(TENANT, written.items[0].id)
    listed, total = await ops.archives.passages(
        TENANT, archive_id=written.items[0].archive_id, agent_id="", page=Page()
    )
    assert ([p.text for p in listed], total) == (["b"], 1)
    assert _pending(ops) == 3  # two upserts and one delete
    text = (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text
    assert "- 1 total memories you created" in text


# --- messages ----------------------------------------------------------------------------------


def test_roles() -> None:
    assert ROLES == ("system", "user", "assistant", "tool")


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([], "messages: must contain at least one message"),
        ([message_record()] * 1001, "messages: at most 1000 per call (got 1001)"),
        (
            [message_record(), message_record(role="robot")],
            "messages[1].role: must be one of system, user, assistant, tool",
        ),
        ([message_record(content=" \n")], "messages[0].content: must not be empty (or carry tool_calls)"),
    ],
)
def test_checked_messages_refuses(messages: list[MessageRecord], message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        checked_messages(messages)
    assert caught.value.message == message


def test_a_tool_call_without_text_is_a_message() -> None:
    checked_messages(
        [message_record(role="assistant", content="", tool_calls=(ToolCallRecord("c1", "f", "{}"),))]
    )
    checked_messages([message_record()] * 1000)


async def test_append_and_list_messages(ops: Ops) -> None:
    agent = await _agent(ops)
    written = await ops.messages.append(
        TENANT,
        agent.id,
        "default",
        [message_record("user", "hi"), message_record("assistant", "hello", created_us=7)],
    )
    first, second = written.items
    assert (first.tenant_id, first.agent_id, first.conversation_id, first.role) == (
        TENANT,
        agent.id,
        "default",
        "user",
    )
    assert second.created_us == 7
    assert first.created_us > 0
    assert first.id != second.id
    assert re.fullmatch(f"message-{UUID}", first.id)
    assert second.sequence == first.sequence + 1
    assert len(written.job_ids) == 2
    assert (_pending(ops), ops.queue.notified) == (2, 1)
    listed, total = await ops.messages.listing(
        TENANT, agent.id, conversation_id="", roles=["assistant"], page=Page()
    )
    assert ([m.content for m in listed], total) == (["hello"], 1)
    listed, total = await ops.messages.listing(
        TENANT, agent.id, conversation_id="default", roles=[], page=Page()
    )
    assert total == 2
    recompiled = await ops.prompts.recompile(TENANT, agent.id, "default", dry_run=True)
    assert (
        "- 2 previous messages between you and the user are stored in recall memory" in recompiled.prompt.text
    )


async def test_messages_need_the_agent_and_conversation(ops: Ops) -> None:
    agent = await _agent(ops)
    with pytest.raises(AgentNotFound):
        await ops.messages.append(OTHER_TENANT, agent.id, "default", [message_record()])
    with pytest.raises(ConversationNotFound):
        await ops.messages.append(TENANT, agent.id, "nope", [message_record()])
    with pytest.raises(ConversationNotFound):
        await ops.messages.listing(TENANT, agent.id, conversation_id="nope", roles=[], page=Page())
    with pytest.raises(AgentNotFound):
        await ops.messages.listing(OTHER_TENANT, agent.id, conversation_id="", roles=[], page=Page())
    assert _pending(ops) == 0
    with pytest.raises(InvalidArgument):
        await ops.messages.append(TENANT, agent.id, "default", [])
    assert ops.queue.notified == 0


# --- files -------------------------------------------------------------------------------------


def _file(agent_id: str, **fields: object) -> FileRecord:
    values: dict[str, object] = {
        "id": "",
        "tenant_id": "",
        "agent_id": agent_id,
        "directory": "docs",
        "name": "guide.md",
        "content": "line\r\nnext",
        "description": "a\rb",
        "limit": 100,
        "is_open": True,
        "created_us": 0,
        "updated_us": 0,
    }
    return FileRecord(**(values | fields))  # type: ignore[arg-type]


async def test_attach_update_list_detach_a_file(ops: Ops) -> None:
    agent = await _agent(ops)
    stored = await ops.files.attach(TENANT, _file(agent.id))
    assert (stored.tenant_id, stored.content, stored.description) == (TENANT, "line\nnext", "a\nb")
    assert stored.id.startswith("file-")
    assert "guide.md" in (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text

    updated = await ops.files.update(TENANT, stored.id, {"is_open": False, "content": "x\r\ny", "limit": 5})
    assert (updated.is_open, updated.content, updated.limit) == (False, "x\ny", 5)
    assert 'status="closed"' in (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text
    assert [f.id for f in await ops.files.listing(TENANT, agent.id, Page())] == [stored.id]

    await ops.files.detach(TENANT, stored.id)
    assert await ops.files.listing(TENANT, agent.id, Page()) == []
    assert "guide.md" not in (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text
    with pytest.raises(FileNotFound):
        await ops.files.detach(TENANT, stored.id)


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"directory": "a b"}, "file.directory"), ({"name": ""}, "file.name"), ({"limit": 0}, "file.limit")],
)
async def test_attach_validates(ops: Ops, fields: dict[str, object], field: str) -> None:
    agent = await _agent(ops)
    with pytest.raises(InvalidArgument) as caught:
        await ops.files.attach(TENANT, _file(agent.id, **fields))
    assert caught.value.field_violations[0][0] == field


async def test_files_are_listed_a_page_at_a_time(ops: Ops) -> None:
    agent = await _agent(ops)
    for name in ("a.md", "b.md", "c.md"):
        await ops.files.attach(TENANT, _file(agent.id, name=name))
    assert [f.name for f in await ops.files.listing(TENANT, agent.id, Page(0, 2))] == ["a.md", "b.md"]
    assert [f.name for f in await ops.files.listing(TENANT, agent.id, Page(2, 2))] == ["c.md"]


async def test_files_are_per_tenant(ops: Ops) -> None:
    agent = await _agent(ops)
    with pytest.raises(AgentNotFound):
        await ops.files.attach(OTHER_TENANT, _file(agent.id))
    stored = await ops.files.attach(TENANT, _file(agent.id))
    with pytest.raises(FileNotFound):
        await ops.files.update(OTHER_TENANT, stored.id, {"is_open": False})
    with pytest.raises(AgentNotFound):
        await ops.files.listing(OTHER_TENANT, agent.id, Page())


@pytest.mark.parametrize(("changes", "got"), [({}, "none"), ({"name": "x"}, "['name']")])
async def test_file_update_mask(ops: Ops, changes: dict[str, object], got: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await ops.files.update(TENANT, "file-1", changes)
    assert (
        caught.value.message
        == f"update_mask: must name one or more of content, description, is_open, limit (got {got})"
    )


async def test_file_update_validates_the_limit(ops: Ops) -> None:
    agent = await _agent(ops)
    stored = await ops.files.attach(TENANT, _file(agent.id))
    with pytest.raises(InvalidArgument) as caught:
        await ops.files.update(TENANT, stored.id, {"limit": 0})
    assert caught.value.field_violations[0][0] == "file.limit"
