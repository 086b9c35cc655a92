"""`make run` (scripts/run_services.py) tells the truth (issue 31 item 3): with only
``STRATA_RETRIEVAL_ADDRESS`` changed MemoryService follows it; it prints one "next:" line; started
again while the first answers, it names what answers and exits non-zero without starting anything;
a service that dies takes the launcher down with a non-zero exit naming it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.memory_process import free_port

ROOT = Path(__file__).resolve().parents[2]


def _launch(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scripts.run_services"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its services too are killed below whatever happens
    )


def _stop(launcher: subprocess.Popen[str], drain: threading.Thread | None = None) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(launcher.pid, signal.SIGKILL)
    launcher.wait()
    if drain is not None:
        drain.join(timeout=10)
    if launcher.stderr is not None:
        launcher.stderr.close()


def _children(pid: int) -> dict[str, int]:
    """The launcher's child processes by the service module each runs."""
    found = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        for name in ("strata_memory", "strata_retrieval", "strata.console"):
            if name in command:
                found[name] = int(child)
    return found


@pytest.mark.slow
def test_make_run_follows_the_retrieval_address_refuses_a_second_start_and_dies_with_a_child(
    tmp_path: Path, model_cache: Path, embedder: OnnxSentenceEmbedder
) -> None:
    memory_address, retrieval_address = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env = os.environ | {
        "STRATA_RETRIEVAL_ADDRESS": retrieval_address,  # STRATA_MEMORY_RETRIEVAL_ADDRESS left unset
        "STRATA_MEMORY_ADDRESS": memory_address,
        "STRATA_MEMORY_DATABASE_URL": f"sqlite:///{tmp_path / 'memory.sqlite3'}",
        "STRATA_RETRIEVAL_DATA_DIR": str(tmp_path / "retrieval"),
        "STRATA_RETRIEVAL_MODEL_CACHE_DIR": str(model_cache),  # built by the session's embedder
        "STRATA_CONSOLE_PORT": str(free_port()),
    }
    first = _launch(env)
    lines: list[str] = []
    drain = threading.Thread(target=lambda: lines.extend(first.stderr or ()), daemon=True)
    try:
        assert first.stderr is not None
        for line in first.stderr:  # the services log here too; the launcher's own lines come first-hand
            lines.append(line)
            if line.startswith("next:"):
                break
        else:
            pytest.fail("the launcher never said what to do next:\n" + "".join(lines))
        drain.start()
        assert f"STRATA_MEMORY_TARGET={memory_address} strata agents list" in lines[-1]
        assert f"http://127.0.0.1:{env['STRATA_CONSOLE_PORT']}" in lines[-1]
        assert "Ctrl-C" in lines[-1]

        second = _launch(env)
        try:
            _, said = second.communicate(timeout=60)
        finally:
            _stop(second)
        assert second.returncode != 0
        assert f"{retrieval_address} already answers" in said
        assert "strata.retrieval.v1.RetrievalService" in said  # what answers, by its health service
        assert "Traceback" not in said  # nothing started
        assert "SERVING on" not in said  # nothing claimed

        with MemoryClient(memory_address, timeout=30) as client:  # writes reach the moved RetrievalService
            agent = client.create_agent(agent=pb.Agent(name="launcher"))
            client.create_passages(
                agent_id=agent.id,
                passages=[pb.Passage(text="The kettle is descaled monthly")],
                wait_searchable=True,
            )
            hits = client.search_archival(agent_id=agent.id, query="kettle").hits
            assert [hit.passage.text for hit in hits] == ["The kettle is descaled monthly"]

        os.kill(_children(first.pid)["strata_memory"], signal.SIGKILL)
        assert first.wait(timeout=30) != 0
        drain.join(timeout=10)
        assert any(line.startswith("strata: memory service exited") for line in lines), "".join(lines[-5:])
        assert sum(line.startswith("next:") for line in lines) == 1
    finally:
        _stop(first, drain if drain.is_alive() else None)
