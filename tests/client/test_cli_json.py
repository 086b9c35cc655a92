"""``--json`` anywhere on the line and with the proto's field names, as grpcurl prints them
(issue 31 item 8): ``strata agents create --name x --json`` and ``strata --json agents create``
print the same object, keyed ``tenant_id`` and ``block_labels``."""

from __future__ import annotations

import json

from tests.client.conftest import Strata


def test_json_after_the_command_and_before_it_print_snake_case(strata: Strata, tenant: str) -> None:
    code, after, _ = strata("agents", "create", "--name", "late", "--json")
    assert code == 0
    agent = json.loads(after)
    assert (agent["name"], agent["tenant_id"], agent["block_labels"]) == (
        "late",
        tenant,
        ["persona", "human"],
    )
    assert "tenantId" not in agent
    code, before, _ = strata("--json", "agents", "get", agent["id"])
    assert code == 0
    assert json.loads(before)["tenant_id"] == tenant
    code, grouped, _ = strata("agents", "--json", "get", agent["id"])
    assert code == 0
    assert json.loads(grouped)["block_labels"] == ["persona", "human"]


def test_without_json_the_output_stays_text(strata: Strata) -> None:
    code, out, _ = strata("agents", "create", "--name", "plain")
    assert code == 0
    assert out.startswith("id:")
