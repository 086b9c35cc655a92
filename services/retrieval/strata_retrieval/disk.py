"""Writes refused before the index's disk is too full to take them, instead of a crash.

Both embedded engines keep files the process writes through memory maps: Qdrant's shard
preallocates its WAL segments (32 MiB each) and its payload and vector storage as *sparse* files
and writes into them through ``mmap``. When the filesystem has no block left for a page the process
touches, the kernel cannot report an error to a memory store: it sends SIGBUS and the process dies
(reproduced on a full tmpfs: ``tests/retrieval/test_disk_full.py``). Nothing can catch that, so the
only defence is not to start a write the disk may be unable to hold.

:class:`DiskGuard` therefore checks, before each write, that the filesystem of the data folder
keeps ``reserve_bytes`` free beyond a generous estimate of what the write itself adds; otherwise
the write is refused with RESOURCE_EXHAUSTED (reason ``INDEX_DISK_FULL``) and nothing is changed.
Reads never allocate blocks, so searches keep working on a full disk. A write that still fails
with "no space left on device" through an ordinary ``write`` (Tantivy, a new WAL file) becomes the
same error (:func:`as_disk_full`). MemoryService's outbox treats this refusal as transient and
retries later, so nothing acknowledged is lost. The reserve is the margin for what the guard cannot
see: other processes writing to the same filesystem between the check and the write.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from strata_serving.errors import ResourceExhausted

WRITE_AMPLIFICATION = 4
"""Bytes the indexes may add per byte of text sent: the WAL record, the payload copy, the text
index's segment and a merge rewriting it."""
BYTES_PER_VECTOR = 4 * 1024
"""Per document, whatever its text: the float vector, its int8 copy, id and index entries, rounded up."""
_DISK_FULL_TEXTS = ("no space left on device", "os error 28", "disk full", "enospc")


class IndexDiskFull(ResourceExhausted):
    """The index's filesystem cannot take this write; retrying after space is freed will succeed."""

    default_reason = "INDEX_DISK_FULL"


@dataclass(frozen=True)
class DiskGuard:
    """Refuses a write unless ``path``'s filesystem keeps ``reserve_bytes`` free after it."""

    path: Path
    reserve_bytes: int

    def free_bytes(self) -> int:
        """Bytes an unprivileged process may still allocate on the filesystem holding ``path``."""
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    def check_write(self, text_bytes: int = 0, documents: int = 0) -> None:
        """Raise :class:`IndexDiskFull` unless a write of ``documents`` documents holding
        ``text_bytes`` bytes of text (0 and 0 for a delete) leaves the reserve free."""
        needed = self.reserve_bytes + WRITE_AMPLIFICATION * text_bytes + BYTES_PER_VECTOR * documents
        free = self.free_bytes()
        if free < needed:
            raise IndexDiskFull(
                f"RetrievalService's index disk is full: {_mib(free)} free in {self.path}, "
                f"{_mib(needed)} needed to keep the {_mib(self.reserve_bytes)} reserve; the write was "
                "not made. Searches keep working; free space on that disk and retry.",
                metadata={"free_bytes": free, "needed_bytes": needed, "path": str(self.path)},
            )


def is_disk_full(error: BaseException) -> bool:
    """True for an error that says the disk is full (an ``OSError`` with ENOSPC, or an engine's
    error whose text quotes it)."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(error).lower()
    return any(marker in text for marker in _DISK_FULL_TEXTS)


def as_disk_full(error: BaseException, where: str) -> IndexDiskFull:
    return IndexDiskFull(
        f"RetrievalService's index disk is full: {where} could not be written ({error}); searches "
        "keep working; free space on that disk and retry the write.",
        metadata={"engine": where},
    )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"
