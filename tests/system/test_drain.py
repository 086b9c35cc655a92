"""SIGTERM under load: two RetrievalService processes behind one round-robin client that follows
health (gRPC client-side health checking, i.e. Health/Watch), one replica stopped while the client
searches in a loop; no call may fail. (Before Watch worked, every call of this client failed.)

The replica reports NOT_SERVING at once (a health-following client moves away through Watch), keeps
answering for its drain period, then stops accepting and finishes what it holds. The loop is bounded
in calls and time and reports its counts in the assertion message.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder

SERVICE = "strata.retrieval.v1.RetrievalService"
MAX_CALLS = 3000
MAX_SECONDS = 90.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Replica:
    address: str
    process: subprocess.Popen[bytes]
    log: BinaryIO


def _start(root: Path, name: str, models: Path) -> Replica:
    address = f"127.0.0.1:{_free_port()}"
    env = {key: value for key, value in os.environ.items() if not key.startswith("STRATA_")}
    env |= {
        "STRATA_RETRIEVAL_ADDRESS": address,
        "STRATA_RETRIEVAL_DATA_DIR": str(root / name),
        "STRATA_RETRIEVAL_MODEL_CACHE_DIR": str(models),
        "STRATA_RETRIEVAL_DRAIN_SECONDS": "1.5",
        "STRATA_RETRIEVAL_GRACE_SECONDS": "5",
        "STRATA_RETRIEVAL_WORKERS": "1",
        "STRATA_RETRIEVAL_EMBEDDER_THREADS": "1",
        "STRATA_RETRIEVAL_LOG_LEVEL": "WARNING",
    }
    log = (root / f"{name}.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "strata_retrieval.main"], env=env, stderr=log)
    return Replica(address, process, log)


def _wait_serving(replica: Replica, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    with grpc.insecure_channel(replica.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            assert replica.process.poll() is None, "the replica exited during start-up"
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise AssertionError(f"{replica.address} did not report SERVING")


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[list[Replica]]:
    models = tmp_path / "models"
    OnnxSentenceEmbedder.load(models, threads=1)  # build the graph once, before two processes want it
    started = [_start(tmp_path, name, models) for name in ("a", "b")]
    try:
        for replica in started:
            _wait_serving(replica)
        yield started
    finally:
        for replica in started:
            if replica.process.poll() is None:
                replica.process.kill()
            replica.process.wait(timeout=30)
            replica.log.close()


def _service_config() -> str:
    """Round robin over the replicas, each in rotation only while its Health/Watch says SERVING."""
    return json.dumps(
        {"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": SERVICE}}
    )


@pytest.mark.timeout(240)
def test_sigterm_under_load_fails_no_call(replicas: list[Replica]) -> None:
    target = "ipv4:" + ",".join(replica.address for replica in replicas)
    options = [("grpc.service_config", _service_config()), ("grpc.enable_retries", 1)]
    request = pb.SearchRequest(
        query="rolling update", mode=pb.SEARCH_MODE_HYBRID, top_k=3, filter=pb.DocumentFilter(tenant_id="t")
    )
    stopping = replicas[0].process
    ok = failed = after_exit = 0
    failures: list[str] = []
    with grpc.insecure_channel(target, options=options) as channel:
        search = retrieval_pb2_grpc.RetrievalServiceStub(channel).Search
        started = time.monotonic()
        for _ in range(MAX_CALLS):
            if ok == 50:
                stopping.send_signal(signal.SIGTERM)
            try:
                search(request, timeout=10, wait_for_ready=False)
                ok += 1
            except grpc.RpcError as error:
                failed += 1
                failures.append(f"{error.code().name}: {error.details()}")
            if stopping.poll() is not None:
                after_exit += 1
                if after_exit >= 100:
                    break
            if time.monotonic() - started > MAX_SECONDS:
                break
    summary = f"ok={ok} failed={failed} after_exit={after_exit} first failures={failures[:3]}"
    print(summary)
    assert stopping.returncode == 0, summary
    assert after_exit >= 100, summary
    assert failed == 0, summary
