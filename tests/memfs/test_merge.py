"""MemFS and the server's three-way merge: a file and its block changed on different lines merge into
one version written to both sides; the same lines changed differently stay a conflict touching neither.
Before the merge, any edit on both sides since the last sync was a conflict."""

from __future__ import annotations

from pathlib import Path

from tests.memfs.conftest import Memfs, block
from tests.memfs.test_safety import body, cloned, git, set_body

NOTES = "name: Ada\nrole: engineer\ncity: Paris\nlikes: tea\n"


def test_different_lines_merge_on_push_and_the_file_gets_the_merged_text(
    memfs: Memfs, tmp_path: Path
) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("human", NOTES))
    set_body(root / "human.md", NOTES.replace("tea", "coffee"))
    server = memfs.set_value(agent_id, "human", NOTES.replace("engineer", "architect"))
    merged = "name: Ada\nrole: architect\ncity: Paris\nlikes: coffee\n"

    status = memfs.ok("status", "--dir", str(root))
    assert "M human.md  (changed here and on the server: the push merges them line by line)" in status
    out = memfs.ok("push", "--dir", str(root))
    assert f"merged as version {server.version + 1}" in out
    after = memfs.block(agent_id, "human")
    assert (after.value, after.version) == (merged, server.version + 1)
    assert body(root / "human.md") == merged
    assert git(root, "status", "--porcelain").stdout == ""  # the merge is committed
    assert memfs.ok("status", "--dir", str(root)).strip() == "up to date"


def test_the_same_line_is_a_conflict_and_neither_side_changes(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("human", NOTES))
    set_body(root / "human.md", NOTES.replace("Paris", "Nice"))
    server = memfs.set_value(agent_id, "human", NOTES.replace("Paris", "Lyon"))
    for command in ("status", "pull", "push", "sync"):
        code, out, _ = memfs(command, "--dir", str(root))
        assert code == (0 if command == "status" else 1), out
        assert "C human.md  (changed here and on the server since the last sync)" in out
        assert "-city: Nice" in out
        assert "+city: Lyon" in out
    assert body(root / "human.md") == NOTES.replace("Paris", "Nice")
    after = memfs.block(agent_id, "human")
    assert (after.value, after.version) == (server.value, server.version)
    memfs.ok("resolve", "--dir", str(root), "--theirs", "human.md")  # settled as before the merge
    assert body(root / "human.md") == server.value


def test_a_merge_over_the_budget_is_refused_with_the_reason(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("human", "a\nb\nc\nd\n", limit=13))
    set_body(root / "human.md", "a\nb\nc\ndddd\n")
    memfs.set_value(agent_id, "human", "a\nbbbb\nc\nd\n")
    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 1
    assert "CHAR_LIMIT_EXCEEDED" in out
    assert memfs.block(agent_id, "human").value == "a\nbbbb\nc\nd\n"
