"""deploy/kubernetes/ checked offline: every object validates against the Kubernetes 1.37 schemas
(kubernetes-validate, strict), and the parts that must agree with the services do: probes name the
gRPC services, shutdown timing covers preStop + drain + grace, containers run as non-root, keys come
from the Secret, and every STRATA_* variable is a setting the service reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from pydantic_settings import BaseSettings

from strata_memory.config import MemorySettings
from strata_retrieval.settings import RetrievalSettings

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").rglob("*.yaml"))
KUBERNETES = "1.37.0"
SETTINGS: dict[str, type[BaseSettings]] = {
    "STRATA_MEMORY_": MemorySettings,
    "STRATA_RETRIEVAL_": RetrievalSettings,
}
SERVICE_OF_IMAGE = {
    "strata-memory": "strata.memory.v1.MemoryService",
    "strata-retrieval": "strata.retrieval.v1.RetrievalService",
}
GRACE_SETTING = {"STRATA_MEMORY_": "SHUTDOWN_GRACE_SECONDS", "STRATA_RETRIEVAL_": "GRACE_SECONDS"}


def _objects() -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def _pod_templates() -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in _objects():
        if obj["kind"] in {"Deployment", "StatefulSet"}:
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container.get("env", [])}


def _prefix(container: dict[str, Any]) -> str:
    return "STRATA_MEMORY_" if container["image"].startswith("strata-memory") else "STRATA_RETRIEVAL_"


def test_there_are_manifests_for_each_kind_asked_for() -> None:
    kinds = {(obj["kind"], obj["metadata"]["name"]) for obj in _objects()}
    assert {("Deployment", "strata-memory"), ("Deployment", "strata-retrieval")} <= kinds
    assert {
        ("HorizontalPodAutoscaler", "strata-retrieval"),
        ("StatefulSet", "strata"),
        ("Secret", "strata-keys"),
    } <= kinds


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_object_validates_strictly(path: Path) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        if document:
            kubernetes_validate.validate(document, KUBERNETES, strict=True)


def test_an_invalid_object_is_refused() -> None:  # the validator is not a rubber stamp
    broken = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"replicas": "two"},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_grpc_probes_name_each_service() -> None:
    for name, pod in _pod_templates():
        for container in pod["containers"]:
            service = SERVICE_OF_IMAGE[container["image"].split(":")[0]]
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                spec = container.get(probe)
                if spec is None:
                    continue
                if "grpc" in spec:
                    assert spec["grpc"]["service"] == service, (name, probe)
                else:  # a loopback-only server is probed from inside the pod
                    assert spec["exec"]["command"][-1] == service, (name, probe)
            assert "livenessProbe" in container, name


def test_termination_grace_covers_prestop_drain_and_grace() -> None:
    for name, pod in _pod_templates():
        for container in pod["containers"]:
            env, prefix = _env(container), _prefix(container)
            pre_stop = float(container["lifecycle"]["preStop"]["exec"]["command"][-1])
            drain = float(env[f"{prefix}DRAIN_SECONDS"])
            grace = float(env[f"{prefix}{GRACE_SETTING[prefix]}"])
            assert pod["terminationGracePeriodSeconds"] >= pre_stop + drain + grace + 5, name


def test_pods_run_as_non_root_without_privileges_and_with_resources() -> None:
    for name, pod in _pod_templates():
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        for container in pod["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["capabilities"]["drop"] == ["ALL"], name
            assert container["resources"]["requests"]["cpu"], name
            assert container["resources"]["limits"]["memory"], name


def test_environment_names_only_settings_the_services_read_and_keys_come_from_the_secret() -> None:
    secret = next(obj for obj in _objects() if obj["kind"] == "Secret")
    for _, pod in _pod_templates():
        for container in pod["containers"]:
            prefix = _prefix(container)
            for variable, value in _env(container).items():
                field = variable.removeprefix(prefix).lower()
                assert field in SETTINGS[prefix].model_fields, variable
                if isinstance(value, dict):
                    assert value["secretKeyRef"]["key"] in secret["stringData"], variable
                else:
                    SETTINGS[prefix].model_validate({field: value})
                if "api_key" in field:
                    assert isinstance(value, dict), f"{variable} must come from the Secret"


def test_services_are_headless_and_the_hpa_scales_retrieval_on_cpu() -> None:
    services = [obj for obj in _objects() if obj["kind"] == "Service"]
    assert services
    assert all(service["spec"]["clusterIP"] == "None" for service in services)
    hpa = next(obj for obj in _objects() if obj["kind"] == "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "strata-retrieval",
    }
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"


def test_retrieval_replicas_keep_nothing_on_local_disk() -> None:
    """N replicas behind one Service must answer alike: both legs live in the Qdrant server."""
    pods = dict(_pod_templates())
    env = _env(pods["strata-retrieval"]["containers"][0])
    assert env["STRATA_RETRIEVAL_VECTOR_BACKEND"] == "server"
    assert isinstance(env["STRATA_RETRIEVAL_QDRANT_API_KEY"], dict)
