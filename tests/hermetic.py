"""What keeps the suite to itself: no developer ``STRATA_*`` settings, no default ports.

``scrub_environment`` runs once when pytest starts (tests/conftest.py), so settings built in tests,
and the subprocesses they spawn, see only what a test sets. ``unreachable_address`` is where a
MemoryService that runs without RetrievalService sends its index jobs: a port this process holds
bound but never listens on, so a connection there is refused at once and nothing else — a
``make run`` on the default ports, another test session — can be reached or take the port over.
``memory_settings`` builds such a server's settings; fixtures that need RetrievalService start one
on port 0 and pass its address instead.
"""

from __future__ import annotations

import socket
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from strata_memory.settings import MemorySettings

SUITE_KNOBS = ("STRATA_FUZZ_", "STRATA_TEST_")
"""Variables that tune the suite itself (examples per fuzzed RPC; ``STRATA_TEST_POSTGRES_URL``, the
server the PostgreSQL variants run on, tests/store_backends.py), not a service: kept."""

_held: list[socket.socket] = []


def scrub_environment(environ: MutableMapping[str, str]) -> list[str]:
    """Remove every ``STRATA_*`` variable but the suite's own knobs; the names removed, sorted."""
    removed = sorted(
        name for name in environ if name.startswith("STRATA_") and not name.startswith(SUITE_KNOBS)
    )
    for name in removed:
        del environ[name]
    return removed


def unreachable_address() -> str:
    """``127.0.0.1:PORT`` of a port bound (not listening) for the life of this process."""
    if not _held:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        _held.append(sock)
    return f"127.0.0.1:{_held[0].getsockname()[1]}"


def memory_settings(database: Path, **overrides: Any) -> MemorySettings:
    """MemoryService on a free port with a SQLite file at ``database``; RetrievalService
    unreachable unless ``retrieval_address`` is given."""
    fields: dict[str, Any] = {
        "address": "127.0.0.1:0",
        "database_url": f"sqlite:///{database}",
        "retrieval_address": unreachable_address(),
    }
    return MemorySettings(**(fields | overrides))
