"""Every reason the servers can raise is in its API's ErrorReason catalogue, with the right status code.

The code is read, not run: every ``default_reason = "X"`` of an error class and every ``reason="X"``
passed to a call under services/ is a reason the servers can send. If this test fails after you added
a reason, add a value (status code, metadata keys) to proto/strata/<api>/v1/errors.proto, then run
`make proto` and `make docs` (docs/errors.md is generated from it).
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts.proto_descriptors import APIS, Reason, catalogue, load
from strata_serving import errors
from strata_serving.status import STATUS_CODES
from tests.contract.tooling import ROOT

SERVICES = ROOT / "services"
SHARED = SERVICES / "serving"
"""strata_serving's reasons (categories, auth, tenancy, admission) can come from any API."""
ADMIN_FILES = {
    SERVICES / "memory/strata_memory/admin_servicer.py",
    SERVICES / "memory/strata_memory/store/api_keys.py",
}
"""MemoryService hosts AdminService: these files raise on its behalf."""
CATEGORIES = {cls.__name__: code.name for cls, code in STATUS_CODES.items()}


@dataclass(frozen=True)
class Raised:
    reason: str
    where: str
    status: str | None  # known when the raising class or the called category fixes it


def apis_of(path: Path) -> tuple[str, ...]:
    if path.is_relative_to(SHARED):
        return APIS
    if path in ADMIN_FILES:
        return ("admin",)
    return (path.relative_to(SERVICES).parts[0],)


def dynamic_reasons(path: Path, node: ast.JoinedStr) -> list[str]:
    """f-string reasons, expanded from the table that drives them (a new one fails until added here)."""
    if path.name == "retrieval_connection.py" and ast.unparse(node) == "f'RETRIEVAL_{refusal.code().name}'":
        module = importlib.import_module("strata_memory.indexing.retrieval_connection")
        return [f"RETRIEVAL_{code.name}" for code in module._CALLER_ERRORS]
    raise AssertionError(
        f"{path}:{node.lineno}: reason {ast.unparse(node)} is computed; list its values here"
    )


def class_status(module_path: Path, class_name: str) -> str:
    """The status the class maps to: its nearest category, as strata_serving.status finds it."""
    parts = module_path.relative_to(SERVICES).parts[1:]
    module = importlib.import_module(".".join(parts).removesuffix(".py"))
    cls = getattr(module, class_name)
    return next(CATEGORIES[c.__name__] for c in cls.__mro__ if c.__name__ in CATEGORIES and c in STATUS_CODES)


def raised_in(path: Path) -> list[Raised]:
    found: list[Raised] = []
    tree = ast.parse(path.read_text(), filename=str(path))
    where = f"{path.relative_to(ROOT)}"
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign)
                    and [ast.unparse(t) for t in statement.targets] == ["default_reason"]
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)
                    and node.name != "StrataError"  # the base class is never raised itself (checked below)
                ):
                    status = class_status(path, node.name)
                    found.append(Raised(statement.value.value, f"{where}: class {node.name}", status))
        if isinstance(node, ast.Call):
            callee = ast.unparse(node.func)
            category = CATEGORIES.get(callee.removesuffix(".field"))
            for keyword in node.keywords:
                if keyword.arg != "reason":
                    continue
                if (
                    isinstance(keyword.value, ast.Constant)
                    and isinstance(keyword.value.value, str)
                    and keyword.value.value
                ):
                    found.append(Raised(keyword.value.value, f"{where}:{node.lineno}", category))
                elif isinstance(keyword.value, ast.JoinedStr):
                    found += [
                        Raised(r, f"{where}:{node.lineno}", category)
                        for r in dynamic_reasons(path, keyword.value)
                    ]
    return found


def scan() -> dict[str, list[Raised]]:
    """Reasons by API, from every non-generated module under services/."""
    by_api: dict[str, list[Raised]] = defaultdict(list)
    for path in sorted(SERVICES.rglob("*.py")):
        if "/migrations/" in str(path) or path.name.endswith("_pb2.py"):
            continue
        for raised in raised_in(path):
            for api in apis_of(path):
                by_api[api].append(raised)
    return by_api


@pytest.fixture(scope="module")
def catalogues() -> dict[str, dict[str, Reason]]:
    files = load()
    return {api: {r.name: r for r in catalogue(files, api)} for api in APIS}


@pytest.fixture(scope="module")
def raised() -> dict[str, list[Raised]]:
    return scan()


@pytest.mark.parametrize("api", APIS)
def test_every_reason_the_code_raises_is_in_the_catalogue(
    api: str, catalogues: dict[str, dict[str, Reason]], raised: dict[str, list[Raised]]
) -> None:
    missing = sorted({f"{r.reason} ({r.where})" for r in raised[api] if r.reason not in catalogues[api]})
    assert not missing, f"add to proto/strata/{api}/v1/errors.proto ErrorReason: {missing}"


@pytest.mark.parametrize("api", APIS)
def test_each_reason_is_documented_with_the_status_the_code_sends(
    api: str, catalogues: dict[str, dict[str, Reason]], raised: dict[str, list[Raised]]
) -> None:
    wrong = sorted(
        f"{r.reason}: code sends {r.status} ({r.where}), catalogue says {catalogues[api][r.reason].status}"
        for r in raised[api]
        if r.status is not None
        and r.reason in catalogues[api]
        and catalogues[api][r.reason].status != r.status
    )
    assert not wrong, wrong


@pytest.mark.parametrize("api", APIS)
def test_the_catalogue_lists_nothing_the_code_never_raises(
    api: str, catalogues: dict[str, dict[str, Reason]], raised: dict[str, list[Raised]]
) -> None:
    sent = {r.reason for r in raised[api]}
    assert sorted(set(catalogues[api]) - sent) == []


def test_the_scan_sees_the_known_reasons(raised: dict[str, list[Raised]]) -> None:
    """Guards the scanner itself: reasons raised each way (class, keyword, f-string) are found."""
    memory = {r.reason: r for r in raised["memory"]}
    assert memory["ETAG_MISMATCH"].status == "ABORTED"  # class default
    assert memory["INVALID_LIMIT"].status == "INVALID_ARGUMENT"  # InvalidArgument.field(..., reason=)
    assert "RETRIEVAL_INVALID_ARGUMENT" in memory  # f-string over a table
    assert "EMBEDDING_MODEL_MISMATCH" in {r.reason for r in raised["retrieval"]}
    assert "API_KEY_NOT_FOUND" in {r.reason for r in raised["admin"]}
    assert "API_KEY_NOT_FOUND" not in memory


def test_the_base_error_is_never_raised_itself() -> None:
    """StrataError's own default reason is left out of the catalogues: nothing constructs it directly."""
    direct = [
        f"{path}:{node.lineno}"
        for path in SERVICES.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and ast.unparse(node.func) in {"StrataError", "errors.StrataError"}
    ]
    assert direct == []
    assert errors.StrataError.default_reason == "STRATA_ERROR"
