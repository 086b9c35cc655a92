"""Blocks through the API: update_mask and etags, budgets on every write, sharing, history, diff, restore
(DESIGN.md "Core memory": a stale etag is ABORTED and changes nothing; lowering a limit below the
current length is CHAR_LIMIT_EXCEEDED; every change writes a history entry; restore is undo/redo)."""

from __future__ import annotations

import pytest

from strata_memory.domain.errors import AgentNotFound, BlockNotFound, CharLimitExceeded, EtagMismatch
from strata_memory.domain.model import Block, RecompilePolicy
from strata_memory.operations.blocks import BLOCK_FIELDS, BlockLocator
from strata_memory.store.records import AgentRecord, Page
from strata_serving.errors import InvalidArgument
from tests.memory.operations.conftest import OTHER_TENANT, TENANT, Ops, agent_record


async def _agent(ops: Ops, *blocks: Block, policy: RecompilePolicy = RecompilePolicy.ON_EDIT) -> AgentRecord:
    return await ops.agents.create(
        agent_record(policy=policy), list(blocks) or [Block("human", "Bob", limit=20)]
    )


def _by_label(agent: AgentRecord, label: str = "human") -> BlockLocator:
    return BlockLocator(agent_id=agent.id, label=label)


async def _prompt(ops: Ops, agent: AgentRecord) -> str:
    return (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text


def test_block_fields() -> None:
    assert BLOCK_FIELDS == ("value", "limit", "description", "read_only", "metadata", "label")


async def test_create_standalone_then_attach(ops: Ops) -> None:
    agent = await _agent(ops)
    record = await ops.blocks.create(
        TENANT, Block("shared", "team notes", limit=50), agent_id="", actor="api"
    )
    assert record.block.version == 1
    assert (await ops.blocks.get(TENANT, BlockLocator(block_id=record.block.id))).block.value == "team notes"
    assert "team notes" not in await _prompt(ops, agent)
    attached = await ops.blocks.attach(TENANT, agent.id, record.block.id)
    assert attached.block_labels == ("human", "shared")
    assert "<shared>" in await _prompt(ops, agent)  # on_edit: recompiled after the attach


async def test_create_into_an_agent(ops: Ops) -> None:
    agent = await _agent(ops)
    record = await ops.blocks.create(TENANT, Block("todo", "x", limit=5), agent_id=agent.id, actor="api")
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("human", "todo")
    assert "<todo>" in await _prompt(ops, agent)
    versions = await ops.blocks.versions(TENANT, BlockLocator(block_id=record.block.id), Page())
    assert [(v.source, v.actor) for v in versions] == [("api:CreateBlock", "api")]


async def test_create_into_a_missing_agent_stores_nothing(ops: Ops) -> None:
    with pytest.raises(AgentNotFound):
        await ops.blocks.create(TENANT, Block("todo"), agent_id="agent-404", actor="api")
    assert await ops.blocks.listing(TENANT, "", Page()) == []


async def test_listing_by_tenant_or_agent_with_pages(ops: Ops) -> None:
    agent = await _agent(ops, Block("a", limit=5), Block("b", limit=5), Block("c", limit=5))
    await ops.blocks.create(TENANT, Block("loose", limit=5), agent_id="", actor="api")
    await ops.agents.create(agent_record(tenant_id=OTHER_TENANT), [Block("theirs", limit=5)])
    assert [r.block.label for r in await ops.blocks.listing(TENANT, agent.id, Page(1, 1))] == ["b"]
    assert [r.block.label for r in await ops.blocks.listing(TENANT, agent.id, Page(0, 5))] == ["a", "b", "c"]
    assert sorted(r.block.label for r in await ops.blocks.listing(TENANT, "", Page())) == [
        "a",
        "b",
        "c",
        "loose",
    ]
    with pytest.raises(AgentNotFound):
        await ops.blocks.listing(OTHER_TENANT, agent.id, Page())


async def test_get_by_label_names_the_available_blocks(ops: Ops) -> None:
    agent = await _agent(ops, Block("human", limit=5), Block("persona", limit=5))
    with pytest.raises(BlockNotFound) as caught:
        await ops.blocks.get(TENANT, _by_label(agent, "hobbies"))
    assert caught.value.message == (
        f"Memory block 'hobbies' does not exist in agent '{agent.id}'. Available blocks: human, persona."
    )


async def test_update_value_with_the_current_etag(ops: Ops) -> None:
    agent = await _agent(ops)
    current = await ops.blocks.get(TENANT, _by_label(agent))
    updated = await ops.blocks.update(
        TENANT, _by_label(agent), {"value": "Al\r\nB"}, current.etag, actor="u1"
    )
    assert (updated.block.value, updated.block.version) == ("Al\nB", 2)
    assert updated.etag != current.etag
    assert "<value>\nAl\nB\n</value>" in await _prompt(ops, agent)
    versions = await ops.blocks.versions(TENANT, _by_label(agent), Page())
    newest = versions[0]
    assert (newest.version, newest.value, newest.source, newest.actor) == (
        2,
        "Al\nB",
        "api:UpdateBlock",
        "u1",
    )


async def test_update_with_a_stale_etag_changes_nothing(ops: Ops) -> None:
    agent = await _agent(ops)
    first = await ops.blocks.get(TENANT, _by_label(agent))
    await ops.blocks.update(TENANT, _by_label(agent), {"value": "Al"}, "", actor="u1")
    with pytest.raises(EtagMismatch) as caught:
        await ops.blocks.update(TENANT, _by_label(agent), {"value": "Zed"}, first.etag, actor="u2")
    assert caught.value.metadata["resource"] == "Block 'human'"
    assert caught.value.metadata["expected_etag"] == first.etag
    assert (await ops.blocks.get(TENANT, _by_label(agent))).block.value == "Al"


@pytest.mark.parametrize(
    ("changes", "named"), [({}, "none"), ({"value": "x", "colour": "red"}, "['colour']")]
)
async def test_update_mask_must_name_block_fields(ops: Ops, changes: dict[str, object], named: str) -> None:
    agent = await _agent(ops)
    with pytest.raises(InvalidArgument) as caught:
        await ops.blocks.update(TENANT, _by_label(agent), changes, "", actor="u")
    assert caught.value.message == (
        "update_mask: must name one or more of value, limit, description, read_only, metadata, label "
        f"(got {named})"
    )


async def test_update_over_the_limit_is_char_limit_exceeded(ops: Ops) -> None:
    agent = await _agent(ops)  # human: "Bob", limit 20
    await ops.blocks.update(TENANT, _by_label(agent), {"value": "x" * 20}, "", actor="u")  # exactly the limit
    with pytest.raises(CharLimitExceeded) as caught:
        await ops.blocks.update(TENANT, _by_label(agent), {"value": "y" * 21}, "", actor="u")
    assert caught.value.metadata == {"label": "human", "limit": "20", "current": "20", "requested": "21"}


async def test_lowering_the_limit_below_the_value_is_refused(ops: Ops) -> None:
    agent = await _agent(ops)  # "Bob"
    with pytest.raises(CharLimitExceeded) as caught:
        await ops.blocks.update(TENANT, _by_label(agent), {"limit": 2}, "", actor="u")
    assert caught.value.metadata == {"label": "human", "limit": "2", "current": "3", "requested": "3"}
    assert (await ops.blocks.update(TENANT, _by_label(agent), {"limit": 3}, "", actor="u")).block.limit == 3


async def test_value_and_limit_together_are_checked_against_the_new_limit(ops: Ops) -> None:
    agent = await _agent(ops)
    both = await ops.blocks.update(TENANT, _by_label(agent), {"value": "ab", "limit": 2}, "", actor="u")
    assert (both.block.value, both.block.limit) == ("ab", 2)
    with pytest.raises(CharLimitExceeded) as caught:
        await ops.blocks.update(TENANT, _by_label(agent), {"value": "abcd", "limit": 3}, "", actor="u")
    assert caught.value.metadata == {"label": "human", "limit": "3", "current": "2", "requested": "4"}


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"limit": 0}, "block.limit"), ({"label": "no spaces"}, "block.label")],
)
async def test_update_validates_limit_and_label(ops: Ops, changes: dict[str, object], field: str) -> None:
    agent = await _agent(ops)
    with pytest.raises(InvalidArgument) as caught:
        await ops.blocks.update(TENANT, _by_label(agent), changes, "", actor="u")
    assert caught.value.field_violations[0][0] == field
    assert (await ops.blocks.get(TENANT, _by_label(agent))).block.version == 1


