"""The memory domain loads only the standard library, merge3 and the error vocabulary when imported.

The pure-core contract (pyproject's import-linter section) checks the imports written in the source;
this checks what importing actually loads. strata-memory depends on strata-serving (its servicers
need grpc), but the domain's only use of it is ``strata_serving.errors``, which loads nothing else:
not grpc, OpenTelemetry, protobuf, SQLAlchemy or pydantic.
"""

from __future__ import annotations

import json
import subprocess
import sys

ALLOWED_THIRD_PARTY = {"merge3"}

IMPORT_EVERY_DOMAIN_MODULE = """
import importlib, json, pkgutil, sys
before = set(sys.modules)  # the interpreter's start-up modules (site, .pth hooks)
import strata_memory.domain as domain
names = [m.name for m in pkgutil.walk_packages(domain.__path__, "strata_memory.domain.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"imported": names, "loaded": sorted(set(sys.modules) - before)}))
"""


def test_importing_the_domain_loads_only_the_standard_library_merge3_and_the_errors() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_DOMAIN_MODULE], capture_output=True, text=True, check=True
    )
    result = json.loads(ran.stdout)
    assert len(result["imported"]) > 20  # every module of the package, not just its __init__
    tops = {name.split(".")[0] for name in result["loaded"]}
    stdlib = set(sys.stdlib_module_names) | {t for t in tops if t.startswith("_sysconfigdata")}
    third_party = tops - stdlib - {"strata_memory", "strata_serving"}
    assert sorted(third_party - ALLOWED_THIRD_PARTY) == []
    serving = {name for name in result["loaded"] if name.split(".")[0] == "strata_serving"}
    assert serving == {"strata_serving", "strata_serving.errors"}
    memory = {name for name in result["loaded"] if name.split(".")[0] == "strata_memory"}
    assert {name.split(".")[1] for name in memory if "." in name} <= {"domain", "limits"}
