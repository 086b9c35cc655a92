"""Claude's memory tool kept in Strata: StrataMemoryTool called with the Anthropic SDK's own command
types (through the SDK's ``call``, as its tool runner calls it), against a real MemoryService. No
network beyond the local server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from strata.client import MemoryClient
from strata.integrations.claude_memory import StrataMemoryTool
from strata.memory.v1 import resources_pb2 as pb
from tests.mcp.sessions import Tenant


@pytest.fixture
def client(memory_target: str, tenant: Tenant) -> Iterator[MemoryClient]:
    with MemoryClient(memory_target, api_key=tenant.key, timeout=10) as opened:
        yield opened


@pytest.fixture
def tool(client: MemoryClient, tenant: Tenant) -> StrataMemoryTool:
    return StrataMemoryTool(client, tenant.agent_id)


def values(client: MemoryClient, tenant: Tenant) -> dict[str, str]:
    return {block.label: block.value for block in client.iter_blocks(agent_id=tenant.agent_id)}


def text(result: object) -> str:
    assert isinstance(result, str)
    return result


def run(tool: StrataMemoryTool, **command: Any) -> str:
    """The command as Claude sends it, through the SDK's own parsing and dispatch."""
    return text(tool.call(command))


def test_the_tool_is_claudes_memory_tool(tool: StrataMemoryTool) -> None:
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}


def test_create_view_and_edit_a_file_change_the_block(
    tool: StrataMemoryTool, client: MemoryClient, tenant: Tenant
) -> None:
    created = text(
        tool.execute(
            BetaMemoryTool20250818CreateCommand(
                command="create", path="/memories/project/notes", file_text="a\nb\nc"
            )
        )
    )
    assert created == "File created successfully at: /memories/project/notes"
    block = client.get_block(agent_id=tenant.agent_id, label="project/notes")
    assert (block.value, block.description) == (
        "a\nb\nc",
        "A memory file Claude keeps at /memories/project/notes.",
    )

    listing = text(tool.execute(BetaMemoryTool20250818ViewCommand(command="view", path="/memories")))
    assert "5B\t/memories/project/notes" in listing.split("\n")
    assert "5B\t/memories/project/" in listing.split("\n")
    assert any(line.endswith("\t/memories/human") for line in listing.split("\n"))

    shown = text(
        tool.execute(
            BetaMemoryTool20250818ViewCommand(
                command="view", path="/memories/project/notes", view_range=[2, 3]
            )
        )
    )
    assert shown.split("\n")[1:] == ["     2\tb", "     3\tc"]

    tool.execute(
        BetaMemoryTool20250818StrReplaceCommand(
            command="str_replace", path="/memories/project/notes", old_str="b", new_str="B"
        )
    )
    run(tool, command="insert", path="/memories/project/notes", insert_line=0, insert_text="top")
    assert values(client, tenant)["project/notes"] == "top\na\nB\nc"


def test_rename_and_delete_files_and_directories(
    tool: StrataMemoryTool, client: MemoryClient, tenant: Tenant
) -> None:
    run(tool, command="create", path="/memories/drafts/one", file_text="1")
    run(tool, command="create", path="/memories/drafts/two", file_text="2")
    run(tool, command="rename", old_path="/memories/drafts", new_path="/memories/done")
    assert {k: v for k, v in values(client, tenant).items() if "/" in k} == {"done/one": "1", "done/two": "2"}
    run(tool, command="rename", old_path="/memories/done/one", new_path="/memories/first")
    run(tool, command="delete", path="/memories/done")
    remaining = values(client, tenant)
    assert remaining["first"] == "1"
    assert not [label for label in remaining if label.startswith("done")]


@pytest.mark.parametrize(
    "command",
    [
        {"command": "view", "path": "/memories/../secrets"},
        {"command": "create", "path": "/etc/passwd", "file_text": "x"},
        {"command": "create", "path": "/memories/../../etc/passwd", "file_text": "x"},
        {"command": "str_replace", "path": "/memories/./human", "old_str": "a", "new_str": "b"},
        {"command": "rename", "old_path": "/memories/human", "new_path": "/tmp/human"},
        {"command": "delete", "path": "/memories"},
    ],
)
def test_paths_outside_memories_are_refused_and_change_nothing(
    tool: StrataMemoryTool, client: MemoryClient, tenant: Tenant, command: dict[str, Any]
) -> None:
    before = values(client, tenant)
    with pytest.raises(ToolError, match="/memories"):
        run(tool, **command)
    assert values(client, tenant) == before


def test_the_blocks_budget_is_enforced(tool: StrataMemoryTool, client: MemoryClient, tenant: Tenant) -> None:
    client.create_block(block=pb.Block(label="short", value="tiny", limit=10), agent_id=tenant.agent_id)
    with pytest.raises(ToolError, match="CHAR_LIMIT_EXCEEDED") as refused:
        run(
            tool, command="str_replace", path="/memories/short", old_str="tiny", new_str="far too long for it"
        )
    assert "10" in str(refused.value)
    assert values(client, tenant)["short"] == "tiny"


def test_a_read_only_block_is_refused(tool: StrataMemoryTool, client: MemoryClient, tenant: Tenant) -> None:
    client.create_block(
        block=pb.Block(label="policy", value="be kind", read_only=True), agent_id=tenant.agent_id
    )
    with pytest.raises(ToolError, match="READ_ONLY"):
        run(tool, command="insert", path="/memories/policy", insert_line=1, insert_text="be rude")
    assert values(client, tenant)["policy"] == "be kind"


def test_an_edit_after_another_writer_changed_the_file_is_refused_until_viewed_again(
    tool: StrataMemoryTool, client: MemoryClient, tenant: Tenant
) -> None:
    run(tool, command="create", path="/memories/todo", file_text="buy milk")
    run(tool, command="view", path="/memories/todo")
    client.update_block(
        agent_id=tenant.agent_id,
        label="todo",
        block=pb.Block(value="buy milk\ncall mum"),
        update_mask=["value"],
    )
    with pytest.raises(ToolError, match="changed since you last viewed it"):
        run(tool, command="str_replace", path="/memories/todo", old_str="buy milk", new_str="buy oat milk")
    assert values(client, tenant)["todo"] == "buy milk\ncall mum"

    assert "call mum" in run(tool, command="view", path="/memories/todo")
    run(tool, command="str_replace", path="/memories/todo", old_str="buy milk", new_str="buy oat milk")
    assert values(client, tenant)["todo"] == "buy oat milk\ncall mum"


def test_missing_files_and_unknown_text_are_errors_claude_can_read(tool: StrataMemoryTool) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        run(tool, command="view", path="/memories/nothing-here")
    with pytest.raises(ToolError, match="nothing-here"):
        run(tool, command="str_replace", path="/memories/nothing-here", old_str="a", new_str="b")
    run(tool, command="create", path="/memories/x", file_text="alpha")
    with pytest.raises(ToolError, match="beta"):
        run(tool, command="str_replace", path="/memories/x", old_str="beta", new_str="gamma")
    with pytest.raises(ToolError, match="already"):
        run(tool, command="create", path="/memories/x", file_text="again")


def test_clear_all_memory_deletes_the_blocks_claude_may_delete(
    tool: StrataMemoryTool, client: MemoryClient, tenant: Tenant
) -> None:
    run(tool, command="create", path="/memories/a", file_text="1")
    client.create_block(
        block=pb.Block(label="policy", value="be kind", read_only=True), agent_id=tenant.agent_id
    )
    assert tool.clear_all_memory() == "All memory cleared"
    assert values(client, tenant) == {"policy": "be kind"}
