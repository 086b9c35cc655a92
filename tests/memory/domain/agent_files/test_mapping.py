"""The pure .af → Strata mapping on the seven real files, checked against each file itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_memory.domain import agent_files as af
from strata_serving.errors import InvalidArgument
from tests.memory.domain.agent_files.shared_files import SHARED, raw_document, with_files

LIMIT = 7 * 1024 * 1024


def plan_of(path: Path) -> af.ImportPlan:
    return af.plan_import(af.read_document(path.read_bytes(), max_bytes=LIMIT))


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
def test_every_agent_block_and_message_of_the_file_is_planned_as_written(path: Path) -> None:
    document, plan = raw_document(path), plan_of(path)
    blocks = {b["id"]: b for b in document["blocks"]}
    assert [a.file_id for a in plan.agents] == [a["id"] for a in document["agents"]]
    for planned, raw in zip(plan.agents, document["agents"], strict=True):
        assert (planned.name, planned.system) == (raw["name"], raw["system"])
        assert planned.timezone == (raw.get("timezone") or "UTC")
        assert list(planned.block_file_ids) == raw["block_ids"]
        assert [m.file_id for m in planned.messages] == [m["id"] for m in raw["messages"]]
        assert [m.role for m in planned.messages] == [m["role"] for m in raw["messages"]]
    listed = {i for a in document["agents"] for i in a["block_ids"]}
    assert {b.file_id for b in plan.blocks} == listed
    for planned_block in plan.blocks:
        raw = blocks[planned_block.file_id]
        block = planned_block.block
        assert (block.label, block.value, block.limit) == (raw["label"], raw["value"] or "", raw["limit"])
        assert block.read_only == bool(raw["read_only"])
        assert block.description == (raw["description"] or "")


def test_a_block_two_agents_list_is_planned_once() -> None:
    path = next(p for p in SHARED if p.name == "evie.af")
    document, plan = raw_document(path), plan_of(path)
    first, second = (set(a["block_ids"]) for a in document["agents"])
    assert first & second, "evie.af's two agents share blocks"
    assert len(plan.blocks) == len(first | second)


def test_tool_calls_and_tool_answers_are_mapped() -> None:
    path = next(p for p in SHARED if p.name == "loop.af")
    raw = raw_document(path)["agents"][0]["messages"]
    messages = plan_of(path).agents[0].messages
    calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in raw[1]["tool_calls"]]
    assert [(c.id, c.name, c.arguments) for c in messages[1].tool_calls] == calls
    assert messages[2].tool_call_id == raw[2]["tool_call_id"]
    assert messages[2].content == raw[2]["content"][0]["text"]
    assert messages[1].created_us < messages[2].created_us


def test_what_strata_does_not_model_is_reported_as_kept() -> None:
    plan = plan_of(next(p for p in SHARED if p.name == "evie.af"))
    kept = set(plan.report.kept_verbatim)
    assert {"tools", "groups", "agents[0].llm_config", "agents[1].embedding_config"} <= kept
    assert plan.document["tools"] == raw_document(next(p for p in SHARED if p.name == "evie.af"))["tools"]


def test_secrets_are_emptied_and_reported() -> None:
    document = raw_document(SHARED[0])
    document["agents"][0]["secrets"] = {"OPENAI_API_KEY": "sk-live-123"}
    document["agents"][0]["tool_exec_environment_variables"] = [{"key": "TOKEN", "value": "abc"}]
    document["mcp_servers"] = [{"id": "mcp-0", "server_name": "x", "token": "t0ken", "custom_headers": {}}]
    document["agents"][0]["llm_config"]["api_key"] = "sk-llm-456"
    plan = af.plan_import(document)
    assert set(plan.report.dropped) == {
        "agents[0].secrets",
        "agents[0].tool_exec_environment_variables",
        "agents[0].llm_config.api_key",
        "mcp_servers[0].token",
    }
    assert "sk-llm-456" not in repr(plan)
    assert plan.agents[0].residue["secrets"] == {}
    assert plan.agents[0].residue["tool_exec_environment_variables"] == []
    assert plan.document["mcp_servers"][0]["token"] == ""
    assert "sk-live-123" not in repr(plan)
    assert "t0ken" not in repr(plan)


def test_an_agents_attached_files_become_strata_files() -> None:
    document = with_files(raw_document(next(p for p in SHARED if p.name == "loop.af")))
    planned = af.plan_import(document).agents[0]
    files = {f["id"]: f for f in document["files"]}
    assert [(p.directory, p.name, p.content, p.is_open) for p in planned.files] == [
        ("handbook", link["file_name"], files[link["file_id"]]["content"], link["is_open"])
        for link in document["agents"][0]["files_agents"]
    ]
    assert {p.limit for p in planned.files} == {document["agents"][0]["per_file_view_window_char_limit"]}


def test_one_file_attached_twice_under_one_name_is_refused() -> None:
    document = with_files(raw_document(next(p for p in SHARED if p.name == "loop.af")))
    links = document["agents"][0]["files_agents"]
    links.append(dict(links[0], id="file_agent-9"))
    with pytest.raises(
        InvalidArgument, match=r"agents\[0\].files_agents\[2\]: file 'onboarding.md' in 'handbook'"
    ):
        af.plan_import(document)
