"""Writing inside the folder only: MemFS never writes, creates, removes or installs through a link.

A folder can hold symbolic links MemFS did not make (a ``git clone`` recreates committed ones), and
the server chooses the labels, so a path such as ``system/new.md`` could otherwise lead anywhere
the user can write. The rules:

- A path whose folder or file is a symbolic link (or whose folder is not a directory) is *unsafe*:
  the sync plan leaves its label out and reports it as ignored, on both sides.
- Every write and removal walks the folders one at a time from the root, opening each with
  ``O_NOFOLLOW`` relative to its parent, and opens the file with ``O_NOFOLLOW``: a link put in place
  after the plan was made fails the write (``UnsafePathError``, an ``OSError``) instead of being
  followed. Where the platform has no ``dir_fd`` calls, each step is checked with ``lstat`` first.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_AT_CALLS = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd


class UnsafePathError(OSError):
    """A write or removal that would go through a symbolic link (or a non-directory folder)."""

    def __init__(self, relative: str, why: str) -> None:
        super().__init__(errno.ELOOP, why, relative)


def link_on_path(root: Path, relative: str) -> str | None:
    """Why writing ``relative`` (``/``-separated, below ``root``) would leave the folder, or ``None``.

    Each folder on the way and the file itself are looked at without following links; a missing
    one ends the walk (it would be created as a real folder or file).
    """
    segments = relative.split("/")
    for depth in range(1, len(segments) + 1):
        prefix = "/".join(segments[:depth])
        try:
            mode = os.lstat(root / prefix).st_mode
        except FileNotFoundError:
            return None
        except OSError as error:
            return f"{prefix} cannot be read ({error.strerror})"
        if stat.S_ISLNK(mode):
            return f"{prefix} is a symbolic link; MemFS never writes through links"
        if depth < len(segments) and not stat.S_ISDIR(mode):
            return f"{prefix} is not a folder"
    return None


def write_inside(root: Path, relative: str, data: bytes, *, mode: int = 0o666) -> None:
    """Write ``data`` to ``root/relative``, creating real folders, never following a link."""
    with _parent(root, relative, create=True) as (parent, name):
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _BINARY
        try:
            fd = (
                os.open(name, flags, mode, dir_fd=parent)
                if parent >= 0
                else _open_checked(root, relative, flags, mode)
            )
        except OSError as error:
            raise _unsafe(root, relative, error) from None
        with os.fdopen(fd, "wb") as file:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise UnsafePathError(relative, f"{relative} is not a regular file")
            if mode & 0o111 and hasattr(os, "fchmod"):  # an existing file keeps its mode otherwise
                os.fchmod(fd, stat.S_IMODE(status.st_mode) | (mode & 0o111 & ~_umask()))
            file.write(data)


def remove_inside(root: Path, relative: str) -> None:
    """Delete ``root/relative`` (never a link's target) and the folders it leaves empty."""
    problem = link_on_path(root, relative)
    if problem is not None:
        raise UnsafePathError(relative, problem)
    with contextlib.suppress(FileNotFoundError):
        (root / relative).unlink()
    segments = relative.split("/")[:-1]
    while segments:
        folder = root / "/".join(segments)
        if link_on_path(root, "/".join(segments)) is not None or any(folder.iterdir()):
            return
        folder.rmdir()
        segments.pop()


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


@contextlib.contextmanager
def _parent(root: Path, relative: str, *, create: bool) -> Iterator[tuple[int, str]]:
    """The open folder holding ``relative``'s last segment (``-1`` without ``dir_fd`` calls)."""
    segments = relative.split("/")
    if not _AT_CALLS:
        _make_folders(root, segments[:-1])
        yield -1, segments[-1]
        return
    fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    try:
        for depth, segment in enumerate(segments[:-1], start=1):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(segment, dir_fd=fd)
            try:
                child = os.open(segment, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError as error:
                raise _unsafe(root, "/".join(segments[:depth]), error) from None
            os.close(fd)
            fd = child
        yield fd, segments[-1]
    finally:
        os.close(fd)


def _make_folders(root: Path, segments: list[str]) -> None:
    for depth in range(1, len(segments) + 1):
        prefix = "/".join(segments[:depth])
        problem = link_on_path(root, prefix)
        if problem is not None:
            raise UnsafePathError(prefix, problem)
        with contextlib.suppress(FileExistsError):
            (root / prefix).mkdir()


def _open_checked(root: Path, relative: str, flags: int, mode: int) -> int:
    problem = link_on_path(root, relative)
    if problem is not None:
        raise UnsafePathError(relative, problem)
    return os.open(root / relative, flags, mode)


def _unsafe(root: Path, relative: str, error: OSError) -> OSError:
    """``error`` as an ``UnsafePathError`` when a link or non-folder caused it."""
    if isinstance(error, UnsafePathError):
        return error
    problem = link_on_path(root, relative)
    if problem is None and error.errno in {errno.ELOOP, errno.ENOTDIR}:
        problem = f"{relative} is a symbolic link or not a folder; MemFS never writes through links"
    return UnsafePathError(relative, problem) if problem else error
