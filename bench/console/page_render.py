"""How long the console takes to serve an agent's pages when the agent holds 50 blocks and 10,000
messages, end to end: browser-side HTTP request -> console -> gRPC -> MemoryService (SQLite) -> HTML.

Set-up: RetrievalService and MemoryService (API keys on) in this process on a background loop; the
console is a real ``python -m
strata.console`` process with auth on; a tenant key signs in through the console's own form.
(The services run as the MCP benchmark's do, with a fresh random admin key.) The
agent gets 50 blocks of ~600 characters (within their budgets) and 10,000 messages (appended in
batches, each waited on until searchable, so indexing is over before anything is timed).

Timed, per page, ``--requests`` sequential GETs after ``--warmup`` (wall time to the last byte):
``memory`` (/agents/A: 50 blocks with budget bars and edit forms, plus the shared-block scan),
``recall`` (/agents/A/recall: the first page of 50 of the 10,000 messages), ``prompt``
(/agents/A/prompt: compiled prompt and rendered memory), ``recall_search`` (a hybrid search over
the 10,000 messages with each hit's explained score), ``agents`` (/agents: the list with counts).

    .venv/bin/python -m bench.console.page_render       # writes bench/results/console_render.json
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.mcp.overhead import summary
from bench.mcp.sessions import free_port, wait_listening
from bench.servers import BackgroundPair, ServicePair
from strata.client import AdminClient, MemoryClient
from strata.memory.v1 import resources_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "console_render.json"
BLOCKS = 50
MESSAGES = 10_000
BATCH = 500
TOKEN = re.compile(r'name="csrf" value="([^"]+)"')
ADMIN_KEY = secrets.token_hex(24)


def services(root: Path) -> BackgroundPair:
    """Both services (API keys on) on a background event loop, so the measured clients have this
    loop to themselves."""
    memory = {"auth_enabled": True, "admin_api_key": ADMIN_KEY, "log_json": False}
    return BackgroundPair(ServicePair(root, memory_settings=memory, quick_retries=False))


def populate(target: str, key: str) -> str:
    """An agent with BLOCKS blocks and MESSAGES messages, fully indexed; its id."""
    blocks = [
        pb.Block(label=f"notes/{i:02d}", value=f"Block {i}: " + "remember this detail. " * 28, limit=2000)
        for i in range(BLOCKS)
    ]
    with MemoryClient(target, api_key=key, timeout=600) as client:
        agent = client.create_agent(agent=pb.Agent(name="fifty-blocks"), blocks=blocks)
        roles = (pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT)
        for start in range(0, MESSAGES, BATCH):
            messages = [
                pb.Message(role=roles[i % 2], content=f"message {i}: the weather on day {i % 365} was fine")
                for i in range(start, start + BATCH)
            ]
            client.append_messages(agent_id=agent.id, messages=messages, wait_searchable=True)
    return agent.id


class Browser:
    """A cookie-keeping HTTP client of the console (one keep-alive connection)."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookie = ""

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, bytes]:
        headers = {"Cookie": self.cookie} if self.cookie else {}
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        content = response.read()
        if (cookie := response.getheader("set-cookie")) is not None:
            self.cookie = cookie.split(";", 1)[0]
        return response.status, content

    def sign_in(self, key: str) -> None:
        _, page = self.request("GET", "/signin")
        found = TOKEN.search(page.decode())
        assert found, "no form token on the sign-in page"
        status, _ = self.request("POST", "/signin", {"api_key": key, "next": "/agents", "csrf": found[1]})
        assert status == 303, f"sign-in refused: HTTP {status}"


def measure(browser: Browser, pages: dict[str, str], warmup: int, requests: int) -> dict[str, Any]:
    """Per page: timings of ``requests`` GETs (after ``warmup``) and the page's size."""
    out: dict[str, Any] = {}
    for name, path in pages.items():
        for _ in range(warmup):
            browser.request("GET", path)
        samples, size = [], 0
        for _ in range(requests):
            started = time.perf_counter()
            status, body = browser.request("GET", path)
            samples.append(time.perf_counter() - started)
            assert status == 200, f"{path}: HTTP {status}"
            size = len(body)
        out[name] = {**summary(samples), "bytes": size}
    return out


def console_process(target: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "STRATA_CONSOLE_PORT": str(port),
        "STRATA_CONSOLE_MEMORY_TARGET": target,
        "STRATA_CONSOLE_AUTH": "true",
    }
    process = subprocess.Popen([sys.executable, "-m", "strata.console"], env=env)
    wait_listening(port, process)
    return process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=50, help="timed GETs per page")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="strata-console-bench-") as folder:
        servers = services(Path(folder))
        console: subprocess.Popen[bytes] | None = None
        try:
            target = servers.start()
            with AdminClient(target, api_key=ADMIN_KEY, timeout=30) as admin:
                key = admin.create_api_key(tenant_id="bench").secret
            began = time.perf_counter()
            agent = populate(target, key)
            populate_seconds = time.perf_counter() - began
            port = free_port()
            console = console_process(target, port)
            browser = Browser(port)
            browser.sign_in(key)
            pages = {
                "memory": f"/agents/{agent}",
                "recall": f"/agents/{agent}/recall",
                "prompt": f"/agents/{agent}/prompt",
                "recall_search": f"/agents/{agent}/recall?q=weather+on+day+42",
                "agents": "/agents",
            }
            results = measure(browser, pages, args.warmup, args.requests)
        finally:
            if console is not None:
                console.terminate()
                console.wait(timeout=30)
            servers.stop()
    report = {
        "benchmark": "bench.console.page_render",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "agent": {"blocks": BLOCKS, "messages": MESSAGES},
        "requests_per_page": args.requests,
        "populate_seconds": round(populate_seconds, 1),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "results": results,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
