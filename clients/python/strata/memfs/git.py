"""The git plumbing MemFS needs, through the ``git`` command: init, commit named paths, the hook.

MemFS commits only the paths a sync wrote (plus the state file), so whatever else the user has
staged stays staged. Its own commits skip the pre-commit hook (``--no-verify``): the hook guards
hand-made commits, while a pull must be able to write a read-only block the server changed.
When git has no identity configured, commits are made as ``strata memfs``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from strata.memfs.paths import link_on_path, write_inside

FALLBACK_NAME = "strata memfs"
FALLBACK_EMAIL = "memfs@strata.invalid"
HOOK_MARKER = "# installed by `strata memfs clone`"
_FOREIGN_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX")
"""Set when git runs a hook; they would point MemFS's own git calls at another repository."""


class GitError(Exception):
    """A git command failed; the message carries its stderr."""


class Repository:
    """A working tree at ``root`` driven through the ``git`` command."""

    def __init__(self, root: Path, *, inside_hook: bool = False) -> None:
        """``inside_hook``: keep git's own variables (a hook must read the index git points it at)."""
        self.root = root
        self._env = {k: v for k, v in os.environ.items() if inside_hook or k not in _FOREIGN_ENV}

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """``git ARGS`` in the working tree; raises ``GitError`` on failure when ``check``."""
        command = ["git", *args]  # git is found on PATH, as any git tool finds it
        done = subprocess.run(  # noqa: S603 - an argument list, no shell
            command, cwd=self.root, env=self._env, capture_output=True, check=False
        )
        if check and done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip() or done.stdout.decode("utf-8", "replace")
            raise GitError(f"git {' '.join(args)}: {message.strip()}")
        return done

    def init(self) -> None:
        self.run("init", "--quiet", "--initial-branch=main")

    def commit(self, paths: Sequence[str], message: str) -> bool:
        """Stage ``paths`` (including deletions) and commit only them; ``False`` if nothing changed."""
        tracked = (
            set(self.run("ls-files", "-z", "--", *paths).stdout.decode().split("\0")) if paths else set()
        )
        paths = [p for p in paths if p in tracked or (self.root / p).exists()]
        if not paths:
            return False
        self.run("add", "--all", "--", *paths)
        staged = self.run("diff", "--cached", "--name-only", "-z", "--", *paths).stdout
        if not staged.strip(b"\0"):
            return False
        self.run(*self._identity(), "commit", "--quiet", "--no-verify", "-m", message, "--", *paths)
        return True

    def show(self, spec: str) -> bytes | None:
        """``git show SPEC`` (e.g. ``HEAD:path`` or ``:path``), or ``None`` if it does not exist."""
        done = self.run("show", spec, check=False)
        return done.stdout if done.returncode == 0 else None

    def head_exists(self) -> bool:
        return self.run("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0

    def install_hook(self, module: str) -> str | None:
        """Install (or refresh) the pre-commit hook running ``python -m MODULE`` with this interpreter.

        The hook is only ever written as a regular file in the repository's own ``hooks`` folder,
        never through a symbolic link (a dangling ``pre-commit`` link would otherwise create an
        executable file wherever it points). Returns why it was not installed, or ``None``: a hook
        MemFS did not write is left alone, as is a hooks folder set elsewhere (``core.hooksPath``).
        """
        git_dir = Path(self.run("rev-parse", "--absolute-git-dir").stdout.decode().strip())
        hooks = self.root / self.run("rev-parse", "--git-path", "hooks").stdout.decode().strip()
        if os.path.realpath(hooks) != os.path.realpath(git_dir / "hooks"):
            return f"the hooks folder is {hooks}, outside {git_dir}; the pre-commit hook is not installed"
        problem = link_on_path(git_dir, "hooks/pre-commit")
        if problem is not None:
            return f"{problem}; the pre-commit hook is not installed"
        hook = git_dir / "hooks" / "pre-commit"
        if hook.exists() and HOOK_MARKER not in hook.read_text(encoding="utf-8", errors="replace"):
            return None
        python = shlex.quote(sys.executable)
        script = (
            "#!/bin/sh\n"
            f"{HOOK_MARKER}: refuses commits that edit read-only blocks,\n"
            "# change read_only, or leave a block file without a description.\n"
            f"if [ ! -x {python} ]; then\n"
            f"  echo 'memfs pre-commit: {python} is gone; re-clone or reinstall the hook' >&2\n"
            "  exit 1\n"
            "fi\n"
            f"exec {python} -m {module}\n"
        )
        write_inside(git_dir, "hooks/pre-commit", script.encode("utf-8"), mode=0o777)
        return None

    def _identity(self) -> list[str]:
        """``-c user.name=… -c user.email=…`` when git cannot tell who commits, else nothing."""
        if self.run("var", "GIT_COMMITTER_IDENT", check=False).returncode == 0 and (
            self.run("var", "GIT_AUTHOR_IDENT", check=False).returncode == 0
        ):
            return []
        return ["-c", f"user.name={FALLBACK_NAME}", "-c", f"user.email={FALLBACK_EMAIL}"]
