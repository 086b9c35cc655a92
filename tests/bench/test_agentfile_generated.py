"""The generated agent the import benchmark measures is a valid Agent File of the size it claims."""

from __future__ import annotations

from bench.agentfile.generated import generated_file
from strata_memory.domain import agent_files as af


def test_the_generated_agent_plans_with_every_message_and_its_tool_calls() -> None:
    plan = af.plan_import(af.read_document(generated_file(300), max_bytes=7 * 1024 * 1024))
    (agent,) = plan.agents
    assert len(agent.messages) == 300
    assert [m.role for m in agent.messages[:3]] == ["user", "assistant", "tool"]
    assert agent.messages[1].tool_calls[0].id == agent.messages[2].tool_call_id == "call-0"
    assert [m.created_us for m in agent.messages] == sorted(m.created_us for m in agent.messages)
    assert len(generated_file(10_000)) < 7 * 1024 * 1024  # under memory.agent_file_bytes
