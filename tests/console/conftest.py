"""Real servers and a real browser for the console tests.

For the whole session, on the client tests' background loop: the shared RetrievalService, a
MemoryService with auth off (tests.client.conftest) and one with API keys on (admin key
``ADMIN_KEY``), and two consoles served by uvicorn on free ports, one per MemoryService. One headless
Debian Chromium (``/usr/bin/chromium``, never a downloaded browser) driven by Playwright; each test
gets a fresh browser context (its own cookies).
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from strata.client import AdminClient
from strata.console.app import create_app
from strata.console.settings import ConsoleSettings
from strata_memory.main import start_memory_server
from tests.client.conftest import memory_target, retrieval_target, server_loop, shared_pair  # noqa: F401
from tests.memory_process import free_port
from tests.security.conftest import ADMIN_KEY
from tests.servers import LoopThread, ServicePair

CHROMIUM = "/usr/bin/chromium"


@dataclass(frozen=True)
class ConsoleServer:
    """A console on a free port, the MemoryService it talks to, and (auth off) the tenant it acts as."""

    url: str
    memory: str
    tenant: str | None


@pytest.fixture(scope="session")
def auth_memory_database(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The store of the MemoryService with API keys on (to inject a fault: a parked index job)."""
    database: Path = tmp_path_factory.mktemp("console-auth") / "memory.sqlite3"
    return f"sqlite:///{database}"


@pytest.fixture(scope="session")
def auth_memory_target(
    server_loop: LoopThread,  # noqa: F811
    retrieval_target: str,  # noqa: F811
    shared_pair: ServicePair,  # noqa: F811
    auth_memory_database: str,
) -> Iterator[str]:
    """MemoryService with API keys required, indexing into the shared RetrievalService (a second
    MemoryService beside the shared pair's)."""
    settings = shared_pair.memory_config(
        database_url=auth_memory_database, auth_enabled=True, admin_api_key=ADMIN_KEY
    )
    server = server_loop.run(start_memory_server(settings))
    yield server.address
    server_loop.run(server.stop(0))


def serve_console(loop: LoopThread, settings: ConsoleSettings) -> Iterator[str]:
    """Serve the console app with uvicorn on ``settings.port`` until the session ends; yields its URL."""
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=settings.port, log_level="warning")
    )

    async def start() -> asyncio.Task[None]:
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        return task

    task = loop.run(start())
    yield f"http://127.0.0.1:{settings.port}"
    server.should_exit = True
    loop.run(asyncio.wait_for(task, 30))


@pytest.fixture(scope="session")
def open_console(
    server_loop: LoopThread,  # noqa: F811
    memory_target: str,  # noqa: F811
    retrieval_target: str,  # noqa: F811
) -> Iterator[ConsoleServer]:
    """The console with auth off, acting as a tenant of its own (as ``--tenant`` would)."""
    tenant = f"console-{uuid.uuid4().hex[:8]}"
    settings = ConsoleSettings(
        port=free_port(), memory_target=memory_target, retrieval_target=retrieval_target, tenant=tenant
    )
    for url in serve_console(server_loop, settings):
        yield ConsoleServer(url, memory_target, tenant)


@pytest.fixture(scope="session")
def auth_console(
    server_loop: LoopThread,  # noqa: F811
    auth_memory_target: str,
    retrieval_target: str,  # noqa: F811
) -> Iterator[ConsoleServer]:
    """The console in front of the MemoryService that requires API keys."""
    settings = ConsoleSettings(
        port=free_port(), memory_target=auth_memory_target, retrieval_target=retrieval_target, auth=True
    )
    for url in serve_console(server_loop, settings):
        yield ConsoleServer(url, auth_memory_target, None)


def tenant_key(memory: str, tenant: str) -> str:
    """A new API key for ``tenant``, made with the admin key."""
    with AdminClient(memory, api_key=ADMIN_KEY, timeout=10) as admin:
        return admin.create_api_key(tenant_id=tenant, display_name="console test").secret


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Playwright's sync API for the console's tests only: while it runs, the main thread holds its
    event loop, and every later test calling asyncio.run (tests/mcp) would fail."""
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (apt-get install -y chromium)")
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """One headless Debian Chromium for the console's tests."""
    launched = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
    )
    yield launched
    launched.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    opened = browser.new_context(viewport={"width": 1280, "height": 900})
    opened.set_default_timeout(15_000)
    yield opened
    opened.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


@pytest.fixture
def browser_context_b(browser: Browser) -> Iterator[BrowserContext]:
    """A second browser context: another person's cookies."""
    opened = browser.new_context()
    opened.set_default_timeout(15_000)
    yield opened
    opened.close()