async def test_update_other_fields_and_relabel(ops: Ops) -> None:
    agent = await _agent(ops)
    changes = {"description": "About\r\nBob", "read_only": True, "metadata": {"k": "v"}, "label": "person"}
    updated = await ops.blocks.update(TENANT, _by_label(agent), changes, "", actor="u")
    block = updated.block
    assert (block.label, block.description, block.read_only, dict(block.metadata)) == (
        "person",
        "About\nBob",
        True,
        {"k": "v"},
    )
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("person",)
    assert (
        "<person>\n<description>\nAbout\nBob\n</description>\n<metadata>\n- read_only=true\n"
        in await _prompt(ops, agent)
    )


async def test_an_edit_reaches_every_agent_sharing_the_block(ops: Ops) -> None:
    one = await _agent(ops)
    two = await ops.agents.create(agent_record(name="Two"), [Block("own", limit=5)])
    explicit = await ops.agents.create(agent_record(policy=RecompilePolicy.EXPLICIT), [Block("own", limit=5)])
    human = await ops.blocks.get(TENANT, _by_label(one))
    await ops.blocks.attach(TENANT, two.id, human.block.id)
    await ops.blocks.attach(TENANT, explicit.id, human.block.id)
    explicit_before = await _prompt(ops, explicit)
    await ops.blocks.update(TENANT, BlockLocator(block_id=human.block.id), {"value": "Shared"}, "", actor="u")
    assert "<value>\nShared\n</value>" in await _prompt(ops, one)
    assert "<value>\nShared\n</value>" in await _prompt(ops, two)
    assert await _prompt(ops, explicit) == explicit_before  # explicit policy: only when asked
    assert (await ops.prompts.get(TENANT, explicit.id, "default")).stale is True


