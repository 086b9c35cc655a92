"""`make run-cluster` (scripts/run_cluster.py) starts RetrievalService and MemoryService replicas on one
PostgreSQL database; a client balanced over the replicas writes, indexes and reads through any of them,
and SIGTERM stops every process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb
from tests.store_backends import postgres_schema

__all__ = ["postgres_schema"]
ROOT = Path(__file__).resolve().parents[2]


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [int(sock.getsockname()[1]) for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


@pytest.fixture
def cluster(postgres_schema: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    retrieval, *memory = free_ports(3)
    env = os.environ | {
        "STRATA_CLUSTER_DATABASE_URL": postgres_schema,
        "STRATA_CLUSTER_MEMORY_PORTS": ",".join(map(str, memory)),
        "STRATA_CLUSTER_RETRIEVAL_ADDRESS": f"127.0.0.1:{retrieval}",
        "STRATA_RETRIEVAL_DATA_DIR": str(tmp_path / "retrieval"),
        "STRATA_RETRIEVAL_MODEL_CACHE_DIR": str(tmp_path / "models"),
    }
    launcher = subprocess.Popen(
        [sys.executable, "-m", "scripts.run_cluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    drain = threading.Thread(target=lambda: launcher.stderr and launcher.stderr.read(), daemon=True)
    try:
        assert launcher.stderr is not None
        for line in launcher.stderr:  # the services log here too; the launcher's own lines start "strata:"
            if line.startswith("strata: cluster ready"):
                break
        else:
            pytest.fail(f"the launcher exited ({launcher.wait()}) before the cluster was ready")
        drain.start()  # reads the rest, so the pipe never fills
        yield launcher, "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in memory)
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGKILL)
            launcher.wait()
        if drain.is_alive():
            drain.join(timeout=30)  # the launcher is gone: its pipe is at end of file
        if launcher.stderr is not None:
            launcher.stderr.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_cluster_serves_balanced_clients_and_stops_on_sigterm(
    cluster: tuple[subprocess.Popen[str], str],
) -> None:
    launcher, target = cluster
    with MemoryClient(target, timeout=60) as client:
        agent = client.create_agent(agent=pb.Agent(name="clustered"))
        client.create_passages(
            agent_id=agent.id, passages=[pb.Passage(text="the cluster indexes this")], wait_searchable=True
        )
        found = client.search_archival(agent_id=agent.id, query="cluster indexes", top_k=1)
        assert [hit.passage.text for hit in found.hits] == ["the cluster indexes this"]
        assert {client.get_agent(agent_id=agent.id).id for _ in range(4)} == {agent.id}
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=60) == 0
