"""deploy/kubernetes/ checked offline: a kustomize base (the keys) with a ``distributed`` and an
``embedded`` overlay and an optional ServiceMonitor component. Each overlay is assembled here as
``kubectl apply -k`` would (its resources, the base, the Secret generated from the example file) and
every object validates against the Kubernetes 1.37 schemas (kubernetes-validate, strict); the parts
that must agree with the services do: probes name the gRPC services, shutdown timing covers preStop +
drain + grace, containers run as non-root, keys come from the generated Secret and no file ships one,
every STRATA_* variable is a setting the service reads, PDBs, NetworkPolicies, topology spread and
HPAs cover each tier."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from pydantic_settings import BaseSettings

from strata_memory.settings import MemorySettings
from strata_retrieval.settings import RetrievalSettings
from strata_serving.key_strength import key_weakness

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "deploy" / "kubernetes"
OVERLAYS = {"distributed": KIT / "overlays" / "distributed", "embedded": KIT / "overlays" / "embedded"}
SECRET_EXAMPLE = KIT / "base" / "secrets.env.example"
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


def _env_file(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return {key: value for key, _, value in (line.partition("=") for line in lines)}


def _assemble(folder: Path) -> list[dict[str, Any]]:
    """The objects a kustomization (or component) in ``folder`` yields: its resources (files, or
    folders holding a kustomization), its components, and its generated Secrets (from the example
    file, since the real one is never in the repository)."""
    spec = yaml.safe_load((folder / "kustomization.yaml").read_text())
    found: list[dict[str, Any]] = []
    for entry in [*spec.get("resources", []), *spec.get("components", [])]:
        path = (folder / entry).resolve()
        found += _assemble(path) if path.is_dir() else [d for d in yaml.safe_load_all(path.read_text()) if d]
    for generator in spec.get("secretGenerator", []):
        (source,) = generator["envs"]
        assert (folder / source).resolve() == (SECRET_EXAMPLE.parent / "secrets.env").resolve()
        data = _env_file(SECRET_EXAMPLE)
        found.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": generator["name"]},
                "stringData": data,
            }
        )
    return found


def _objects(overlay: str | None = None) -> list[dict[str, Any]]:
    names = [overlay] if overlay else list(OVERLAYS)
    return [obj for name in names for obj in _assemble(OVERLAYS[name])]


def _pod_templates(overlay: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in _objects(overlay):
        if obj["kind"] in {"Deployment", "StatefulSet"}:
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container.get("env", [])}


def _prefix(container: dict[str, Any]) -> str:
    return "STRATA_MEMORY_" if container["image"].startswith("strata-memory") else "STRATA_RETRIEVAL_"


def test_each_overlay_holds_its_topology_and_only_its_own() -> None:
    kinds = {name: {(obj["kind"], obj["metadata"]["name"]) for obj in _objects(name)} for name in OVERLAYS}
    assert {
        ("Deployment", "strata-memory"),
        ("Deployment", "strata-retrieval"),
        ("HorizontalPodAutoscaler", "strata-memory"),
        ("HorizontalPodAutoscaler", "strata-retrieval"),
        ("PodDisruptionBudget", "strata-memory"),
        ("PodDisruptionBudget", "strata-retrieval"),
        ("NetworkPolicy", "strata-memory"),
        ("NetworkPolicy", "strata-retrieval"),
        ("Secret", "strata-keys"),
    } <= kinds["distributed"]
    assert {("StatefulSet", "strata"), ("NetworkPolicy", "strata"), ("Secret", "strata-keys")} <= kinds[
        "embedded"
    ]
    assert not any(kind == "StatefulSet" for kind, _ in kinds["distributed"])
    assert not any(kind == "Deployment" for kind, _ in kinds["embedded"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_validates_strictly(overlay: str) -> None:
    for document in _objects(overlay):
        kubernetes_validate.validate(document, KUBERNETES, strict=True)


def test_no_file_ships_a_key_and_the_secret_comes_from_an_ignored_file() -> None:
    for path in KIT.rglob("*"):
        if path.suffix in {".yaml", ".yml", ".json"}:
            for document in yaml.safe_load_all(path.read_text()):
                assert not (document and document.get("kind") == "Secret"), f"{path} ships a Secret"
    secret = ROOT / "deploy" / "kubernetes" / "base" / "secrets.env"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(secret)], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "secrets.env must be ignored by git"
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", str(secret)], cwd=ROOT, capture_output=True, check=False
    )
    assert tracked.returncode != 0, "secrets.env must not be in the repository"
    for name, value in _env_file(SECRET_EXAMPLE).items():  # were the example applied, nothing starts
        if name.endswith("-api-key"):
            assert key_weakness(value) is not None, name


def test_the_optional_servicemonitor_scrapes_each_services_metrics_port() -> None:
    (monitor,) = [
        obj for obj in _assemble(KIT / "components" / "servicemonitor") if obj["kind"] == "ServiceMonitor"
    ]
    component = yaml.safe_load((KIT / "components" / "servicemonitor" / "kustomization.yaml").read_text())
    assert component["kind"] == "Component"
    assert [endpoint["port"] for endpoint in monitor["spec"]["endpoints"]] == ["metrics"]
    services = [obj for obj in _objects("distributed") if obj["kind"] == "Service"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    for service in services:
        assert selector.items() <= service["metadata"]["labels"].items()
        assert "metrics" in {port["name"] for port in service["spec"]["ports"]}


def test_replicas_spread_over_nodes_and_zones_and_the_model_is_in_the_image() -> None:
    for name, pod in _pod_templates("distributed"):
        keys = {constraint["topologyKey"] for constraint in pod["topologySpreadConstraints"]}
        assert keys == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}, name
    dockerfile = (ROOT / "Dockerfile").read_text()
    for _, pod in _pod_templates():
        for container in pod["containers"]:
            if container["image"].startswith("strata-retrieval"):
                cache = _env(container)["STRATA_RETRIEVAL_MODEL_CACHE_DIR"]
                assert f"OnnxSentenceEmbedder.load(Path('{cache}')" in dockerfile
                mounts = [m["mountPath"] for m in container.get("volumeMounts", [])]
                assert not any(cache.startswith(mount) for mount in mounts), (
                    "a volume would hide the baked model"
                )


def test_only_memoryservice_reaches_retrievalservice() -> None:
    (policy,) = [
        o
        for o in _objects("distributed")
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "strata-retrieval"
    ]
    grpc_rule = next(
        rule for rule in policy["spec"]["ingress"] if {"port": 50052, "protocol": "TCP"} in rule["ports"]
    )
    assert grpc_rule["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "strata-memory"}}}
    ]


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


def test_services_are_headless_and_the_hpas_scale_both_services_on_cpu() -> None:
    services = [obj for obj in _objects() if obj["kind"] == "Service"]
    assert services
    assert all(service["spec"]["clusterIP"] == "None" for service in services)
    hpas = [obj for obj in _objects("distributed") if obj["kind"] == "HorizontalPodAutoscaler"]
    assert sorted(hpa["spec"]["scaleTargetRef"]["name"] for hpa in hpas) == [
        "strata-memory",
        "strata-retrieval",
    ]
    for hpa in hpas:
        assert hpa["spec"]["scaleTargetRef"]["kind"] == "Deployment"
        assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"


def test_retrieval_replicas_keep_nothing_on_local_disk() -> None:
    """N replicas behind one Service must answer alike: both legs live in the Qdrant server."""
    pods = dict(_pod_templates("distributed"))
    env = _env(pods["strata-retrieval"]["containers"][0])
    assert env["STRATA_RETRIEVAL_VECTOR_BACKEND"] == "server"
    assert isinstance(env["STRATA_RETRIEVAL_QDRANT_API_KEY"], dict)
