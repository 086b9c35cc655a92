"""``strata-memory`` replicas on one store, started as child processes for the replica benchmarks.

A :class:`Cluster` is one configuration: ``replicas`` processes on a fresh SQLite file or a fresh
PostgreSQL schema (dropped on :meth:`Cluster.stop`). Each replica's store connections carry the
cluster's ``application_name``, so the PostgreSQL backends serving it can be found (and their CPU
read) in ``pg_stat_activity``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import grpc
from sqlalchemy import create_engine, make_url, text

from strata.contract.channel_policy import channel_options, strata_retryable
from strata_serving.probe import wait_until_serving


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def balanced_channel(target: str) -> grpc.aio.Channel:
    """A channel to ``ipv4:a,b,c`` balanced round robin (the client's own policy), with its retries."""
    return grpc.aio.insecure_channel(
        target, options=channel_options(strata_retryable(), balance_on_health="")
    )


def child_environment(**settings: str) -> dict[str, str]:
    """This environment without any ``STRATA_*`` setting, plus ``settings``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")} | settings


class Cluster:
    def __init__(
        self,
        backend: str,
        replicas: int,
        postgres: str,
        work: Path,
        *,
        retrieval_address: str | None = None,
        with_metrics: bool = False,
    ) -> None:
        """``retrieval_address``: where the outbox delivers (default: a port nobody listens on);
        ``with_metrics``: each replica serves Prometheus metrics (at ``metrics``, in replica order)."""
        self.backend, self.replicas = backend, replicas
        self.application_name = f"bench_{backend}_{replicas}_{uuid.uuid4().hex[:6]}"
        self._postgres = postgres
        self._schema = f"bench_replicas_{uuid.uuid4().hex[:8]}"
        if backend == "sqlite":
            self.url = f"sqlite:///{work / uuid.uuid4().hex}.sqlite3"
        else:
            self.url = (
                make_url(postgres)
                .update_query_dict(
                    {"options": f"-csearch_path={self._schema}", "application_name": self.application_name}
                )
                .render_as_string(hide_password=False)
            )
        self._unreachable = socket.socket()  # bound, never listening: refused at once
        self._unreachable.bind(("127.0.0.1", 0))
        self._retrieval = retrieval_address or f"127.0.0.1:{self._unreachable.getsockname()[1]}"
        self.addresses = [f"127.0.0.1:{free_port()}" for _ in range(replicas)]
        self.metrics = [f"127.0.0.1:{free_port()}" for _ in range(replicas)] if with_metrics else []
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def target(self) -> str:
        return "ipv4:" + ",".join(self.addresses)

    def start(self) -> None:
        if self.backend == "postgresql":
            self._admin(f'CREATE SCHEMA "{self._schema}"')
        environ = child_environment(
            STRATA_MEMORY_DATABASE_URL=self.url,
            STRATA_MEMORY_RETRIEVAL_ADDRESS=self._retrieval,
            STRATA_MEMORY_LOG_LEVEL="WARNING",
            STRATA_MEMORY_DRAIN_SECONDS="0",  # nobody to move traffic away from at the end
            STRATA_MEMORY_OUTBOX_MAX_BACKOFF_SECONDS="0.5",
        )
        for n, address in enumerate(self.addresses):
            metrics = {"STRATA_MEMORY_METRICS_ADDRESS": self.metrics[n]} if self.metrics else {}
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "strata_memory.main"],
                    env=environ | {"STRATA_MEMORY_ADDRESS": address} | metrics,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )

    def wait_serving(self) -> None:
        for address, process in zip(self.addresses, self.processes, strict=True):
            wait_until_serving(address, process)

    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def backend_pids(self) -> list[int]:
        """The PostgreSQL server processes holding this cluster's store connections (none on SQLite)."""
        if self.backend != "postgresql":
            return []
        engine = create_engine(self._postgres)
        try:
            with engine.connect() as conn:
                found = conn.execute(
                    text("SELECT pid FROM pg_stat_activity WHERE application_name = :name"),
                    {"name": self.application_name},
                )
                return [int(row[0]) for row in found]
        finally:
            engine.dispose()

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._unreachable.close()
        if self.backend == "postgresql":
            self._admin(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE')

    def _admin(self, statement: str) -> None:
        engine = create_engine(self._postgres)
        try:
            with engine.begin() as conn:
                conn.execute(text(statement))
        finally:
            engine.dispose()
