"""Group commit: writes that arrive while an index commits are applied together, in one commit.

An index write has a cost per commit whatever its size (a Tantivy commit builds and fsyncs a segment
per tenant; the vector journal fsyncs once per append). :class:`GroupCommit` runs one worker thread
that takes every write waiting when it is free, in the order they were submitted, hands them to
``apply`` as one list and so pays that cost once for all of them. Each submitter gets a future that
completes only when ``apply`` returned for its group: a caller waiting on it returns once its write
is committed (durable and searchable), never earlier. If ``apply`` raises, every write of that group
fails with the same error: nothing of a group is acknowledged unless the whole group was committed.
A group made of several commits (one per tenant's index) may instead name the writes a failed commit
held (``apply`` returns ``{position in the group: error}``): those fail, the others of the group are
acknowledged, so one tenant's failing commit fails no other tenant's write. A group whose ``apply``
failed may have been written in part; writes are idempotent upserts and deletes by key, so the
callers' retries converge.

``linger_seconds`` (0 by default) lets the worker wait that long after the first write of a group for
more before it commits (commit on a timer); ``max_group`` bounds a group (commit by size). With
neither, a group is whatever arrived while the previous one was being committed, so a lone write
waits for nobody.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CommitCounts:
    """How many groups were applied, the writes in them, and the writes waiting now."""

    groups: int
    writes: int
    waiting: int


class GroupCommit(Generic[T]):
    """Applies submitted writes in submission order, as many per ``apply`` call as are waiting."""

    def __init__(
        self,
        apply: Callable[[Sequence[T]], Mapping[int, BaseException] | None],
        *,
        name: str,
        linger_seconds: float = 0.0,
        max_group: int = 1_024,
    ) -> None:
        if linger_seconds < 0 or max_group < 1:
            raise ValueError("linger_seconds must be >= 0 and max_group >= 1")
        self._apply = apply
        self._linger = linger_seconds
        self._max_group = max_group
        self._waiting: deque[tuple[T, Future[None]]] = deque()
        self._changed = threading.Condition()
        self._closed = False
        self._groups = 0
        self._writes = 0
        self._submitted = 0
        self._worker = threading.Thread(target=self._run, name=name, daemon=True)
        self._worker.start()

    def submit(self, write: T) -> Future[None]:
        """Queue ``write``; the future completes once the group holding it is applied (or failed)."""
        done: Future[None] = Future()
        with self._changed:
            if self._closed:
                raise RuntimeError("the group commit is closed")
            self._waiting.append((write, done))
            self._submitted += 1
            self._changed.notify_all()
        return done

    def flush(self) -> None:
        """Wait until every write submitted before this call has been applied (or failed)."""
        with self._changed:
            submitted = self._submitted
            while self._writes < submitted:
                self._changed.wait()

    def counts(self) -> CommitCounts:
        with self._changed:
            return CommitCounts(groups=self._groups, writes=self._writes, waiting=len(self._waiting))

    def close(self) -> None:
        """Apply what is waiting, then stop the worker; later submits raise."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._worker.join()

    def _run(self) -> None:
        while True:
            group = self._next_group()
            if not group:
                return
            try:
                failed = self._apply([write for write, _ in group]) or {}
            except BaseException as error:  # noqa: BLE001  (every caller of the group hears it; the worker goes on)
                failed = dict.fromkeys(range(len(group)), error)
            for position, (_, done) in enumerate(group):
                if position in failed:
                    done.set_exception(failed[position])
                else:
                    done.set_result(None)
            with self._changed:
                self._groups += 1
                self._writes += len(group)
                self._changed.notify_all()

    def _next_group(self) -> list[tuple[T, Future[None]]]:
        """The writes waiting now (after the linger, up to ``max_group``); [] once closed and drained."""
        with self._changed:
            while not self._waiting:
                if self._closed:
                    return []
                self._changed.wait()
            if self._linger > 0 and not self._closed:
                until = time.monotonic() + self._linger
                while len(self._waiting) < self._max_group and (left := until - time.monotonic()) > 0:
                    self._changed.wait(left)
            count = min(len(self._waiting), self._max_group)
            return [self._waiting.popleft() for _ in range(count)]
