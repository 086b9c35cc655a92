"""``strata agents import`` / ``export`` in-process against the real pair (MemoryService with a real
RetrievalService), with the shared Letta files: what lands is checked against the file itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.client.conftest import Strata
from tests.memory.domain.agent_files.shared_files import SHARED, raw_document

LOOP = next(p for p in SHARED if p.name == "loop.af")
EVIE = next(p for p in SHARED if p.name == "evie.af")


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
def test_import_of_each_shared_file_shows_its_agents_and_what_was_kept(strata: Strata, path: Path) -> None:
    document = raw_document(path)
    code, out, err = strata("agents", "import", str(path))
    assert code == 0, err
    assert err.startswith(f"importing {path.name} ({path.stat().st_size:,} bytes)")
    assert "done in" in err
    blocks = len({i for a in document["agents"] for i in a["block_ids"]})
    messages = sum(len(a["messages"]) for a in document["agents"])
    assert f"{len(document['agents'])} agents, {blocks} blocks, {messages} messages" in out
    assert "kept verbatim: " in out
    assert "tools" in out.split("kept verbatim: ")[1]
    for agent in document["agents"]:
        assert agent["name"] in out


def test_imported_messages_are_searchable_as_the_file_words_them(strata: Strata) -> None:
    code, out, _ = strata("--json", "agents", "import", str(LOOP), "--wait-searchable")
    assert code == 0
    agent_id = json.loads(out)["agents"][0]["id"]
    first = raw_document(LOOP)["agents"][0]["messages"][0]["content"][0]["text"]
    query = " ".join(first.split()[:6])
    code, out, _ = strata("--json", "search", "messages", query, "--agent", agent_id, "--mode", "fts")
    assert code == 0
    assert [h["message"]["content"] for h in json.loads(out)["hits"]][:1] == [first]


def test_export_writes_a_file_that_imports_again(strata: Strata, tmp_path: Path) -> None:
    code, out, _ = strata("--json", "agents", "import", str(LOOP))
    agent_id = json.loads(out)["agents"][0]["id"]
    target = tmp_path / "loop-again.af"
    code, out, err = strata("agents", "export", agent_id, "--with-messages", "-o", str(target))
    assert code == 0, err
    assert out.startswith(f"wrote {target} (")
    exported, original = json.loads(target.read_bytes()), raw_document(LOOP)
    assert [b["value"] for b in exported["blocks"]] == [b["value"] for b in original["blocks"]]
    assert len(exported["agents"][0]["messages"]) == len(original["agents"][0]["messages"])
    assert strata("agents", "import", str(target))[0] == 0


def test_a_broken_file_exits_2_naming_the_path(strata: Strata, tmp_path: Path) -> None:
    document = raw_document(LOOP)
    document["agents"][0]["block_ids"].append("block-404")
    broken = tmp_path / "broken.af"
    broken.write_text(json.dumps(document))
    code, _, err = strata("agents", "import", str(broken))
    assert code == 2
    assert "agents[0].block_ids[9]: no block 'block-404' in the file" in err
    code, _, err = strata("agents", "import", str(tmp_path / "missing.af"))
    assert code == 2
    assert "cannot read" in err
