"""The ``strata`` CLI, run in-process with captured output, against the shared real server."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.client.conftest import Strata, new_agent


def test_agents_commands(strata: Strata) -> None:
    agent_id = new_agent(strata, "--recompile-policy", "explicit")
    code, out, _ = strata("agents", "list")
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["ID", "NAME", "BLOCKS", "RENDER", "RECOMPILE", "ETAG"]
    assert row.split()[:5] == [agent_id, "sam", "persona,human", "standard", "explicit"]

    code, out, _ = strata("agents", "update", agent_id, "--name", "samantha", "--timezone", "Asia/Tokyo")
    assert code == 0
    assert "name:" in out
    assert "samantha" in out
    assert "Asia/Tokyo" in out
    code, out, _ = strata("--json", "agents", "get", agent_id)
    assert json.loads(out)["recompile_policy"] == "RECOMPILE_POLICY_EXPLICIT"

    assert strata("agents", "delete", agent_id)[0] == 0
    code, _, err = strata("agents", "get", agent_id)
    assert code == 1
    assert f"strata: NOT_FOUND: Agent '{agent_id}' not found. (reason: AGENT_NOT_FOUND)" in err


def test_blocks_commands_and_history(strata: Strata, tmp_path: Path) -> None:
    agent_id = new_agent(strata)
    value_file = tmp_path / "value.txt"
    value_file.write_text("line one\n", encoding="utf-8")
    code, out, _ = strata(
        "--json", "blocks", "create", "--agent", agent_id, "--label", "notes", "--value-file", str(value_file)
    )
    assert code == 0
    created = json.loads(out)
    assert (created["value"], created["limit"]) == ("line one\n", 100000)

    code, out, _ = strata("blocks", "update", "--agent", agent_id, "--label", "notes", "--value", "line two")
    assert code == 0
    assert out.endswith("value:\nline two\n")

    code, _, err = strata(
        "blocks", "update", "--id", created["id"], "--value", "x", "--etag", created["etag"]
    )
    assert code == 1
    assert "strata: ABORTED:" in err
    assert "(reason: ETAG_MISMATCH)" in err

    code, out, _ = strata("blocks", "history", "--id", created["id"])
    assert [line.split()[0] for line in out.splitlines()] == ["VERSION", "2", "1"]
    code, out, _ = strata("blocks", "diff", "--id", created["id"], "--from", "1")
    assert "-line one" in out
    assert "+line two" in out
    code, out, _ = strata("--json", "blocks", "restore", "--id", created["id"], "--version", "1")
    assert json.loads(out)["value"] == "line one\n"

    code, out, _ = strata("blocks", "list", "--agent", agent_id)
    assert [line.split()[1] for line in out.splitlines()[1:]] == ["persona", "human", "notes"]


def test_sharing_a_block_between_agents(strata: Strata) -> None:
    first, second = new_agent(strata), new_agent(strata)
    out = strata("--json", "blocks", "create", "--agent", first, "--label", "team", "--value", "x")[1]
    block_id = json.loads(out)["id"]
    assert strata("blocks", "attach", "--agent", second, "--id", block_id) == (
        0,
        f"{second} blocks: persona, human, team\n",
        "",
    )
    assert (
        strata("blocks", "detach", "--agent", second, "--id", block_id)[1]
        == f"{second} blocks: persona, human\n"
    )


def test_invalid_argument_exits_2_with_field_violations(strata: Strata) -> None:
    code, out, err = strata("blocks", "create", "--label", "notes", "--limit", "-1")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "strata: INVALID_ARGUMENT: block.limit: must be positive (got -1) (reason: INVALID_ARGUMENT)",
        "  field block.limit: must be positive (got -1)",
    ]


def test_budget_overflow_reports_reason_and_lengths(strata: Strata) -> None:
    agent_id = new_agent(strata)
    strata("blocks", "create", "--agent", agent_id, "--label", "tiny", "--limit", "5")
    code, _, err = strata("blocks", "update", "--agent", agent_id, "--label", "tiny", "--value", "too long")
    assert code == 1
    assert "strata: FAILED_PRECONDITION:" in err
    assert "(reason: CHAR_LIMIT_EXCEEDED)" in err
    assert "  limit = 5" in err.splitlines()
    assert "  requested = 8" in err.splitlines()


def test_usage_errors_exit_2_without_calling(strata: Strata) -> None:
    code, _, err = strata("blocks", "get", "--label", "human")
    assert code == 2
    assert "name the block with --id, or with --agent and --label" in err
    with pytest.raises(SystemExit) as caught:
        strata("agents", "frobnicate")
    assert caught.value.code == 2


def test_prompt_and_tools(strata: Strata) -> None:
    agent_id = new_agent(strata, "--recompile-policy", "explicit", "--system", "Be kind.\n{CORE_MEMORY}")
    code, out, _ = strata("tools", "list")
    assert "core_memory_append" in out.split()

    args = json.dumps({"label": "human", "content": "Likes tea"})
    code, out, _ = strata("tools", "exec", "core_memory_append", "--agent", agent_id, "--args", args)
    assert code == 0
    assert "Likes tea" in out
    code, _, err = strata("prompt", "show", "--agent", agent_id)
    assert "memory changed since this prompt was compiled" in err

    code, out, _ = strata("prompt", "recompile", "--agent", agent_id, "--dry-run")
    assert "+Likes tea" in out
    assert out.endswith("not saved (dry run)\n")
    code, out, _ = strata("--json", "prompt", "recompile", "--agent", agent_id)
    assert json.loads(out)["saved"] is True
    code, out, err = strata("prompt", "show", "--agent", agent_id)
    assert out.startswith("Be kind.\n")
    assert err == ""
    code, out, _ = strata("prompt", "render", "--agent", agent_id, "--mode", "line-numbered")
    assert "1→ Likes tea" in out  # the block was empty: the appended line is its first

    code, out, err = strata("tools", "exec", "core_memory_append", "--agent", agent_id, "--args", "{not json")
    assert code == 1
    assert "tool failed" in err


def test_messages_append_list_and_import(strata: Strata, tmp_path: Path) -> None:
    agent_id = new_agent(strata)
    code, out, _ = strata("messages", "append", "--agent", agent_id, "--content", "hello")
    assert code == 0
    assert "#" in out

    lines = [
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "remember tea"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "MESSAGE_ROLE_TOOL", "content": "ok", "tool_call_id": "c1"},
        {"role": "user", "content": "aside", "conversation_id": "side"},
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    code, out, err = strata("messages", "import", str(path), "--agent", agent_id, "--batch-size", "2")
    assert (code, out, err) == (0, f"appended 5 message(s) from {path}\n", "")

    code, out, _ = strata("--json", "messages", "list", "--agent", agent_id)
    listed = json.loads(out)["messages"]
    assert [m["content"] for m in listed] == ["hello", "hi", "remember tea", "", "ok", "aside"]
    assert listed[3]["tool_calls"] == [{"id": "c1", "name": "f", "arguments": "{}"}]
    assert listed[5]["conversation_id"] == "side"
    code, out, _ = strata("messages", "list", "--agent", agent_id, "--role", "user")
    assert out.splitlines()[-1] == "3 message(s)"


def test_import_with_a_bad_line_changes_nothing(strata: Strata, tmp_path: Path) -> None:
    agent_id = new_agent(strata)
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"role": "user", "content": "fine"}\n{"role": "user", "contnt": "typo"}\n', encoding="utf-8"
    )
    code, _, err = strata("messages", "import", str(path), "--agent", agent_id)
    assert code == 2
    assert f"{path}:2:" in err
    code, out, _ = strata("--json", "messages", "list", "--agent", agent_id)
    assert json.loads(out)["messages"] == []


def test_blocks_update_based_on_merges_and_reports_conflicting_hunks(strata: Strata) -> None:
    agent_id = new_agent(strata)
    notes = "name: Ada\nrole: engineer\nteam: core\ncity: Paris\n"
    code, out, _ = strata(
        "--json", "blocks", "create", "--agent", agent_id, "--label", "notes", "--value", notes
    )
    read = json.loads(out)
    strata("blocks", "update", "--id", read["id"], "--value", notes.replace("engineer", "architect"))
    mine = notes.replace("Paris", "Nice")
    code, out, _ = strata(
        "--json",
        "blocks",
        "update",
        "--id",
        read["id"],
        "--value",
        mine,
        "--based-on",
        read["etag"],
        "--dry-run",
    )
    assert (code, json.loads(out)["version"]) == (0, "2")  # merged, not written (int64 is a JSON string)
    code, out, _ = strata(
        "--json", "blocks", "update", "--id", read["id"], "--value", mine, "--based-on", read["etag"]
    )
    assert (code, json.loads(out)["value"]) == (0, "name: Ada\nrole: architect\nteam: core\ncity: Nice\n")

    clash = notes.replace("engineer", "chef")
    code, _, err = strata(
        "blocks", "update", "--id", read["id"], "--value", clash, "--based-on", read["etag"]
    )
    assert code == 1
    assert "(reason: MERGE_CONFLICT)" in err
    assert "  field block.value: line 2 of the base: the block now has 'role: architect\\n'" in err


def test_prompt_receipt_shows_what_the_prompt_was_built_from(strata: Strata) -> None:
    agent_id = new_agent(strata)
    code, out, _ = strata("--json", "prompt", "show", "--agent", agent_id)
    receipt = json.loads(out)["receipt"]
    code, out, _ = strata("prompt", "receipt", receipt["id"])
    assert code == 0
    assert out.startswith(f"receipt {receipt['id']} of agent {agent_id}\n")
    assert [line.split()[1:] for line in out.splitlines() if line.startswith("block-")] == [
        [b["label"], b["version"]] for b in receipt["blocks"]
    ]
    code, _, err = strata("prompt", "receipt", "receipt-0000")
    assert code == 1
    assert "(reason: RECEIPT_NOT_FOUND)" in err


def test_prompt_render_as_of_and_diff_between_moments(strata: Strata) -> None:
    agent_id = new_agent(strata)
    _, then, _ = strata("prompt", "render", "--agent", agent_id)
    time.sleep(0.01)
    moment = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    strata("blocks", "update", "--agent", agent_id, "--label", "human", "--value", "Name: Grace")
    code, out, _ = strata("prompt", "render", "--agent", agent_id, "--as-of", moment)
    assert (code, out) == (0, then)
    code, out, _ = strata("prompt", "diff", "--agent", agent_id, "--from", moment)
    assert code == 0
    assert "+Name: Grace" in out
    code, _, err = strata("prompt", "diff", "--agent", agent_id)
    assert code == 2
    assert "name the earlier moment" in err
