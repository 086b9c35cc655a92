"""The span API (strata_serving.tracing) is light: the store and the engine can use it without the server.

Opening a span needs only the OpenTelemetry API; grpc and the OpenTelemetry SDK belong to the
server-span code (strata_serving.server_tracing), imported by the interceptors and ``main()`` only.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("grpc", "opentelemetry.sdk")


def _modules_after_import(module: str) -> set[str]:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(ran.stdout))


@pytest.mark.parametrize("module", ["strata_serving.tracing", "strata_memory.store.database"])
def test_span_users_load_neither_grpc_nor_the_sdk(module: str) -> None:
    loaded = _modules_after_import(module)
    assert module in loaded
    assert sorted(m for m in loaded if m.split(".")[0] == "grpc" or m.startswith("opentelemetry.sdk")) == []


def test_the_server_span_code_is_where_grpc_and_the_sdk_come_in() -> None:
    loaded = _modules_after_import("strata_serving.server_tracing")
    assert {"grpc", "opentelemetry.sdk.trace"} <= loaded
