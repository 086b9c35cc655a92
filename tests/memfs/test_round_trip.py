"""Clone, edit with plain file writes, push, pull: values survive byte for byte, and render matches."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from strata.cli.main import main
from strata.memfs import engine
from strata.memory.v1 import resources_pb2 as pb
from tests.memfs.conftest import Memfs, block


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def test_clone_writes_one_file_per_block_with_front_matter_and_commits(memfs: Memfs, tmp_path: Path) -> None:
    agent_id = memfs.agent(
        block("system/persona", "I am Sam — ünïcødé 🧠\n", description="Who I am", limit=500),
        block("system/human", "", description="About the user"),
        block("reference/api/v1", "\n\nleading and trailing\n\n", description="API: notes # not a comment"),
        block("windows", "crlf\r\nlines\r\n", description="line\u2028separator"),
    )
    root = tmp_path / "memory"
    out = memfs.ok("clone", agent_id, str(root))
    assert "committed: memfs clone: add reference/api/v1, system/human, system/persona, windows" in out

    assert (root / "system/persona.md").read_bytes().decode() == (
        "---\ndescription: Who I am\nlimit: 500\nread_only: false\n---\nI am Sam — ünïcødé 🧠\n"
    )
    assert (root / "system/human.md").read_bytes().decode().endswith("read_only: false\n---\n")
    assert (root / "reference/api/v1.md").read_bytes().decode() == (
        "---\ndescription: 'API: notes # not a comment'\nlimit: 100000\nread_only: false\n---\n"
        "\n\nleading and trailing\n\n"
    )
    assert (root / "windows.md").read_bytes().endswith(b"---\ncrlf\nlines\n")  # the server stores LF
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "log", "--format=%s").splitlines() == [
        "memfs clone: add reference/api/v1, system/human, system/persona, windows"
    ]
    assert f"Cloned agent {agent_id} from {memfs.target}" in git(root, "log", "--format=%b")
    state = json.loads((root / ".strata/memfs.json").read_text())
    assert state["agent_id"] == agent_id
    assert state["target"] == memfs.target
    assert sorted(state["blocks"]) == ["reference/api/v1", "system/human", "system/persona", "windows"]
    hook = root / ".git/hooks/pre-commit"
    assert os.access(hook, os.X_OK)
    # Every file reads back as exactly what the server holds (U+2028 in a description).
    assert memfs.ok("status", "--dir", str(root)).strip() == "up to date"


def test_edits_with_plain_file_writes_push_byte_for_byte_and_render_matches(
    memfs: Memfs, tmp_path: Path
) -> None:
    agent_id = memfs.agent(
        block("system/persona", "I am Sam"),
        block("system/human", "Bob"),
        block("system/project/notes", "n1"),
        block("reference/api", "GET /"),
    )
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    persona = root / "system/persona.md"
    persona.write_bytes(persona.read_bytes().replace(b"I am Sam", "I am Sam, 日本語も話す\n\n".encode()))
    human = root / "system/human.md"
    human.write_bytes(human.read_bytes().replace(b"---\nBob", b"---\n"))
    (root / "system/project/todo.md").write_bytes(
        "---\ndescription: Open tasks\n---\n\n- ship MemFS\n- 🚀\n".encode()
    )
    (root / "reference/deep/er/doc.md").parent.mkdir(parents=True)
    (root / "reference/deep/er/doc.md").write_bytes(b"---\ndescription: deep\nlimit: 10\n---\n")

    out = memfs.ok("push", "--dir", str(root))
    assert (
        "committed: memfs push: create reference/deep/er/doc, system/project/todo; "
        "update system/human, system/persona\n"
    ) in out

    assert memfs.block(agent_id, "system/persona").value == "I am Sam, 日本語も話す\n\n"
    assert memfs.block(agent_id, "system/human").value == ""
    todo = memfs.block(agent_id, "system/project/todo")
    assert (todo.value, todo.description, todo.limit) == ("\n- ship MemFS\n- 🚀\n", "Open tasks", 100000)
    doc = memfs.block(agent_id, "reference/deep/er/doc")
    assert (doc.value, doc.limit) == ("", 10)
    assert git(root, "status", "--porcelain") == ""
    message = git(root, "log", "-1", "--format=%B")
    assert "Local edits since the last sync, sent to the server." in message
    assert "- system/human: edited here: value" in message

    rendered = memfs.client.render_memory(agent_id=agent_id, mode=pb.RENDER_MODE_GIT).text
    projections = re.findall(r"<projection>\$MEMORY_DIR/(.+?)</projection>", rendered)
    folder_system_files = sorted(p.relative_to(root).as_posix() for p in (root / "system").rglob("*.md"))
    assert sorted(projections) == folder_system_files
    assert len(projections) == 4
    for relative in projections:
        body = (root / relative).read_bytes().decode().split("---\n", 2)[2]
        assert body.rstrip("\n") in rendered
    assert (
        "<self>\n<projection>$MEMORY_DIR/system/persona.md</projection>\nI am Sam, 日本語も話す\n</self>"
        in rendered
    )
    assert (
        "└── reference/\n    ├── deep/\n    │   └── er/\n    │       └── doc.md\n    └── api.md\n" in rendered
    )


def test_pull_writes_server_edits_and_commits_naming_them(memfs: Memfs, tmp_path: Path) -> None:
    agent_id = memfs.agent(block("system/human", "Bob"), block("notes", "n"))
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    memfs.set_value(agent_id, "system/human", "Bob\nLikes tea\n")
    memfs.client.create_block(block=block("system/new", "fresh"), agent_id=agent_id)
    notes = memfs.block(agent_id, "notes")
    memfs.client.detach_block(agent_id=agent_id, block_id=notes.id)

    out = memfs.ok("pull", "--dir", str(root))
    assert "committed: memfs pull: add system/new; update system/human; remove notes\n" in out
    assert (root / "system/human.md").read_bytes().endswith(b"---\nBob\nLikes tea\n")
    assert (root / "system/new.md").read_bytes().endswith(b"---\nfresh")
    assert not (root / "notes.md").exists()
    assert git(root, "status", "--porcelain") == ""
    assert "Server changes since the last sync" in git(root, "log", "-1", "--format=%B")
    assert memfs.ok("status", "--dir", str(root)).strip() == "up to date"
    assert memfs.ok("sync", "--dir", str(root)).strip() == "up to date"


def test_a_git_clone_of_the_folder_keeps_syncing_and_gets_the_hook(memfs: Memfs, tmp_path: Path) -> None:
    agent_id = memfs.agent(block("notes", "n"))
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    copy = tmp_path / "copy"
    # .gitattributes turns off line-ending conversion, so even autocrlf keeps values byte for byte.
    git(tmp_path, "-c", "core.autocrlf=true", "clone", "--quiet", str(root), str(copy))
    assert (copy / "notes.md").read_bytes() == (root / "notes.md").read_bytes()
    assert not (copy / ".git/hooks/pre-commit").exists()
    (copy / "notes.md").write_bytes((copy / "notes.md").read_bytes() + "\r\nmore ✓".encode())
    memfs.ok("push", "--dir", str(copy))
    assert memfs.block(agent_id, "notes").value == "n\nmore ✓"  # the server's rule: CRLF is stored as LF
    assert os.access(copy / ".git/hooks/pre-commit", os.X_OK)
    # The CRLF file and the LF value are the same block: nothing left to push.
    assert memfs.ok("status", "--dir", str(copy)).strip() == "up to date"
    out = memfs.ok("pull", "--dir", str(root))
    assert "M notes.md" in out
    assert (root / "notes.md").read_bytes() == (copy / "notes.md").read_bytes().replace(b"\r\n", b"\n")


def test_cloning_a_missing_agent_creates_nothing(memfs: Memfs, tmp_path: Path) -> None:
    code, _, err = memfs("clone", "agent-missing", str(tmp_path / "memory"))
    assert code == 1
    assert "NOT_FOUND" in err
    assert not (tmp_path / "memory").exists()


def test_commits_fall_back_to_a_memfs_identity_when_git_has_none(
    memfs: Memfs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # refuse to guess an identity from the host
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.useConfigOnly")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "true")
    agent_id = memfs.agent(block("notes", "n"))
    memfs.ok("clone", agent_id, str(tmp_path / "memory"))
    assert git(tmp_path / "memory", "log", "--format=%an <%ae>") == "strata memfs <memfs@strata.invalid>\n"


def test_json_reports_name_their_command(memfs: Memfs, tmp_path: Path) -> None:
    agent_id = memfs.agent(block("notes", "n"))
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    memfs.set_value(agent_id, "notes", "server edit")

    def as_json(*args: str) -> dict[str, object]:
        memfs.capsys.readouterr()
        assert main(["--target", memfs.target, "--tenant", memfs.tenant, "--json", "memfs", *args]) == 0
        found: dict[str, object] = json.loads(memfs.capsys.readouterr().out)
        return found

    status = as_json("status", "--dir", str(root))
    assert (status["action"], status["agent_id"], status["ok"]) == ("status", agent_id, True)
    assert status["pending"] == [
        {"label": "notes", "path": "notes.md", "kind": "pull-update", "detail": "changed on the server"}
    ]
    pulled = as_json("pull", "--dir", str(root))
    assert pulled["action"] == "pulled"


def test_a_pull_reports_each_version_and_a_file_it_cannot_write(
    memfs: Memfs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_id = memfs.agent(block("notes", "n"), block("other", "o"))
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    notes = memfs.set_value(agent_id, "notes", "server edit")
    assert f"  M notes.md  (version {notes.version})" in memfs.ok("pull", "--dir", str(root))
    memfs.set_value(agent_id, "other", "server edit")

    def disk_full(*_: object) -> None:  # fault injection: the folder's disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(engine, "write_remote", disk_full)
    code, out, _ = memfs("pull", "--dir", str(root))
    assert code == 1
    assert "  ! other.md  (cannot write other.md: No space left on device)" in out
