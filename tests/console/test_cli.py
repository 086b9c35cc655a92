"""``strata console`` as a person starts it: a real process serving the agents page."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from strata.cli.main import main
from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb
from tests.memory_process import free_port


def test_strata_console_serves_the_tenants_agents(memory_target: str) -> None:
    tenant = "cli-console"
    with MemoryClient(memory_target, tenant=tenant, timeout=10) as client:
        client.create_agent(agent=pb.Agent(name="served by the cli"))
    port = free_port()
    command = [sys.executable, "-m", "strata.cli.main", "--target", memory_target, "--tenant", tenant]
    process = subprocess.Popen(
        [*command, "console", "--port", str(port)],
        env={k: v for k, v in os.environ.items() if not k.startswith("STRATA_")},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        assert process.stderr.readline().strip() == f"strata console: open http://127.0.0.1:{port}"
        page = ""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/agents", timeout=5) as response:
                    page = response.read().decode()
                break
            except OSError:  # not listening yet
                assert process.poll() is None, "strata console exited"
                time.sleep(0.1)
        assert "served by the cli" in page
        assert tenant in page
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_strata_console_refuses_a_bad_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STRATA_CONSOLE_PORT", "eighty")
    assert main(["console"]) == 2
    assert "STRATA_CONSOLE_PORT must be a whole number" in capsys.readouterr().err