async def test_attach_is_idempotent_and_tenant_scoped(ops: Ops) -> None:
    agent = await _agent(ops)
    loose = await ops.blocks.create(TENANT, Block("extra", limit=5), agent_id="", actor="api")
    await ops.blocks.attach(TENANT, agent.id, loose.block.id)
    again = await ops.blocks.attach(TENANT, agent.id, loose.block.id)
    assert again.block_labels == ("human", "extra")
    theirs = await ops.blocks.create(OTHER_TENANT, Block("secret", limit=5), agent_id="", actor="api")
    with pytest.raises(BlockNotFound):
        await ops.blocks.attach(TENANT, agent.id, theirs.block.id)
    with pytest.raises(AgentNotFound):
        await ops.blocks.attach(OTHER_TENANT, agent.id, theirs.block.id)


async def test_detach_keeps_the_block(ops: Ops) -> None:
    agent = await _agent(ops, Block("human", limit=5), Block("notes", "n", limit=5))
    notes = await ops.blocks.get(TENANT, _by_label(agent, "notes"))
    with pytest.raises(EtagMismatch):
        await ops.blocks.detach(TENANT, agent.id, notes.block.id, "stale")
    detached = await ops.blocks.detach(TENANT, agent.id, notes.block.id, notes.etag)
    assert detached.block_labels == ("human",)
    assert "<notes>" not in await _prompt(ops, agent)
    assert (await ops.blocks.get(TENANT, BlockLocator(block_id=notes.block.id))).block.value == "n"
    with pytest.raises(BlockNotFound) as caught:
        await ops.blocks.detach(TENANT, agent.id, notes.block.id)
    assert caught.value.message == (
        f"Memory block 'notes' does not exist in agent '{agent.id}'. Available blocks: human."
    )


async def test_delete_with_etag_and_recompile(ops: Ops) -> None:
    agent = await _agent(ops, Block("human", limit=5), Block("notes", "n", limit=5))
    notes = await ops.blocks.get(TENANT, _by_label(agent, "notes"))
    with pytest.raises(EtagMismatch):
        await ops.blocks.delete(TENANT, _by_label(agent, "notes"), "stale")
    await ops.blocks.delete(TENANT, _by_label(agent, "notes"), notes.etag)
    with pytest.raises(BlockNotFound):
        await ops.blocks.get(TENANT, BlockLocator(block_id=notes.block.id))
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("human",)
    assert "<notes>" not in await _prompt(ops, agent)


