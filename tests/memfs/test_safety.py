"""What a sync must never do: overwrite an edit made on the other side, edit read-only blocks,
detach without ``--prune``, or bypass budgets; and the pre-commit hook refusing the same."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from strata.cli.main import main
from strata.memfs import engine
from strata.memfs.layout import parse_block_file
from strata.memory.v1 import resources_pb2 as pb
from tests.memfs.conftest import Memfs, block


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=check)


def cloned(memfs: Memfs, tmp_path: Path, *blocks: pb.Block) -> tuple[str, Path]:
    agent_id = memfs.agent(*blocks)
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    return agent_id, root


def set_body(path: Path, value: str) -> None:
    text = path.read_bytes().decode()
    head, _, _ = text.rpartition("---\n")
    path.write_bytes((head + "---\n" + value).encode())


def body(path: Path) -> str:
    return parse_block_file(path.read_bytes().decode()).value


def test_both_sides_changed_is_a_conflict_showing_both_versions_and_touching_neither(
    memfs: Memfs, tmp_path: Path
) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("system/human", "Bob\n"), block("notes", "n"))
    set_body(root / "system/human.md", "Bob\nlocal line\n")
    set_body(root / "notes.md", "local notes")
    server = memfs.set_value(agent_id, "system/human", "Bob\nserver line\n")
    head = git(root, "rev-parse", "HEAD").stdout

    for command in ("push", "pull", "sync"):
        code, out, _ = memfs(command, "--dir", str(root))
        assert code == 1, out
        assert "conflict:\n  C system/human.md  (changed here and on the server since the last sync)" in out
        assert "-local line" in out
        assert "+server line" in out
        assert "`strata memfs resolve system/human.md` keeps this file" in out
        assert body(root / "system/human.md") == "Bob\nlocal line\n"
        after = memfs.block(agent_id, "system/human")
        assert (after.value, after.version) == ("Bob\nserver line\n", server.version)
    # The edit without a conflict went through; the conflicting file stayed out of every commit.
    assert memfs.block(agent_id, "notes").value == "local notes"
    assert git(root, "rev-parse", "HEAD").stdout != head
    assert git(root, "status", "--porcelain").stdout == " M system/human.md\n"

    status = memfs.ok("status", "--dir", str(root))
    assert "C system/human.md" in status
    memfs.capsys.readouterr()
    main(
        ["--target", memfs.target, "--tenant", memfs.tenant, "--json", "memfs", "status", "--dir", str(root)]
    )
    (problem,) = json.loads(memfs.capsys.readouterr().out)["problems"]
    assert (problem["kind"], problem["path"]) == ("conflict", "system/human.md")
    assert problem["local"].endswith("---\nBob\nlocal line\n")
    assert problem["server"].endswith("---\nBob\nserver line\n")
    # Resolving by hand: once the file says what the server says, the sides agree again.
    set_body(root / "system/human.md", "Bob\nserver line\n")
    assert memfs.ok("sync", "--dir", str(root))
    assert memfs.ok("status", "--dir", str(root)).strip() == "up to date"


def test_deleted_here_and_changed_there_and_created_on_both_sides_are_conflicts(
    memfs: Memfs, tmp_path: Path
) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("a", "1"))
    (root / "a.md").unlink()
    memfs.set_value(agent_id, "a", "2")
    (root / "b.md").write_bytes(b"---\ndescription: b\n---\nmine")
    memfs.client.create_block(block=block("b", "theirs"), agent_id=agent_id)
    code, out, _ = memfs("sync", "--prune", "--dir", str(root))
    assert code == 1
    assert "C a.md  (deleted here, changed on the server)" in out
    assert "C b.md  (created here and on the server with different content)" in out
    assert memfs.block(agent_id, "a").value == "2"
    assert memfs.block(agent_id, "b").value == "theirs"
    assert not (root / "a.md").exists()
    assert body(root / "b.md") == "mine"


def test_read_only_edits_and_read_only_changes_are_refused(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("policy", "fixed", read_only=True), block("notes", "free"))
    set_body(root / "policy.md", "changed")
    notes = root / "notes.md"
    notes.write_bytes(notes.read_bytes().replace(b"read_only: false", b"read_only: true"))
    (root / "new.md").write_bytes(b"---\ndescription: new\nread_only: true\n---\nx")
    (root / "blank.md").write_bytes(b"---\ndescription: ' '\n---\nx")

    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 1
    assert "refused:\n  ! policy.md  (the block is read-only; edits to it are refused)" in out
    assert "! notes.md  (front matter may not change read_only)" in out
    assert "! new.md  (a new block cannot be created read-only from a file)" in out
    assert "! blank.md  (the front matter's description must not be empty)" in out
    assert memfs.block(agent_id, "policy").value == "fixed"
    assert not memfs.block(agent_id, "notes").read_only
    assert sorted(b.label for b in memfs.client.iter_blocks(agent_id=agent_id)) == ["notes", "policy"]

    (root / "policy.md").unlink()
    code, out, _ = memfs("push", "--prune", "--dir", str(root))
    assert "! policy.md  (read-only blocks are not detached)" in out
    assert "policy" in memfs.client.get_agent(agent_id=agent_id).block_labels


def test_pre_commit_hook_refuses_what_push_refuses(memfs: Memfs, tmp_path: Path) -> None:
    _, root = cloned(memfs, tmp_path, block("policy", "fixed", read_only=True), block("notes", "free"))
    set_body(root / "policy.md", "changed")
    refused = git(root, "commit", "-am", "edit policy", check=False)
    assert refused.returncode == 1
    assert "memfs pre-commit: policy.md: the block is read-only; edits to it are refused" in refused.stderr
    only = git(root, "commit", "-m", "edit policy", "--", "policy.md", check=False)  # a temporary index
    assert only.returncode == 1
    assert "policy.md: the block is read-only" in only.stderr
    git(root, "checkout", "--", "policy.md")

    notes = root / "notes.md"
    original = notes.read_bytes()
    notes.write_bytes(original.replace(b"read_only: false", b"read_only: true"))
    refused = git(root, "commit", "-am", "lock notes", check=False)
    assert "notes.md: front matter may not change read_only" in refused.stderr
    notes.write_bytes(original.replace(b"description: about notes", b"description: ''"))
    refused = git(root, "commit", "-am", "blank", check=False)
    assert "notes.md: the front matter's description must not be empty" in refused.stderr
    notes.write_bytes(b"no front matter")
    refused = git(root, "commit", "-am", "broken", check=False)
    assert "notes.md: must start with a '---' line" in refused.stderr

    notes.write_bytes(original + b"more\n")
    (root / "scratch.txt").write_text("not a block")
    git(root, "add", "scratch.txt")
    assert git(root, "commit", "-am", "fine edit", check=False).returncode == 0


def test_deleted_file_detaches_only_with_prune(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("keep", "k"), block("old/gone", "g"))
    gone_id = memfs.block(agent_id, "old/gone").id
    (root / "old/gone.md").unlink()

    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 0
    assert "D old/gone.md  (deleted here; kept on the server (--prune detaches it))" in out
    assert "old/gone" in memfs.client.get_agent(agent_id=agent_id).block_labels
    code, out, _ = memfs("pull", "--dir", str(root))
    assert not (root / "old/gone.md").exists()

    out = memfs.ok("push", "--prune", "--dir", str(root))
    assert "committed: memfs push: detach old/gone" in out
    assert memfs.client.get_agent(agent_id=agent_id).block_labels == ["keep"]
    assert memfs.client.get_block(block_id=gone_id).value == "g"  # detached, not deleted
    assert git(root, "status", "--porcelain").stdout == ""
    assert memfs.ok("status", "--dir", str(root)).strip() == "up to date"


def test_budget_is_enforced_and_the_servers_reason_reported(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("small", "ok", limit=5))
    set_body(root / "small.md", "far too long")
    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 1
    assert "! small.md  (refused by the server: FAILED_PRECONDITION CHAR_LIMIT_EXCEEDED:" in out
    assert "limit=5" in out
    assert memfs.block(agent_id, "small").value == "ok"
    assert body(root / "small.md") == "far too long"


def test_files_outside_the_scheme_are_ignored_and_reported(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("notes", "n"))
    (root / "README.txt").write_text("hi")
    (root / "my notes.md").write_bytes(b"---\ndescription: x\n---\n")
    (root / "broken.md").write_bytes(b"---\ndescription: x\nextra: 1\n---\n")
    (root / ".hidden.md").write_bytes(b"---\ndescription: x\n---\n")
    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 1
    assert "? README.txt  (not a .md file)" in out
    assert "? my notes.md  (its name cannot be a block label" in out
    assert "! broken.md  (unknown front matter keys ['extra']" in out
    assert ".hidden" not in out
    assert memfs.client.get_agent(agent_id=agent_id).block_labels == ["notes"]


def test_folder_keeps_its_server_and_refuses_another(memfs: Memfs, tmp_path: Path) -> None:
    _, root = cloned(memfs, tmp_path, block("notes", "n"))
    code, _, err = memfs("status")  # not run inside the folder
    assert code == 2
    assert "is not a MemFS folder" in err
    code, _, err = memfs("clone", "agent-x", str(root))
    assert code == 2
    assert "exists and is not an empty folder" in err


def test_resolve_keeps_the_folders_version_or_takes_the_servers(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("mine", "0"), block("theirs", "0"), block("calm", "0"))
    set_body(root / "mine.md", "local")
    set_body(root / "theirs.md", "local")
    memfs.set_value(agent_id, "mine", "server")
    memfs.set_value(agent_id, "theirs", "server")

    code, out, _ = memfs("resolve", "--dir", str(root), "calm.md")
    assert code == 1
    assert "calm.md is not in conflict" in out
    out = memfs.ok("resolve", "--dir", str(root), "mine.md")
    assert "committed: memfs resolve: keep the folder's version of mine" in out
    out = memfs.ok("resolve", "--dir", str(root), "--theirs", str(root / "theirs.md"))
    assert "committed: memfs resolve: take the server's version of theirs" in out
    assert body(root / "theirs.md") == "server"
    assert memfs.block(agent_id, "mine").value == "server"  # resolve itself never writes the server

    # Kept versions are pushed conditionally: a server edit after resolve is a new conflict.
    memfs.set_value(agent_id, "mine", "server again")
    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 1
    assert "C mine.md" in out
    memfs.ok("resolve", "--dir", str(root), "mine")
    memfs.ok("push", "--dir", str(root))
    assert memfs.block(agent_id, "mine").value == "local"
    assert memfs.ok("status", "--dir", str(root)).strip() == "up to date"
    assert git(root, "status", "--porcelain").stdout == ""


def test_a_new_file_over_its_limit_creates_nothing(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("notes", "n"))
    (root / "big.md").write_bytes(b"---\ndescription: big\nlimit: 3\n---\ntoo long")
    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 1
    assert "! big.md  (refused by the server: INVALID_ARGUMENT" in out
    assert "longer than its limit of 3" in out
    assert memfs.client.get_agent(agent_id=agent_id).block_labels == ["notes"]


def test_server_labels_that_would_leave_the_folder_are_reported_not_written(
    memfs: Memfs, tmp_path: Path
) -> None:
    # The server refuses '.' and '..' segments itself; a hidden segment is a valid label MemFS must skip.
    agent_id = memfs.agent(block("notes", "n"), block(".strata/memfs", "y"))
    root = tmp_path / "memory"
    out = memfs.ok("clone", agent_id, str(root))
    assert "? server block '.strata/memfs'  (its label cannot be a file path)" in out
    assert not (root / ".strata/memfs.md").exists()
    assert sorted(p.name for p in root.iterdir()) == [".git", ".gitattributes", ".strata", "notes.md"]
    assert memfs.ok("push", "--dir", str(root)).count("its label cannot be a file path") == 1


def test_a_file_saved_while_a_pull_runs_is_not_overwritten(
    memfs: Memfs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("notes", "0"))
    memfs.set_value(agent_id, "notes", "server")
    planned = engine.sync_plan

    def plan_then_edit(*args: Any, **kwargs: Any) -> Any:  # fault injection: an editor saves now
        found = planned(*args, **kwargs)
        set_body(root / "notes.md", "saved meanwhile")
        return found

    monkeypatch.setattr(engine, "sync_plan", plan_then_edit)
    code, out, _ = memfs("pull", "--dir", str(root))
    assert code == 1
    assert "C notes.md  (the file changed here during this pull)" in out
    assert body(root / "notes.md") == "saved meanwhile"
    monkeypatch.undo()
    assert "C notes.md  (changed here and on the server since the last sync)" in memfs.ok(
        "status", "--dir", str(root)
    )


@pytest.mark.parametrize("local", ["edited", "deleted"])
def test_a_server_edit_landing_mid_push_becomes_a_conflict(
    memfs: Memfs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: str
) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("notes", "0"), block("keep", "k"))
    if local == "edited":
        set_body(root / "notes.md", "local")
    else:
        (root / "notes.md").unlink()
    planned = engine.sync_plan

    def plan_then_server_edit(*args: Any, **kwargs: Any) -> Any:  # fault injection: another writer, now
        found = planned(*args, **kwargs)
        memfs.set_value(agent_id, "notes", "server meanwhile")
        return found

    monkeypatch.setattr(engine, "sync_plan", plan_then_server_edit)
    code, out, _ = memfs("push", "--prune", "--dir", str(root))
    monkeypatch.undo()
    assert code == 1, out
    assert "C notes.md  (changed on the server during this push (" in out
    assert sorted(memfs.client.get_agent(agent_id=agent_id).block_labels) == ["keep", "notes"]
    assert memfs.block(agent_id, "notes").value == "server meanwhile"  # the later write stands
    assert (body(root / "notes.md") == "local") if local == "edited" else not (root / "notes.md").exists()
    status = memfs("status", "--dir", str(root))[1]
    assert "C notes.md  (" in status  # still a conflict for the user to settle, not a lost edit


def test_a_resolve_commit_names_each_label_and_what_was_kept(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, block("mine", "0"), block("theirs", "0"))
    for label in ("mine", "theirs"):
        set_body(root / f"{label}.md", "local")
        memfs.set_value(agent_id, label, "server")
    memfs.ok("resolve", "--dir", str(root), "--theirs", "theirs")
    assert git(root, "log", "-1", "--format=%B").stdout.strip() == (
        "memfs resolve: take the server's version of theirs\n"
        "\n"
        "- theirs: changed here and on the server since the last sync; took the server's version"
    )
    memfs.ok("resolve", "--dir", str(root), "mine.md")
    assert git(root, "log", "-1", "--format=%B").stdout.strip() == (
        "memfs resolve: keep the folder's version of mine\n"
        "\n"
        "- mine: changed here and on the server since the last sync; kept the folder's version; push sends it"
    )
