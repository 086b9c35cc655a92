"""``strata archives``, ``passages``, ``search`` and ``reindex`` in-process against the real pair."""

from __future__ import annotations

import json

from tests.client.conftest import Strata, new_agent


def test_archive_passages_search_and_reindex(strata: Strata) -> None:
    agent_id = new_agent(strata)
    code, out, _ = strata("--json", "archives", "create", "--name", "facts", "--agent", agent_id)
    assert code == 0
    archive_id = json.loads(out)["id"]
    for text, tag in (("Ada drinks green tea.", "drink"), ("Ada rides a bicycle.", "travel")):
        code, out, _ = strata(
            "passages", "add", "--archive", archive_id, "--text", text, "--tag", tag, "--wait"
        )
        assert code == 0
        assert out.endswith(f" in {archive_id}\n")

    code, out, _ = strata("passages", "list", "--agent", agent_id)
    assert out.splitlines()[-1] == "2 passage(s)"
    code, out, _ = strata("archives", "list", "--agent", agent_id)
    assert out.splitlines()[1].split()[:2] == [archive_id, "facts"]

    code, out, _ = strata("search", "archival", "what does Ada drink", "--agent", agent_id, "--top-k", "1")
    header, hit = out.splitlines()
    assert header.split() == ["SCORE", "VEC", "FTS", "TAGS", "TEXT"]
    assert hit.endswith("drink  Ada drinks green tea.")
    code, out, _ = strata(
        "--json", "search", "archival", "what does Ada drink", "--agent", agent_id, "--top-k", "1"
    )
    served = json.loads(out)["hits"][0]["relevance"]
    assert hit.split()[0] == f"{served['score']:.4f}" != f"{served['rrf_score']:.4f}"  # what orders hits
    code, out, _ = strata("--json", "search", "archival", "Ada", "--agent", agent_id, "--tag", "travel")
    assert [h["passage"]["text"] for h in json.loads(out)["hits"]] == ["Ada rides a bicycle."]

    strata("messages", "append", "--agent", agent_id, "--content", "I moved to Lisbon last year.")
    code, out, _ = strata("--json", "reindex", "--agent", agent_id, "--batch-size", "1")
    assert code == 0
    assert json.loads(out) == {"documents_total": "3", "documents_done": "3", "done": True}
    code, out, _ = strata(
        "search", "messages", "where do I live now", "--agent", agent_id, "--mode", "vector"
    )
    assert "I moved to Lisbon last year." in out

    code, _, err = strata("passages", "list")
    assert code == 2
    assert "--archive" in err
    assert strata("archives", "delete", archive_id)[0] == 0
    code, _, err = strata("archives", "get", archive_id)
    assert code == 1
    assert "NOT_FOUND" in err