async def test_diff_between_versions(ops: Ops) -> None:
    agent = await _agent(ops)
    await ops.blocks.update(
        TENANT, _by_label(agent), {"value": "Bob\nTea", "limit": 30, "description": "d"}, "", actor="u"
    )
    diff = await ops.blocks.diff(TENANT, _by_label(agent), 1, 0)  # 0: the current version
    assert diff == (
        "# limit: 20 -> 30\n# description: '' -> 'd'\n--- v1\n+++ v2\n@@ -1 +1,2 @@\n-Bob\n+Bob\n+Tea\n"
    )
    assert await ops.blocks.diff(TENANT, _by_label(agent), 2, 2) == ""
    with pytest.raises(InvalidArgument) as caught:
        await ops.blocks.diff(TENANT, _by_label(agent), 3, 0)
    assert caught.value.message == "from_version: block has no version 3 (versions 1..2)"
    with pytest.raises(InvalidArgument) as caught:
        await ops.blocks.diff(TENANT, _by_label(agent), 1, 9)
    assert caught.value.field_violations[0][0] == "to_version"


async def test_diff_names_label_and_read_only_changes(ops: Ops) -> None:
    agent = await _agent(ops)
    await ops.blocks.update(TENANT, _by_label(agent), {"label": "person", "read_only": True}, "", actor="u")
    diff = await ops.blocks.diff(TENANT, _by_label(agent, "person"), 1, 2)
    assert diff == "# label: 'human' -> 'person'\n# read_only: False -> True\n"


async def test_restore_writes_a_new_version_with_the_old_content(ops: Ops) -> None:
    agent = await _agent(ops)
    await ops.blocks.update(
        TENANT,
        _by_label(agent),
        {"value": "Al", "limit": 10, "description": "d", "read_only": True, "metadata": {"k": "v"}},
        "",
        actor="u",
    )
    current = await ops.blocks.get(TENANT, _by_label(agent))
    with pytest.raises(EtagMismatch):
        await ops.blocks.restore(TENANT, _by_label(agent), 1, "stale", actor="u")
    restored = await ops.blocks.restore(TENANT, _by_label(agent), 1, current.etag, actor="undo")
    block = restored.block
    assert (
        block.value,
        block.limit,
        block.description,
        block.read_only,
        dict(block.metadata),
        block.version,
    ) == (
        "Bob",
        20,
        "",
        False,
        {},
        3,
    )
    versions = await ops.blocks.versions(TENANT, _by_label(agent), Page(0, 1))
    assert [(v.version, v.source, v.actor) for v in versions] == [(3, "api:Restore(v1)", "undo")]
    assert "<value>\nBob\n</value>" in await _prompt(ops, agent)
    redo = await ops.blocks.restore(TENANT, _by_label(agent), 2, "", actor="redo")
    assert (redo.block.value, redo.block.version) == ("Al", 4)
    with pytest.raises(InvalidArgument) as caught:
        await ops.blocks.restore(TENANT, _by_label(agent), 9, "", actor="u")
    assert caught.value.message == "version: block has no version 9 (versions 1..4)"


async def test_restore_brings_back_an_old_label(ops: Ops) -> None:
    agent = await _agent(ops)
    await ops.blocks.update(TENANT, _by_label(agent), {"label": "person"}, "", actor="u")
    restored = await ops.blocks.restore(TENANT, _by_label(agent, "person"), 1, "", actor="u")
    assert restored.block.label == "human"
    assert (await ops.agents.get(TENANT, agent.id)).block_labels == ("human",)


async def test_versions_page_newest_first(ops: Ops) -> None:
    agent = await _agent(ops)
    for value in ("a", "b", "c"):
        await ops.blocks.update(TENANT, _by_label(agent), {"value": value}, "", actor="u")
    page = await ops.blocks.versions(TENANT, _by_label(agent), Page(1, 2))
    assert [(v.version, v.value) for v in page] == [(3, "b"), (2, "a")]
