"""``python -m strata_retrieval.main`` starts a serving process that stops cleanly on SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.memory_process import free_port


def _listening_address(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    for line in process.stderr:
        entry = json.loads(line)
        if entry["msg"].startswith("listening on "):
            return str(entry["msg"].removeprefix("listening on "))
    raise AssertionError("the service exited before listening")


@pytest.mark.slow
def test_module_entry_point_serves_and_stops_on_sigterm(
    tmp_path: Path, model_cache: Path, embedder: OnnxSentenceEmbedder
) -> None:
    env = {
        **os.environ,
        "STRATA_RETRIEVAL_ADDRESS": "127.0.0.1:0",
        "STRATA_RETRIEVAL_DATA_DIR": str(tmp_path / "data"),
        "STRATA_RETRIEVAL_MODEL_CACHE_DIR": str(model_cache),  # built by the session's embedder
        "STRATA_RETRIEVAL_GRACE_SECONDS": "0.5",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "strata_retrieval.main"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        address = _listening_address(process)
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 60
            status = health_pb2.HealthCheckResponse.NOT_SERVING
            while status != health_pb2.HealthCheckResponse.SERVING and time.monotonic() < deadline:
                time.sleep(0.1)
                status = health.Check(
                    health_pb2.HealthCheckRequest(service="strata.retrieval.v1.RetrievalService")
                ).status
            assert status == health_pb2.HealthCheckResponse.SERVING
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
    assert (tmp_path / "data" / "manifest.json").exists()


@pytest.mark.slow
def test_make_run_stops_at_once_with_the_reason_when_retrieval_refuses_its_index(
    tmp_path: Path, model_cache: Path, embedder: OnnxSentenceEmbedder
) -> None:
    """`make run`'s launcher on a data folder built with another embedding model: RetrievalService
    stays NOT_SERVING (it would refuse every call), and the launcher says why and stops instead of
    waiting out its 120 s for SERVING with nothing to show."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text(
        json.dumps({"embedding_model": "bge-small-en", "embedding_dimension": 384})
    )
    env = {
        **os.environ,
        "STRATA_RETRIEVAL_ADDRESS": f"127.0.0.1:{free_port()}",
        "STRATA_MEMORY_ADDRESS": f"127.0.0.1:{free_port()}",
        "STRATA_RETRIEVAL_DATA_DIR": str(data),
        "STRATA_RETRIEVAL_MODEL_CACHE_DIR": str(model_cache),  # built by the session's embedder
    }
    began = time.monotonic()
    launcher = subprocess.Popen(
        [sys.executable, "-m", "scripts.run_services"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its services too are killed below whatever happens
    )
    try:
        _, stderr = launcher.communicate(timeout=100)  # under the launcher's own 120 s wait for SERVING
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
    assert launcher.returncode != 0
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("retrieval service: refuses to serve"), last
    assert "EMBEDDING_MODEL_MISMATCH" in last
    assert "bge-small-en" in last
    assert time.monotonic() - began < 100
