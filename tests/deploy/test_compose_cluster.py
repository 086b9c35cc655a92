"""docker-compose.cluster.yml cannot run here (no Docker engine); check what can be: two MemoryService
replicas on one PostgreSQL database, every dependency healthy first, settings the services read, and
no port of PostgreSQL or Qdrant published."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import make_url

from strata_memory.config import MemorySettings
from strata_retrieval.settings import RetrievalSettings

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
        assert services[name]["environment"]["STRATA_MEMORY_RETRIEVAL_ADDRESS"] == "retrieval:50052"
        assert services[name]["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "retrieval": {"condition": "service_healthy"},
        }


def test_replicas_publish_distinct_ports_on_loopback_only(services: dict[str, Any]) -> None:
    published = [port for name in REPLICAS for port in services[name]["ports"]]
    assert published == ["127.0.0.1:50061:50051", "127.0.0.1:50062:50051"]
    assert "ports" not in services["postgres"]
    assert "ports" not in services["qdrant"]


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
