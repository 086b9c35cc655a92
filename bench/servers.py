"""The one harness for tests and benchmarks that start Strata's servers in process.

It lives in ``bench`` because bench never imports ``tests`` (the **bench-no-tests** contract) while
tests may import bench; ``tests/servers.py`` re-exports it under the name the tests use. It starts
the services only through their public entry points (``strata_memory.main``, ``strata_retrieval.main``
and their settings), as **bench-public-entry-points** requires of everything in ``bench``.

- :class:`LoopThread`: an event loop on a background thread, for blocking callers (the sync
  clients, the CLI, a subprocess) that need servers running meanwhile.
- :class:`ServicePair`: a RetrievalService and a MemoryService wired together, each on a free
  port with its data under ``root``; started and stopped together or one at a time (a restarted
  RetrievalService keeps its port, so MemoryService reconnects to it). Extra settings for each
  service are passed as dicts; the embedder is shared across tests (loading it is the slow part).
  MemoryService retries RetrievalService quickly (:data:`QUICK_RETRIES`) unless ``quick_retries``
  is off, as a benchmark measuring the shipped defaults wants.
- :class:`BackgroundPair`: a ServicePair on its own LoopThread, started and stopped from blocking
  code (a benchmark whose measured clients keep the main loop to themselves, a sync client).

Servers bind ``127.0.0.1:0`` (a free port); nothing here uses the default ports. One service alone
needs no harness: ``start_memory_server(settings)`` or ``RetrievalApp(settings).start()`` is one call.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_retrieval.embedding.protocol import Embedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings

T = TypeVar("T")

QUICK_RETRIES: dict[str, Any] = {"outbox_max_backoff_seconds": 0.5, "retrieval_timeout_seconds": 5.0}
"""MemoryService settings a test wants: a failed delivery is retried within half a second."""


class LoopThread:
    """An event loop on a background thread; ``run`` executes a coroutine there from any thread."""

    def __init__(self, name: str = "strata-servers") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()


@dataclass
class ServicePair:
    """A running RetrievalService and MemoryService wired together, restartable one at a time."""

    root: Path
    embedder: Embedder | None = None
    retrieval_settings: dict[str, Any] = field(default_factory=dict)
    memory_settings: dict[str, Any] = field(default_factory=dict)
    quick_retries: bool = True
    retrieval_port: int = 0
    retrieval: RetrievalApp | None = None
    memory: MemoryServer | None = None

    @property
    def retrieval_address(self) -> str:
        """Where RetrievalService listens (or listened: MemoryService may be pointed at it while down)."""
        return f"127.0.0.1:{self.retrieval_port}"

    @property
    def memory_address(self) -> str:
        assert self.memory is not None, "MemoryService is not running"
        return self.memory.address

    async def start_retrieval(self, **overrides: Any) -> None:
        """Start RetrievalService (again: on the same port, with the same data), ``overrides`` on top."""
        defaults: dict[str, Any] = {
            "address": f"127.0.0.1:{self.retrieval_port}",
            "data_dir": self.root / "retrieval",
            "log_json": False,
        }
        settings = RetrievalSettings(**{**defaults, **self.retrieval_settings, **overrides})
        self.retrieval = RetrievalApp(settings, embedder=self.embedder)
        await self.retrieval.start()
        self.retrieval_port = self.retrieval.server.port

    async def stop_retrieval(self) -> None:
        if self.retrieval is not None:
            await self.retrieval.stop()
            self.retrieval = None

    async def start_memory(self, **overrides: Any) -> None:
        self.memory = await start_memory_server(self.memory_config(**overrides))

    def memory_config(self, **overrides: Any) -> MemorySettings:
        """A MemoryService's settings (e.g. for a second replica): a SQLite file under ``root`` unless
        ``memory_settings`` or ``overrides`` name another ``database_url``."""
        defaults: dict[str, Any] = {
            "address": "127.0.0.1:0",
            "database_url": f"sqlite:///{self.root}/memory.sqlite3",
            "retrieval_address": self.retrieval_address,
            **(QUICK_RETRIES if self.quick_retries else {}),
        }
        return MemorySettings(**{**defaults, **self.memory_settings, **overrides})

    async def stop_memory(self) -> None:
        if self.memory is not None:
            await self.memory.stop(0)
            self.memory = None

    async def start(self) -> None:
        await self.start_retrieval()
        await self.start_memory()

    async def stop(self) -> None:
        await self.stop_memory()
        await self.stop_retrieval()

    async def __aenter__(self) -> ServicePair:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


class BackgroundPair:
    """A :class:`ServicePair` running on its own :class:`LoopThread`, driven from blocking code."""

    def __init__(self, pair: ServicePair, *, timeout: float = 600) -> None:
        self.pair = pair
        self.timeout = timeout
        self.thread = LoopThread()

    def start(self) -> str:
        """Start both services; MemoryService's address."""
        self.thread.run(self.pair.start(), timeout=self.timeout)
        return self.pair.memory_address

    def stop(self) -> None:
        """Stop both services, then the loop."""
        self.thread.run(self.pair.stop(), timeout=self.timeout)
        self.thread.close()
