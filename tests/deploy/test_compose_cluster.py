"""docker-compose.cluster.yml cannot run here (no Docker engine); check what can be: two MemoryService
replicas on one PostgreSQL database, two RetrievalService replicas on the server engine (both legs in
Qdrant, nothing on their disk) that MemoryService balances over, Qdrant's key on the server and on
every client of it, every dependency healthy first, settings the services read, pinned images, and no
port of PostgreSQL, Qdrant or RetrievalService published."""

from __future__ import annotations

import http.server
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import make_url

from strata_memory.settings import MemorySettings
from strata_retrieval.settings import RetrievalSettings, VectorBackend

ROOT = Path(__file__).resolve().parents[2]
REPLICAS = ("memory-1", "memory-2")


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.cluster.yml").read_text())
    return dict(loaded["services"])


def test_two_memory_replicas_share_one_postgresql_database(services: dict[str, Any]) -> None:
    urls = {services[name]["environment"]["STRATA_MEMORY_DATABASE_URL"] for name in REPLICAS}
    assert len(urls) == 1
    url = make_url(re.sub(r"\$\{[^}]*\}", "secret", urls.pop()))
    assert (url.get_backend_name(), url.get_driver_name(), url.host) == ("postgresql", "psycopg", "postgres")
    for name in REPLICAS:
        assert services[name]["environment"]["STRATA_MEMORY_RETRIEVAL_ADDRESS"] == "dns:///retrieval:50052"
        assert services[name]["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "retrieval": {"condition": "service_healthy"},
        }


def test_replicas_publish_distinct_ports_on_loopback_only(services: dict[str, Any]) -> None:
    published = [port for name in REPLICAS for port in services[name]["ports"]]
    assert published == ["127.0.0.1:50061:50051", "127.0.0.1:50062:50051"]
    for name in ("postgres", "qdrant", "retrieval"):  # reached only over the compose network
        assert "ports" not in services[name], name
        assert "network_mode" not in services[name], name  # "host" would put them on every interface


def test_two_retrieval_replicas_on_the_server_engine_keep_nothing_on_their_disk(
    services: dict[str, Any],
) -> None:
    retrieval = services["retrieval"]
    assert retrieval["deploy"]["replicas"] == 2
    environment = retrieval["environment"]
    assert VectorBackend(environment["STRATA_RETRIEVAL_VECTOR_BACKEND"]) is VectorBackend.SERVER
    assert environment["STRATA_RETRIEVAL_QDRANT_URL"] == "http://qdrant:6333"
    assert "volumes" not in retrieval  # both legs live in Qdrant; the model cache is rebuilt on start
    assert retrieval["depends_on"] == {"qdrant": {"condition": "service_healthy"}}


def test_qdrant_and_each_of_its_clients_use_the_same_key(services: dict[str, Any]) -> None:
    key = services["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"]
    assert key.startswith("${QDRANT_API_KEY:?")
    assert services["retrieval"]["environment"]["STRATA_RETRIEVAL_QDRANT_API_KEY"] == key


def test_every_image_is_pinned_to_a_release(services: dict[str, Any]) -> None:
    images = {name: service["image"] for name, service in services.items() if "image" in service}
    assert set(images) == {"postgres", "qdrant"}
    for name, image in images.items():
        assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+(\.\d+)?(-[\w.]+)?", image), f"{name}: {image}"


def test_every_service_has_a_health_check(services: dict[str, Any]) -> None:
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in services
            assert condition == {"condition": "service_healthy"}


def test_environment_names_only_settings_the_services_read(services: dict[str, Any]) -> None:
    checks: list[tuple[str, type[MemorySettings] | type[RetrievalSettings], str]] = [
        *((name, MemorySettings, "STRATA_MEMORY_") for name in REPLICAS),
        ("retrieval", RetrievalSettings, "STRATA_RETRIEVAL_"),
    ]
    for name, settings, prefix in checks:
        for variable, value in services[name]["environment"].items():
            field = variable.removeprefix(prefix).lower()
            assert field in settings.model_fields, variable
            if "${" not in str(value):
                settings.model_validate({field: value})


def test_secrets_come_from_the_environment(services: dict[str, Any]) -> None:
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    assert services["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"].startswith("${QDRANT_API_KEY:?")
    for name in REPLICAS:
        assert services[name]["environment"]["STRATA_MEMORY_AUTH_ENABLED"] == "true"


def test_qdrants_health_check_passes_only_a_server_that_accepts_its_key(services: dict[str, Any]) -> None:
    """Run the compose probe itself against a stand-in for Qdrant's HTTP port that, like a Qdrant
    release that guards /readyz, answers 401 without the key: the probe must send the container's
    own QDRANT__SERVICE__API_KEY (compose turns `$$` into `$`)."""
    key = "s3cret-key-for-the-probe"

    class Readyz(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.path == "/readyz" and self.headers.get("api-key") == key
            self.send_response(200 if ok else 401)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Readyz)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kind, command = services["qdrant"]["healthcheck"]["test"]
        assert kind == "CMD-SHELL"
        command = command.replace("$$", "$").replace("/6333", f"/{server.server_address[1]}")

        def probe(env_key: str) -> int:
            env = {"PATH": "/usr/bin:/bin", "QDRANT__SERVICE__API_KEY": env_key}
            return subprocess.run(["sh", "-c", command], check=False, env=env, timeout=10).returncode

        assert probe(key) == 0
        assert probe("another-key") != 0
    finally:
        server.shutdown()
        server.server_close()
