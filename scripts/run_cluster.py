"""`make run-cluster`: RetrievalService plus several MemoryService replicas on one PostgreSQL database.

    make run-cluster                       # 2 replicas on 127.0.0.1:50061-50062, RetrievalService on :50060
    STRATA_CLUSTER_REPLICAS=3 make run-cluster
    strata --target ipv4:127.0.0.1:50061,127.0.0.1:50062 agents list   # balanced round robin

Settings (environment): ``STRATA_CLUSTER_DATABASE_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/strata``; the database is created when missing),
``STRATA_CLUSTER_REPLICAS`` (2), ``STRATA_CLUSTER_MEMORY_PORTS`` (comma-separated; default from 50061
up), ``STRATA_CLUSTER_RETRIEVAL_ADDRESS`` (127.0.0.1:50060). Other ``STRATA_MEMORY_*`` and
``STRATA_RETRIEVAL_*`` settings pass through to every process. Ctrl-C or SIGTERM stops them all.
Each process is its own: kill one replica and the clients carry on with the others.
"""

from __future__ import annotations

import os
import sys

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL

from scripts.run_services import Launcher, retrieval_refusal

DEFAULT_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/strata"
DEFAULT_RETRIEVAL_ADDRESS = "127.0.0.1:50060"
FIRST_MEMORY_PORT = 50061


def memory_addresses(environ: dict[str, str]) -> list[str]:
    ports = environ.get("STRATA_CLUSTER_MEMORY_PORTS", "")
    if ports:
        return [f"127.0.0.1:{int(port)}" for port in ports.split(",")]
    count = int(environ.get("STRATA_CLUSTER_REPLICAS", "2"))
    return [f"127.0.0.1:{FIRST_MEMORY_PORT + n}" for n in range(count)]


def ensure_database(url: URL) -> None:
    """Create the PostgreSQL database named in ``url`` if it does not exist (replicas migrate it)."""
    server = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as connection:
            exists = connection.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": url.database}
            ).first()
            if exists is None:
                quoted = server.dialect.identifier_preparer.quote(str(url.database))
                connection.execute(text(f"CREATE DATABASE {quoted}"))
    finally:
        server.dispose()


def main() -> int:
    environ = dict(os.environ)
    database_url = environ.get("STRATA_CLUSTER_DATABASE_URL", DEFAULT_DATABASE_URL)
    retrieval = environ.get("STRATA_CLUSTER_RETRIEVAL_ADDRESS", DEFAULT_RETRIEVAL_ADDRESS)
    replicas = memory_addresses(environ)
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        ensure_database(url)
    with Launcher() as launcher:
        env = {"STRATA_RETRIEVAL_DATA_DIR": ".data/cluster/retrieval"} | environ  # apart from `make run`
        retrieval_process = launcher.spawn(
            "strata_retrieval.main", env | {"STRATA_RETRIEVAL_ADDRESS": retrieval}
        )
        launcher.serving("retrieval service", retrieval, retrieval_process, retrieval_refusal)
        members = [
            launcher.spawn(
                "strata_memory.main",
                environ
                | {
                    "STRATA_MEMORY_ADDRESS": address,
                    "STRATA_MEMORY_DATABASE_URL": database_url,
                    "STRATA_MEMORY_RETRIEVAL_ADDRESS": retrieval,
                },
            )
            for address in replicas
        ]
        for address, process in zip(replicas, members, strict=True):
            launcher.serving("memory replica", address, process)
        target = "ipv4:" + ",".join(replicas)
        print(f"strata: cluster ready; clients: --target {target}", file=sys.stderr, flush=True)
        # Each process is its own: the cluster carries on while RetrievalService and one replica run.
        launcher.serve(lambda: retrieval_process.poll() is None and any(p.poll() is None for p in members))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
